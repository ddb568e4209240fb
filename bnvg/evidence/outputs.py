"""How a run's outputs compare with the committed ones: the log, the figures, the drift.

    python -m bnvg.evidence.outputs OUT

OUT is a folder a claims run wrote into (`--results-log OUT/results.log --diagrams
OUT/diagrams --record OUT/record.json`, as `bnvg.runner` and the nox sessions do). It says
whether results.log and each of the 15 figures are byte-identical to the committed ones, and
which readings moved, by name (from the run's record). The Python matrix (noxfile.py) ends
each session with it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from bnvg.evidence.record import Record
from bnvg.places import Places

ROOT = Path(__file__).resolve().parent.parent.parent


def differing_lines(here: str, there: str) -> list[int]:
    """The numbers (from 1) of the lines where two logs differ, a line only one has included."""
    a, b = here.splitlines(), there.splitlines()
    return [n for n in range(1, max(len(a), len(b)) + 1) if a[n - 1 : n] != b[n - 1 : n]]


def differing_figures(diagrams: Path, committed: Places) -> list[str]:
    """The committed figures that `diagrams` lacks or holds with other bytes."""
    return [
        p.name
        for p in sorted(committed.diagrams.glob("*.png"))
        if not (diagrams / p.name).is_file() or (diagrams / p.name).read_bytes() != p.read_bytes()
    ]


def _line(lines: list[str], number: int) -> str:
    return repr(lines[number - 1]) if number <= len(lines) else "(no such line)"


def compare(outputs: Path, committed: Places) -> list[str]:
    said: list[str] = []
    log, reference = outputs / "results.log", committed.results_log
    if log.read_bytes() == reference.read_bytes():
        said.append("results.log: byte-identical to the committed log")
    else:
        here, there = log.read_text(), reference.read_text()
        moved = differing_lines(here, there)
        said.append(f"results.log: differs from the committed log on lines {moved}")
        ours, theirs = here.splitlines(), there.splitlines()
        said += [f"  line {n}: committed {_line(theirs, n)}, here {_line(ours, n)}" for n in moved]
    total = len(list(committed.diagrams.glob("*.png")))
    differ = differing_figures(outputs / "diagrams", committed)
    said.append(
        f"figures: {total - len(differ)} of {total} byte-identical to the committed ones"
        + (f"; differ: {', '.join(differ)}" if differ else "")
    )
    record_path = outputs / "record.json"
    if record_path.exists():
        record = Record.load(record_path)
        drift = [d for c in record.claims.values() for d in c.drift]
        said.append(f"platform: {', '.join(f'{k} {v}' for k, v in record.platform.items())}")
        said.append(f"drifted readings: {len(drift)}")
        said += [f"  {d}" for d in drift]
    return said


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    for line in compare(Path(argv[0]), Places(ROOT)):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
