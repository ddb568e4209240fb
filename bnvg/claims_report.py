"""The claims report: what an author reads instead of the terminal (`--claims-report PATH`).

One row per claim: its test id, section, the sentence it verifies, the numbers computed here
and those its snapshot stores, whether they are robust or fragile, its status (verified,
drifted, failed, not run) and the log lines it owns; then every diagram, linked.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from bnvg.fragility import Fragility, tokens

if TYPE_CHECKING:
    from bnvg.results_log import ClaimOutcome

STATUSES = ("verified", "drifted", "failed", "not run")


def _section(nodeid: str) -> str:
    match = re.search(r"test_(s\d)_", nodeid)
    return match.group(1).upper() if match else ""


def _numbers(lines: Mapping[str, str], keys: tuple[str, ...]) -> str:
    parts = [", ".join(tokens(lines[k])) for k in keys if k in lines and tokens(lines[k])]
    return "; ".join(parts)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(
    claims: Mapping[str, ClaimOutcome],
    fragility: Fragility,
    line_number: Callable[[str], int],
    diagrams: Path,
    report_path: Path,
    log_summary: str,
) -> str:
    counts = {s: sum(1 for c in claims.values() if c.status == s) for s in STATUSES}
    fragile = fragility.fragile_keys()
    out = [
        "# Claims report",
        "",
        f"{len(claims)} claims: " + ", ".join(f"{n} {s}" for s, n in counts.items()) + ".",
        "",
        f"results.log: {log_summary}" if log_summary else "results.log: not written",
        "",
        "| claim | section | verifies | here | snapshot | numbers | status | log lines |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for nodeid, claim in sorted(claims.items()):  # by module, S0 to S9, whatever ran first
        keys = claim.owns
        here = _numbers(claim.lines, keys)
        stored = _numbers(claim.stored, keys)
        snapshot = "same" if claim.stored and stored == here else stored
        kind = "fragile" if any(k in fragile for k in keys) else ("robust" if keys else "")
        lines = ", ".join(str(line_number(k)) for k in keys)
        status = claim.status + (": " + "; ".join(claim.drift) if claim.drift else "")
        out.append(
            f"| `{_cell(nodeid)}` | {_section(nodeid)} | {_cell(claim.sentence)} | {here} "
            f"| {snapshot} | {kind} | {_cell(status)} | {lines} |"
        )
    out += ["", "## Diagrams", ""]
    for png in sorted(diagrams.glob("*.png")):
        link = os.path.relpath(png, report_path.parent)
        out.append(f"- [{png.name}]({link})")
    return "\n".join(out) + "\n"
