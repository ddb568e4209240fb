"""Running the claims in a subprocess, and reading back what happened.

    run = run_claims(["-k", "eval_bug"], cwd=project, outputs=tmp_path)
    run.record.trained          # ("batch norm",)

    python -m claimlog.runner OUT   # how the outputs in OUT compare with the committed ones

The one way the sweep, the benchmark and the project's own tests start `pytest claims/` as a
user would: a fresh process, the log, figures and session record written into `outputs`
(never the project's own captures/ or diagrams/), and xdist variables of the calling
process left behind. What the session did is read from its record (`claimlog.evidence.record`),
never from its terminal output.

`python -m claimlog.runner OUT` says, of a folder a claims run wrote into (`--results-log
OUT/results.log --diagrams OUT/diagrams --record OUT/record.json`), whether results.log and
each of the 15 figures are byte-identical to the committed ones, and which readings drifted,
by name (from the run's record); it exits 0 only if nothing differs, 1 if anything does
(saying what), 2 on a usage error. `--other-torch-build` allows one difference, and only
it: the log's versions line naming another build of the committed torch release. The Python
matrix (noxfile.py) ends each session with it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from claimlog.declaration import declared_in
from claimlog.evidence.record import Record
from claimlog.places import Places, differing_figures, differing_lines, extra_figures

# What a claims session needs of a project, beside the installed engine and workshop: its
# pytest configuration names the workshop (a conftest.py, when it has one, adds to it).
PROJECT_FILES = ("claims", "snapshots", "conftest.py", "pyproject.toml")
# The rest of the record: the committed log and figures, which a normal run compares with.
RECORD_FILES = ("captures", "diagrams")


def scratch_copy(root: Path, into: Path, record: bool = False) -> Path:
    """A copy of the project at `root` that a session may change (its snapshots updated, its
    log written) without touching the project: its claims, snapshots and configuration, and
    with `record` the committed log and figures too."""
    for name in (*PROJECT_FILES, *(RECORD_FILES if record else ())):
        source = root / name
        if not source.exists() and name == "conftest.py":
            continue
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


def claims_command(
    args: Sequence[str], *, outputs: Path, python: str, cache_dir: Path | None
) -> list[str]:
    """The command `run_claims` runs (see there), for a caller that starts it otherwise: in
    the background, say, to read its outputs later."""
    return [
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
    done = subprocess.run(
        claims_command(args, outputs=outputs, python=python, cache_dir=cache_dir),
        cwd=cwd,
        env=environment(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return ClaimsRun(done.returncode, done.stdout, done.stderr, outputs)


def run_claims_here(
    args: Sequence[str], *, root: Path, outputs: Path, cache_dir: Path | None
) -> Record:
    """`pytest claims/ ARGS` in this process, in the project at `root`, its files written to
    `outputs`: its record. For a process that runs many sessions one after the other (a
    sweep's worker) and keeps torch and the claims' imports between them; the environment
    must already hold the kernels it is to compute with (torch and numpy read them once).
    What the session prints is kept from the caller's: the record says what it did."""
    code, said = pytest_here(args, root=root, outputs=outputs, cache_dir=cache_dir)
    record = outputs / "record.json"
    if not record.exists() or code not in (0, 1):
        raise RuntimeError(f"the claims stopped with exit status {code}:\n{said[-3000:]}")
    return Record.load(record)


def pytest_here(
    args: Sequence[str],
    *,
    root: Path,
    outputs: Path,
    cache_dir: Path | None,
    plugins: Sequence[object] = (),
) -> tuple[int, str]:
    """`pytest claims/ ARGS` in this process, as `run_claims_here` runs it (with `plugins`
    registered besides): its exit status, and what it printed."""
    import pytest

    command = claims_command(args, outputs=outputs, python="", cache_dir=cache_dir)[3:]
    command = [str(root / "claims"), *command[1:]]
    command += ["--rootdir", str(root), "-c", str(root / "pyproject.toml"), "--capture=sys"]
    said = io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        code = pytest.main(command, plugins=list(plugins))
    return int(code), said.getvalue()


def selected(keys: Mapping[str, str], expression: str | None) -> dict[str, str]:
    """The claims of `keys` ("claims/test_x.py::test_y") that `-k expression` picks, matched
    as pytest matches -k: each word against the claim's module and function names,
    case-insensitively (pytest's own grammar: and, or, not, parentheses)."""
    if not expression:
        return dict(keys)
    from _pytest.mark.expression import Expression

    compiled = Expression.compile(expression)

    def picks(claim: str) -> bool:
        names = [part.lower() for part in claim.replace("/", "::").split("::")]

        def matches(word: str, /, **_: str | int | bool | None) -> bool:
            return any(word.lower() in name for name in names)

        return compiled.evaluate(matches)

    return {claim: key for claim, key in keys.items() if picks(claim)}


# -- how a run's outputs compare with the committed ones (python -m claimlog.runner OUT) --------
# Exit statuses of `python -m claimlog.runner`: a caller (noxfile.py, CI) relies on them.
SAME, DIFFERENT, USAGE = 0, 1, 2


def _torch_of(versions: str) -> tuple[str, str] | None:
    """(release, rest of the line) of a log's versions line, "torch 2.13.0+cpu | numpy ...\n"
    giving ("2.13.0", "| numpy ...\n"); None if the line is not one."""
    if not versions.startswith("torch "):
        return None
    torch, _, rest = versions.removeprefix("torch ").partition(" ")
    return torch.split("+")[0], rest


def only_the_torch_build_differs(here: str, committed: str, number: int | None) -> bool:
    """Whether two logs are the same, byte for byte, once the versions line of `here` (line
    `number`, where the log has one) is replaced by the committed one, and those two lines
    differ only in the build of one torch release ("torch 2.13.0+cu130 | ..." against
    "torch 2.13.0+cpu | ..."): the line names the torch that computed the log, and says
    nothing of the numbers another build computes."""
    ours, theirs = here.splitlines(keepends=True), committed.splitlines(keepends=True)
    if number is None or min(len(ours), len(theirs)) < number:
        return False
    n = number - 1
    release = _torch_of(ours[n])
    if ours[n] == theirs[n] or release is None or release != _torch_of(theirs[n]):
        return False
    return [*ours[:n], theirs[n], *ours[n + 1 :]] == theirs


@dataclass(frozen=True)
class Comparison:
    """How a run's outputs compare with the committed ones: what to print, line by line, and
    what differs, one phrase each (none: the outputs are the committed ones)."""

    said: list[str]
    differs: list[str]


def _compare_log(log: Path, reference: Path, other_build: bool, versions: int | None) -> Comparison:
    """results.log against the committed log, byte for byte; with `other_build`, the
    versions line may name another build of the committed torch release, and only it."""
    if log.read_bytes() == reference.read_bytes():
        return Comparison(["results.log: byte-identical to the committed log"], [])
    # Decoded from bytes, not read_text(), which would turn "\r\n" into "\n" unseen.
    here = log.read_bytes().decode(errors="replace")
    there = reference.read_bytes().decode(errors="replace")
    ours, theirs = here.splitlines(), there.splitlines()
    if other_build and only_the_torch_build_differs(here, there, versions):
        n = versions or 0
        allowed = (
            f"results.log: byte-identical to the committed log but line {n}, which names "
            f"another build of its torch (committed {_line(theirs, n)}, here {_line(ours, n)}), "
            "as --other-torch-build allows"
        )
        return Comparison([allowed], [])
    moved = differing_lines(here, there)
    if not moved:  # every line's text alike: the bytes differ in line endings
        endings = "results.log: differs from the committed log in its line endings only"
        return Comparison([endings], ["results.log in its line endings"])
    said = [f"results.log: differs from the committed log on lines {moved}"]
    said += [f"  line {n}: committed {_line(theirs, n)}, here {_line(ours, n)}" for n in moved]
    return Comparison(said, [f"results.log on lines {moved}"])


def _line(lines: list[str], number: int) -> str:
    return repr(lines[number - 1]) if number <= len(lines) else "(no such line)"


def _compare_figures(diagrams: Path, committed: Places) -> Comparison:
    """Every committed figure against the one drawn, byte for byte; and no figure drawn that
    was never committed."""
    total = len(list(committed.diagrams.glob("*.png")))
    differ = differing_figures(diagrams, committed)
    extra = extra_figures(diagrams, committed)
    said = [
        f"figures: {total - len(differ)} of {total} byte-identical to the committed ones"
        + (f"; differ: {', '.join(differ)}" if differ else "")
        + (f"; never committed: {', '.join(extra)}" if extra else "")
    ]
    differs = [f"figures {', '.join(differ)}"] if differ else []
    differs += [f"figures never committed {', '.join(extra)}"] if extra else []
    return Comparison(said, differs)


def _compare_readings(record_path: Path) -> Comparison:
    """The readings that drifted from the snapshots, as the run's record names them: a
    drifted reading is a number that is not the committed one, even where the log prints it
    alike. Without a record (no --record), the readings are not compared, and it says so."""
    if not record_path.exists():
        return Comparison([f"readings: not compared ({record_path.name} was not written)"], [])
    record = Record.load(record_path)
    drift = [d for c in record.claims.values() for d in c.drift]
    said = [f"platform: {', '.join(f'{k} {v}' for k, v in record.platform.items())}"]
    said.append(f"drifted readings: {len(drift)}")
    said += [f"  {d}" for d in drift]
    return Comparison(said, [f"{len(drift)} drifted readings"] if drift else [])


def compare(
    outputs: Path,
    committed: Places,
    *,
    other_torch_build: bool = False,
    versions: int | None = None,
) -> Comparison:
    """How the outputs a claims run wrote into `outputs` compare with the `committed` ones:
    the log, the figures, and (from the run's record) the readings."""
    parts = (
        _compare_log(outputs / "results.log", committed.results_log, other_torch_build, versions),
        _compare_figures(outputs / "diagrams", committed),
        _compare_readings(outputs / "record.json"),
    )
    return Comparison(
        [line for part in parts for line in part.said],
        [what for part in parts for what in part.differs],
    )


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m claimlog.runner",
        description="How the outputs of a claims run compare with the committed ones; exits "
        f"{SAME} if they are the same, {DIFFERENT} if anything differs, {USAGE} on a usage error.",
    )
    parser.add_argument(
        "outputs",
        metavar="OUT",
        type=Path,
        help="the folder a claims session wrote with --results-log=OUT/results.log "
        "--diagrams=OUT/diagrams (and --record=OUT/record.json)",
    )
    parser.add_argument(
        "--other-torch-build",
        action="store_true",
        help="the run's torch is another build of the committed log's release (the CUDA "
        "wheel beside the committed CPU one): the log's versions line may name it; every "
        "other byte must still be the committed one",
    )
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    """Prints the comparison; the exit status says whether the outputs differ, so that a
    caller cannot pass over a difference it did not read."""
    try:
        args = _arguments(argv)
    except SystemExit as stop:  # argparse's own exit: 2 (USAGE) on a bad command line, 0 on -h
        return int(stop.code or 0)
    outputs: Path = args.outputs
    if not (outputs / "results.log").is_file():
        print(
            f"{outputs / 'results.log'} does not exist: OUT is the folder a claims session wrote "
            "with --results-log=OUT/results.log --diagrams=OUT/diagrams",
            file=sys.stderr,
        )
        return USAGE
    project = Path.cwd()  # the workshop whose committed outputs these are compared with
    try:
        versions = declared_in(project).log().versions_line()
        comparison = compare(
            outputs, Places(project), other_torch_build=args.other_torch_build, versions=versions
        )
    except ValueError as error:  # no workshop here, or a record that cannot be read
        print(error, file=sys.stderr)
        return USAGE
    for line in comparison.said:
        print(line)
    if comparison.differs:
        print(
            f"the outputs in {outputs} differ from the committed ones: "
            + "; ".join(comparison.differs),
            file=sys.stderr,
        )
        return DIFFERENT
    print(f"the outputs in {outputs} are the committed ones")
    return SAME


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
