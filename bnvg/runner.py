"""Running the claims in a subprocess, and reading back what happened.

    run = run_claims(["-k", "eval_bug"], cwd=project, outputs=tmp_path)
    run.record.trained          # ("batch norm",)

    python -m bnvg.runner OUT   # how the outputs in OUT compare with the committed ones

The one way the sweep, the benchmark and the project's own tests start `pytest claims/` as a
user would: a fresh process, the log, figures and session record written into `outputs`
(never the project's own captures/ or diagrams/), and xdist variables of the calling
process left behind. What the session did is read from its record (`bnvg.evidence.record`),
never from its terminal output.

`python -m bnvg.runner OUT` says, of a folder a claims run wrote into (`--results-log
OUT/results.log --diagrams OUT/diagrams --record OUT/record.json`), whether results.log and
each of the 15 figures are byte-identical to the committed ones, and which readings moved, by
name (from the run's record). The Python matrix (noxfile.py) ends each session with it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bnvg.evidence.record import Record
from bnvg.places import Places

# What a claims session needs of a project, beside the installed bnvg.
PROJECT_FILES = ("claims", "snapshots", "conftest.py", "pyproject.toml")


def scratch_copy(root: Path, into: Path) -> Path:
    """A copy of the project at `root` that a session may change (its snapshots updated, its
    log written) without touching the project: its claims, snapshots and configuration."""
    for name in PROJECT_FILES:
        source = root / name
        if source.is_dir():
            shutil.copytree(source, into / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            into.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, into / name)
    return into


@dataclass(frozen=True)
class ClaimsRun:
    """One finished `pytest claims/` process."""

    returncode: int
    stdout: str
    stderr: str
    outputs: Path

    @property
    def results_log(self) -> Path:
        return self.outputs / "results.log"

    @property
    def diagrams(self) -> Path:
        return self.outputs / "diagrams"

    @property
    def record_path(self) -> Path:
        return self.outputs / "record.json"

    @property
    def record(self) -> Record:
        return Record.load(self.record_path)

    def tail(self, chars: int = 3000) -> str:
        """The end of what the process printed, for an assertion's message."""
        return self.stdout[-chars:] + self.stderr[-chars:]


def environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without pytest-xdist's worker variables (a run started
    from an xdist worker would otherwise believe it is one) and without PYTEST_ADDOPTS (the
    caller says what the run does), plus `extra`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("PYTEST_XDIST") and k != "PYTEST_ADDOPTS"
    }
    env.update(extra or {})
    return env


def run_claims(
    args: Sequence[str] = (),
    *,
    cwd: Path,
    outputs: Path,
    env: Mapping[str, str] | None = None,
    python: str = sys.executable,
    timeout: float = 1800,
    cache_dir: Path | None = None,
) -> ClaimsRun:
    """`pytest claims/ ARGS` in the project at `cwd`, its files written to `outputs`.

    Without `cache_dir` the run uses no pytest cache at all (`-p no:cacheprovider`): it trains
    every network and draws every figure. With it, pytest's cache lives there (never in the
    project's own .pytest_cache), and a run reuses what an earlier run with the same
    `cache_dir` kept.
    """
    outputs.mkdir(parents=True, exist_ok=True)
    command = [
        python,
        "-m",
        "pytest",
        "claims/",
        *(["-p", "no:cacheprovider"] if cache_dir is None else ["-o", f"cache_dir={cache_dir}"]),
        f"--results-log={outputs / 'results.log'}",
        f"--diagrams={outputs / 'diagrams'}",
        f"--record={outputs / 'record.json'}",
        *args,
    ]
    done = subprocess.run(
        command,
        cwd=cwd,
        env=environment(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return ClaimsRun(done.returncode, done.stdout, done.stderr, outputs)


# -- how a run's outputs compare with the committed ones (python -m bnvg.runner OUT) --------
ROOT = Path(__file__).resolve().parent.parent  # the checkout bnvg is installed from


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
        print("usage: python -m bnvg.runner OUT", file=sys.stderr)
        return 2
    outputs = Path(argv[0])
    if not (outputs / "results.log").is_file():
        print(
            f"{outputs / 'results.log'} does not exist: OUT is the folder a claims session wrote "
            "with --results-log=OUT/results.log --diagrams=OUT/diagrams",
            file=sys.stderr,
        )
        return 2
    for line in compare(outputs, Places(ROOT)):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
