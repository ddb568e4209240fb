"""The commands and outputs the pages show (README.md, docs/*.md), produced by running them.

A page shows a command, a change to a file, or what a command prints, each in a fenced block.
The line just before each such block says who runs it, in an HTML comment (which renders as
nothing):

    <!-- transcript: update -->     a step of the author's session below: an `sh` block is
                                    the command the step runs, a `diff` block the change it
                                    makes, any other block part of what the step printed
    <!-- run by: .ci/run -->        a command another runner runs as written (the file holds
                                    each of its lines)

`python tests/transcripts.py` (what `nox -s docs` runs, and CI with it) clones this checkout
into a scratch folder and plays the author's session there, step by step (`STEPS`), running
each command as the page writes it, in the clone, and checking its exit status; then checks
every output block against what its step printed. In a block, a line `...` stands for any
lines, and `...` inside a line for any text; the block must be found, in order, in the
step's output. A page that shows what no longer happens fails, naming the block and the
step. `tests/test_docs.py` checks, without running anything, that every block is marked and
names a step or a runner that holds it.

The session is the README's: install and run (`first-run`), check the text, change the
recipe, update (which computes the stale evidence first, then fails on a sentence that no
longer holds), reword it, update again (which completes), a second update (which changes
nothing), nbval on the rewritten notebooks, and an edit of one claim's constant brought up to
date by the same command. It takes some minutes, most of them the sweep of the recipe edit.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))

MARK = re.compile(r"^[ \t]*<!-- (transcript|run by): (.+?) -->[ \t]*$")
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<info>[\w-]*)[ \t]*$")


# -- the pages' blocks ------------------------------------------------------------------------
@dataclass(frozen=True)
class Block:
    """One fenced block of a page: its info string ("sh", "diff", "" ...), its text (the
    page's indentation taken off), where it starts, and the mark on the line before it."""

    page: Path
    line: int  # of the opening fence, from 1
    info: str
    text: str
    mark: tuple[str, str] | None  # ("transcript", step) or ("run by", runner)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def shows_a_run(self) -> bool:
        """Whether it shows a command, a change or what a command printed (not code, a
        configuration or a layout, which say what a file holds: a `python`, `toml` or
        `text` block)."""
        return self.info in ("", "sh", "console", "diff")


def blocks(page: Path) -> Iterator[Block]:
    lines = page.read_text().splitlines()
    n = 0
    while n < len(lines):
        opened = FENCE.match(lines[n])
        if not opened:
            n += 1
            continue
        indent, start = opened["indent"], n
        body = []
        n += 1
        while n < len(lines) and lines[n].strip() != "```":
            body.append(lines[n].removeprefix(indent))
            n += 1
        before = MARK.match(lines[start - 1]) if start else None
        mark = (before[1], before[2]) if before else None
        yield Block(page, start + 1, opened["info"], "\n".join(body), mark)
        n += 1


def marked(step: str) -> list[Block]:
    """Every block of the pages marked as the step's."""
    return [b for page in PAGES for b in blocks(page) if b.mark == ("transcript", step)]


# -- matching a block in an output ------------------------------------------------------------
ELIDED = "..."


def pattern(block: str) -> re.Pattern[str]:
    """A block as a pattern over an output: each line a whole line of it, where a line `...`
    is any lines (none included) and `...` inside a line any text; every other character
    stands for itself (trailing spaces apart)."""
    parts = []
    for line in block.splitlines():
        if line.strip() == ELIDED:
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            pieces = line.rstrip().split(ELIDED)
            parts.append(r"[^\n]*?".join(re.escape(piece) for piece in pieces) + r"\n")
    return re.compile(r"(?:^|(?<=\n))" + "".join(parts))


def found_in(block: str, output: str) -> bool:
    """Whether the block is found in the output, in order (see `pattern`)."""
    said = "".join(line.rstrip() + "\n" for line in output.splitlines())
    return pattern(block).search(said) is not None


# -- the author's session ---------------------------------------------------------------------
@dataclass(frozen=True)
class Step:
    """One step of the session: its name (the pages' marks name it), the exit status it must
    end with, at most how long it may take in seconds (None: no bound), and what it runs: the
    `sh` block or the `diff` block a page marks with its name, else the command of the step
    it is `like`, else its own `command` (a step no page shows)."""

    name: str
    says: str  # what it checks, for people
    status: int = 0
    within: float | None = None
    like: str | None = None
    command: str | None = None
    changes_nothing: bool = False  # the clone's files as they were before it, to the byte
    # A step that runs elsewhere than in the clone: a shell command that makes its folder
    # first, the folder (relative to the clone), and two files (each relative to the clone)
    # that must then be the same bytes.
    prepare: str | None = None
    cwd: str = "."
    same: tuple[str, str] | None = None


UPDATE = "update"  # the step whose command every later update runs
SEED = ROOT.parent / "shared" / "seed"  # the workshop script, where CI has it
SCRIPT = "../script/workshop"  # its scratch folder: it writes into ../captures/ from there
STEPS = (
    Step("first-run", "the README's first command, on a fresh clone"),
    Step(
        "script",
        "the workshop script, under the reference kernels: the committed log, byte for byte",
        prepare=f"mkdir -p {SCRIPT} && cp {SEED / 'experiment.py'} {SCRIPT}/",
        cwd=SCRIPT,
        same=("../script/captures/results.log", "captures/results.log"),
    ),
    Step("check-text", "the text's citations checked against the record"),
    Step("edit-recipe", "the recipe edited"),
    Step("check-edited", "a normal run after the edit: what moved fails", 1, like="check-text"),
    Step(UPDATE, "the update computes the stale evidence first, then fails", 1),
    Step(
        "break-a-quote",
        "a quote the new value breaks, put in the text",
        command="sed -i 's/under 0.05 (line 66)/under 0.01 (line 66)/' workshop/s6_training.ipynb",
    ),
    Step("update-breaks", "the update fails naming it, and writes nothing", 1, 120, UPDATE),
    Step("unbreak", "the quote as it was", command="git checkout -- workshop/s6_training.ipynb"),
    Step("reword", "the sentence that no longer holds, reworded"),
    Step("update-completes", "the same command completes", 0, 60, UPDATE),
    Step(
        "keep-notebook",
        "the rewritten notebook set aside, the committed one back",
        command="cp workshop/s6_training.ipynb .. && git checkout -- workshop/s6_training.ipynb",
    ),
    Step("check-old-notebook", "old outputs fail their cells", 1, like="check-text"),
    Step("restore-notebook", "the rewritten notebook", command="cp ../s6_training.ipynb workshop/"),
    Step("update-again", "a second update changes nothing", 0, 60, UPDATE, changes_nothing=True),
    Step("nbval", "nbval on the rewritten notebooks", command=".venv/bin/nox -s nbval"),
    Step("edit-one-claim", "one claim's constant edited"),
    Step("update-one-claim", "only that claim's evidence computed again", 0, 120, UPDATE),
    Step("sweep", "the sweep's own command: the evidence is this checkout's, nothing to do"),
)


@dataclass
class Played:
    """What the session did: each step's output (each line with when it came, in seconds from
    the step's start) and seconds, and what went wrong."""

    outputs: dict[str, str] = field(default_factory=dict)
    timed: dict[str, list[tuple[float, str]]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Streamed:
    returncode: int
    lines: list[tuple[float, str]]


def _streamed(command: str, cwd: Path, env: dict[str, str]) -> Streamed:
    """A shell command's output, stdout and stderr as one, each line with when it came."""
    started = time.monotonic()
    process = subprocess.Popen(
        ["bash", "-c", command],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    lines = [(time.monotonic() - started, line) for line in process.stdout]
    return Streamed(process.wait(), lines)


LEFT = re.compile(r"about (?:(\d+) min )?(\d+) s left")


def time_left(lines: list[tuple[float, str]]) -> list[str]:
    """How honest the sweep's time left was, where a step ran one: each estimate against the
    real time left at that moment, and the worst from the first tenth of the sweep's wall time
    to its last tenth (where seconds are left, a second off is a large share)."""
    began = next((t for t, line in lines if re.match(r"\d+ of \d+ jobs to run", line)), None)
    ended = next((t for t, line in lines if "; done in " in line), None)
    if began is None or ended is None or ended <= began:
        return []
    whole = ended - began
    said, errors = [], []
    for t, line in lines:
        found = LEFT.search(line)
        if found and t < ended:
            estimate, real = int(found[1] or 0) * 60 + int(found[2]), ended - t
            error = (estimate - real) / real
            said.append(
                f"    {(t - began) / whole:4.0%} in: said {estimate} s, {real:.0f} s left ({error:+.0%})"
            )
            if whole / 10 <= t - began <= whole * 9 / 10:
                errors.append(error)
    if not errors:
        return [f"the sweep took {whole:.0f} s; no estimate between its first and last tenth"]
    worst = max(errors, key=abs)
    return [
        f"the sweep took {whole:.0f} s; from its first tenth to its last, {len(errors)} estimates "
        f"of the time left, each within {abs(worst):.0%} of the real time left "
        f"(from {min(errors):+.0%} to {max(errors):+.0%}):",
        *said,
    ]


def command_of(step: Step) -> tuple[str, str]:
    """("sh", command) or ("diff", patch): what the step does, as a page shows it."""
    shown = [b for b in marked(step.name) if b.info in ("sh", "diff")]
    if len(shown) > 1:
        raise SystemExit(f"{step.name}: {len(shown)} blocks show what it runs")
    if shown:
        return shown[0].info, shown[0].text
    if step.like is not None:
        return command_of(next(s for s in STEPS if s.name == step.like))
    if step.command is None:
        raise SystemExit(f"no page shows what the step {step.name!r} runs (an sh or diff block)")
    return "sh", step.command


def environment() -> dict[str, str]:
    """A learner's environment: no pytest options of the caller's (CI's --recompute), no
    xdist worker, Python keeping its bytecode as a laptop's does."""
    drop = ("PYTEST_ADDOPTS", "PYTHONDONTWRITEBYTECODE", "VIRTUAL_ENV", "PYTHONPATH")
    env = {k: v for k, v in os.environ.items() if k not in drop and "PYTEST_XDIST" not in k}
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if ".nox" not in p and ".venv" not in p
    )
    return env


def play(clone: Path, say: bool = True) -> Played:
    """Run every step in `clone`, in order; stop at the first whose status is not its own."""
    played = Played()
    env = environment()
    for step in STEPS:
        kind, what = command_of(step)
        before = _tree(clone)
        started = time.monotonic()
        if kind == "diff":
            done = subprocess.run(
                ["git", "apply", "--unidiff-zero", "-"],
                cwd=clone,
                input=what + "\n",
                capture_output=True,
                text=True,
            )
            output = done.stdout + done.stderr
        else:
            if step.prepare is not None:
                subprocess.run(["bash", "-c", step.prepare], cwd=clone, env=env, check=True)
            # The clone's environment first on the PATH, as an activated venv: a page's bare
            # `python3` is the one the README installed.
            path = os.pathsep.join([str(clone / ".venv" / "bin"), env["PATH"]])
            done = _streamed(
                what,
                cwd=(clone / step.cwd).resolve(),
                env={**env, "PATH": path} if step.cwd != "." else env,
            )
            output = "".join(line for _, line in done.lines)
            played.timed[step.name] = done.lines
        took = time.monotonic() - started
        played.outputs[step.name], played.seconds[step.name] = output, took
        if say:
            print(f"{step.name}: exit {done.returncode} in {took:.1f} s ({step.says})")
            for line in time_left(played.timed.get(step.name, [])):
                print(f"  {line}")
        if done.returncode != step.status:
            played.problems.append(
                f"{step.name} ({what.splitlines()[0]}) exited {done.returncode}, not "
                f"{step.status}:\n{output[-3000:]}"
            )
            return played
        if step.within is not None and took > step.within:
            played.problems.append(f"{step.name} took {took:.0f} s, more than {step.within:.0f}")
        if step.changes_nothing and _tree(clone) != before:
            played.problems.append(f"{step.name} changed the clone: {_tree(clone)}")
        if step.same is not None:
            one, other = ((clone / name).resolve() for name in step.same)
            if one.read_bytes() != other.read_bytes():
                played.problems.append(f"{step.name}: {one} is not {other}, byte for byte")
    return played


def _tree(clone: Path) -> str:
    """What git sees of the clone's files: their status and their diff."""
    said = [
        subprocess.run(["git", *args], cwd=clone, capture_output=True, text=True).stdout
        for args in (["status", "--porcelain"], ["diff"])
    ]
    return "\n".join(said)


def check(played: Played) -> list[str]:
    """Each output block against what its step printed."""
    problems = []
    for step in STEPS:
        for block in marked(step.name):
            if block.info in ("sh", "diff"):
                continue
            output = played.outputs.get(step.name)
            if output is None:
                problems.append(f"{block.where}: the step {step.name!r} did not run")
            elif not found_in(block.text, output):
                problems.append(
                    f"{block.where}: not what the step {step.name!r} printed now; it printed:\n"
                    + output[-6000:]
                )
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--keep", action="store_true", help="keep the scratch clone, and say where it is"
    )
    parser.add_argument(
        "--outputs",
        type=Path,
        metavar="FILE",
        help="also write what each step printed into FILE (JSON), to check the pages again",
    )
    parser.add_argument(
        "--check-against",
        type=Path,
        metavar="FILE",
        help="run nothing: check the pages' output blocks against what an earlier session "
        "printed (its --outputs FILE), as an author rewording a page does",
    )
    args = parser.parse_args(argv)
    steps = {s.name for s in STEPS}
    unknown = [
        f"{b.where}: {b.mark[1]!r}"
        for page in PAGES
        for b in blocks(page)
        if b.mark and b.mark[0] == "transcript" and b.mark[1] not in steps
    ]
    if unknown:
        print("blocks name no step of the session:\n  " + "\n  ".join(unknown))
        return 1
    if args.check_against is not None:
        played = Played(outputs=json.loads(args.check_against.read_text()))
        problems = check(played)
    else:
        folder = Path(tempfile.mkdtemp(prefix="bnvg-transcripts-"))
        clone = folder / "bnvg"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        try:
            played = play(clone)
            problems = played.problems + check(played)
        finally:
            if args.keep:
                print(f"the clone: {clone}")
            else:
                shutil.rmtree(folder, ignore_errors=True)
        if args.outputs is not None:
            args.outputs.write_text(json.dumps(played.outputs, indent=1))
    for problem in problems:
        print(problem, file=sys.stderr)
    print(
        "every command of the pages ran as they show it, and every output is what it printed"
        if not problems
        else f"{len(problems)} problems"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
