"""captures/results.log, assembled from the claims that passed.

Each claim declares the log lines it owns (`@pytest.mark.log_lines("S2 max slope", ...)`) and
hands them over once verified (the `quoted` fixture). The controller lays them out as the
workshop script does (`bnvg.log.layout`), so every line keeps the number the text cites:

- a line whose claim passed holds the verified text;
- a line whose claim failed, or that no claim filled, holds a `[not verified: ...]` marker;
- a run that left lines unfilled (-k, -m, -x, an interrupt) never replaces a complete log;
- the file is replaced atomically, so an interrupted write leaves the previous log whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bnvg.evidence.citations import CitedLine
from bnvg.files import atomic_write, relative
from bnvg.log.layout import fixed_lines, layout
from bnvg.plugin.outcomes import ClaimOutcome

NOT_VERIFIED = "[not verified"


@dataclass(frozen=True)
class LogAssembly:
    """The lines of one session's log, what each says, and how complete they are."""

    text: str
    lines: Mapping[int, CitedLine]
    verified: int
    failed: int
    missing: int

    @property
    def complete(self) -> bool:
        return self.failed == 0 and self.missing == 0

    @property
    def n_lines(self) -> int:
        return len(self.lines)


def assemble(claims: Mapping[str, ClaimOutcome]) -> LogAssembly:
    verified = {key: line for c in claims.values() if c.passed for key, line in c.lines.items()}
    failed_by = {key: nodeid for nodeid, c in claims.items() if c.failed for key in c.owns}
    fixed = fixed_lines()
    out: dict[int, CitedLine] = {}
    counts = {"verified": 0, "failed": 0, "missing": 0}
    for n, line in enumerate(layout(), start=1):
        if n in fixed:
            f = fixed[n]
            out[n] = CitedLine(n, f.text, f.readings, f.names)
            continue
        key = str(line.key)
        if key in verified:
            v = verified[key]
            out[n] = CitedLine(n, v.text, v.readings, v.names)
            counts["verified"] += 1
        elif key in failed_by:
            text = f"  {NOT_VERIFIED}: {key} -- {failed_by[key]} failed]"
            out[n] = CitedLine(n, text, verified=False)
            counts["failed"] += 1
        else:
            out[n] = CitedLine(n, f"  {NOT_VERIFIED}: {key} -- no claim ran]", verified=False)
            counts["missing"] += 1
    text = "".join(f"{line.text}\n" for line in out.values())
    return LogAssembly(text=text, lines=out, **counts)


def is_complete_log(path: Path) -> bool:
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError):
        return False
    return NOT_VERIFIED not in text and len(text.splitlines()) == len(layout())


def write(path: Path, log: LogAssembly, n_claims: int, rootdir: Path) -> str:
    """Write the log unless a partial run would replace a complete one; say what happened."""
    shown = relative(path, rootdir)
    if log.missing and is_complete_log(path):
        return (
            f"kept {shown}: this run filled {log.verified} of "
            f"{log.verified + log.failed + log.missing} claim lines, and a partial log "
            "never replaces a complete one (run `pytest claims/` to rewrite it)"
        )
    atomic_write(path, log.text)
    state = (
        "complete"
        if log.complete
        else f"incomplete: {log.failed} lines failed, {log.missing} not run"
    )
    return f"wrote {shown}: {log.verified} verified lines from {n_claims} passing claims ({state})"
