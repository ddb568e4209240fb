"""The sweep: which numbers of the log travel between machines (see bnvg.fragility).

    .venv/bin/pytest sweep/

Each test runs the whole claims suite in a subprocess, in a scratch copy of the project, under
one variant: a torch CPU capability (ATEN_CPU_CAPABILITY) and thread count, or another
minibatch-sampler seed. pytest-xdist runs the variants side by side. When every variant has
run, the controller compares their logs with the reference variant's and with the published
log, and writes snapshots/fragility.json (read by the claims) and snapshots/fragility.md.
A partial sweep (-k) writes nothing.
"""

from __future__ import annotations

import json
import shutil

import pytest
from variants import PUBLISHED, ROOT, SWEEP_DIR, Variant, reference, variants


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        shutil.rmtree(SWEEP_DIR, ignore_errors=True)
        SWEEP_DIR.mkdir(parents=True)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if hasattr(session.config, "workerinput"):
        return
    all_variants = variants()
    if not all(v.log.exists() for v in all_variants):
        return  # a partial sweep: leave the committed table alone
    write_table(all_variants)


def write_table(all_variants: list[Variant]) -> None:
    from bnvg.atomic import atomic_write
    from bnvg.fragility import TABLE_JSON, TABLE_MD, build_table, render_markdown
    from bnvg.layout import line_number, slot_keys

    logs = {v.name: v.log.read_text().splitlines() for v in all_variants}
    published = PUBLISHED.read_text().splitlines() if PUBLISHED.exists() else None
    table = build_table(
        {key: line_number(key) for key in slot_keys()},
        reference().name,
        {v.name: logs[v.name] for v in all_variants if v.group == "rounding"},
        {v.name: logs[v.name] for v in all_variants if v.group == "seeds"},
        published,
    )
    described = {
        v.name: (
            f"ATEN_CPU_CAPABILITY={v.capability}, {v.threads} thread(s)"
            + (f", sampler seed {v.sampler_seed}" if v.sampler_seed is not None else "")
        )
        for v in all_variants
    }
    if published is not None:
        described["published"] = "the published log (torch 2.12.1)"
    document = {"reference": reference().name, "variants": described, "lines": table}
    snapshots = ROOT / "snapshots"
    atomic_write(snapshots / TABLE_JSON, json.dumps(document, indent=1) + "\n")
    atomic_write(snapshots / TABLE_MD, render_markdown(table, described))
