"""The sweep: which numbers of the log travel between machines (see bnvg.evidence.fragility).

    .venv/bin/pytest sweep/

Each test runs the whole claims suite in a subprocess, in a scratch copy of the project, under
one variant: a torch CPU capability (ATEN_CPU_CAPABILITY) and thread count, or another
minibatch-sampler seed, and keeps its session record. pytest-xdist runs the variants side by
side. When every variant has run, the controller merges the records, with the published log,
into snapshots/evidence/fragility.json (read by the claims) and fragility.md (for people).
A partial sweep (-k) writes nothing.
"""

from __future__ import annotations

import json
import shutil

import pytest
from variants import PROJECT, SWEEP_DIR, Variant, reference, variants


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        shutil.rmtree(SWEEP_DIR, ignore_errors=True)
        SWEEP_DIR.mkdir(parents=True)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if hasattr(session.config, "workerinput"):
        return
    all_variants = variants()
    if not all(v.record.exists() for v in all_variants):
        return  # a partial sweep: leave the committed table alone
    write_table(all_variants)


def write_table(all_variants: list[Variant]) -> None:
    from bnvg.evidence import fragility_report
    from bnvg.evidence.fragility import build_document, from_document
    from bnvg.evidence.record import Record
    from bnvg.files import atomic_write
    from bnvg.log.layout import layout, line_number
    from bnvg.log.published import read_published

    records = {v.name: Record.load(v.record) for v in all_variants}
    ref = reference().name
    readings = {name: dict(r.readings) for name, r in records.items()}
    rounding = [v.name for v in all_variants if v.group == "rounding"]
    published = read_published(PROJECT.published_log) if PROJECT.published_log.exists() else None
    described = {v.name: v.describe() for v in all_variants}
    if published is not None:
        described["published"] = "the published log (torch 2.12.1)"
    keys = {r.key for rs in readings.values() for r in rs.values()}
    document = build_document(
        reference=(ref, readings[ref]),
        rounding={v: readings[v] for v in rounding if v != ref},
        seeds={v.name: readings[v.name] for v in all_variants if v.group == "seeds"},
        published=published,
        line_of={key: line_number(key) for key in keys},
        tables={
            v: {
                name: {c: list(t.columns[c]) for c in t.columns}
                for name, t in records[v].tables.items()
            }
            for v in rounding
        },
        variants=described,
    )
    sections = {
        n: (line.fill().text if line.key else line.template.render({}, {}))
        for n, line in enumerate(layout(), start=1)
        if line.heading == "section"
    }
    atomic_write(PROJECT.fragility_json, json.dumps(document, indent=1, sort_keys=True) + "\n")
    atomic_write(PROJECT.fragility_md, fragility_report.render(from_document(document), sections))
