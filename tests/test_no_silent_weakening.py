"""No silent weakening: whatever a check needs and cannot find stops it loudly, never makes
it check less and pass.

- The reference identity (`snapshots/environment.json`): without it no run could stand as
  the reference and be compared with the snapshots bit for bit, so a missing or damaged file
  stops the session before any claim runs, naming the file and the command that writes it.
- The tests that guard the README's promises (the script's log is the committed one, byte for
  byte; pytest-html's report): locally, what they check against may be absent and they skip,
  saying why; under CI they fail instead, since a green CI must mean every promise was checked.
- The comparison of a run's outputs with the committed ones (`python -m claimlog.runner OUT`):
  it exits 1 when anything differs, saying what, so that a caller cannot pass over it.

The sessions run in this process (pytester) on the S5 claims, which compute without training;
the comparison runs as the noxfile runs it, in a subprocess, on a copy of the committed files.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bnvg.log.layout import log as bnvg_log
from claimlog.evidence.record import ClaimOutcome, Record
from claimlog.platform import SET_BY_CLAIMLOG
from claimlog.runner import DIFFERENT, SAME, USAGE, environment, main

LOG = bnvg_log()  # the workshop's log, as claimlog reads it

ROOT = Path(__file__).resolve().parent.parent
S5 = "test_s5_geometric_decay"
UPDATE = "pytest claims/ --snapshot-update"


# -- the reference identity -----------------------------------------------------------------
@pytest.fixture
def project(s5_project):
    """The S5 claims and their snapshots (`s5_project`), with the reference identity as committed."""
    return s5_project


def environment_json(project):
    return project.path / "snapshots" / "environment.json"


def run(project, *args):
    # importlib: this process may have imported the project's own claim modules, of the same
    # names (the suite runs claims/ too); pytest's default would refuse a second file of one.
    return project.runpytest_inprocess(
        "claims", "-p", "no:randomly", "-p", "no:cacheprovider", "--import-mode=importlib", *args
    )


def test_with_the_reference_identity_the_claims_run_and_pass(project):
    run(project).assert_outcomes(passed=6)


def test_a_missing_environment_json_stops_the_session_naming_the_file_and_the_command(project):
    environment_json(project).unlink()
    result = run(project)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    said = result.stderr.str()
    assert f"ERROR: {environment_json(project)} is missing: it names the reference platform" in said
    assert f"Restore it from git, or write it with `{UPDATE}`" in said
    assert "passed" not in result.stdout.str()  # no claim ran


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("{", "(Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"),
        ("[1, 2]", "(it holds no JSON object)"),
        ('{"torch": "2.13.0+cpu"}', "(it lacks machine, numpy, numpy simd, aten, mkl, onednn, "),
        ("", "(Expecting value: line 1 column 1 (char 0))"),
    ],
)
def test_a_damaged_environment_json_stops_the_session_saying_what_is_wrong(project, content, why):
    environment_json(project).write_text(content)
    result = run(project)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    said = result.stderr.str()
    assert f"{environment_json(project)} is damaged {why}" in said
    assert UPDATE in said


def test_an_identity_with_a_thread_count_that_is_no_number_is_damaged(project):
    identity = json.loads(environment_json(project).read_text())
    environment_json(project).write_text(json.dumps({**identity, "threads": "one"}))
    result = run(project)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{environment_json(project)} is damaged (invalid literal" in result.stderr.str()


def test_an_update_runs_without_environment_json_and_says_when_it_did_not_write_it(project):
    """Only a full update of a complete log records the reference: this one updates the S5
    claims alone, so it says the file is still to be written, and how."""
    environment_json(project).unlink()
    result = run(project, "--snapshot-update")
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(
        [
            "snapshots/environment.json was not written: only a full update in which every "
            f"claim passes records the reference ({UPDATE})"
        ]
    )
    assert run(project).ret == pytest.ExitCode.USAGE_ERROR  # and the next run still stops


def test_a_project_that_recorded_no_snapshot_yet_needs_no_reference(project):
    """Nothing is compared, so nothing is weakened: each claim that quotes stops for want
    of its own snapshot file, naming the command that records it."""
    shutil.rmtree(project.path / "snapshots")
    result = run(project)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, errors=5)
    result.stdout.fnmatch_lines([f"the snapshot file *{S5}.ambr is missing*{UPDATE}*"])


def test_help_still_answers_with_a_damaged_environment_json(project):
    environment_json(project).write_text("{")
    result = project.runpytest_inprocess("--help")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*--snapshot-update*"])


@pytest.mark.slow
def test_a_full_update_writes_a_missing_environment_json_as_committed(claims_here, shared_cache):
    """The command the error names does what it says: on the reference platform, a full
    update records the reference identity, byte for byte the committed one."""
    environment = claims_here.path / "snapshots" / "environment.json"
    committed = environment.read_bytes()
    environment.unlink()
    done = claims_here("update", "--snapshot-update", cache=shared_cache)
    assert "recorded the reference: " in done.stdout
    assert environment.read_bytes() == committed


# -- under CI, a guard of the README's promises fails rather than skips ----------------------
GUARDED = """
import sys

import pytest


@pytest.fixture(autouse=True)
def _no_pytest_html(monkeypatch):
    # `import pytest_html` fails from here on, as if the dev extra were not installed (an
    # autouse fixture comes before the fixtures a test asks for).
    monkeypatch.setitem(sys.modules, "pytest_html", None)


def test_the_script_log(workshop_script_log):
    pass


def test_an_html_report(html_rows):
    pass
"""


@pytest.fixture
def guards(pytester, monkeypatch):
    """A project holding this folder's conftest.py and a test of each guarded fixture, with
    no ../shared beside it and no pytest-html to import; runs it with CI as given (None:
    unset)."""
    tests = pytester.mkdir("tests")  # as here: the project is the conftest's parent folder
    assert not (pytester.path.parent / "shared").exists()
    shutil.copy(Path(__file__).with_name("conftest.py"), tests / "conftest.py")
    (tests / "test_guarded.py").write_text(GUARDED)

    def run(ci):
        if ci is None:
            monkeypatch.delenv("CI", raising=False)
        else:
            monkeypatch.setenv("CI", ci)
        return pytester.runpytest_inprocess("tests", "-p", "no:randomly", "-rs")

    return run


def shared_missing(pytester):
    return (
        f"../shared is missing: no folder {pytester.path.parent / 'shared'} beside the project: "
        "without the workshop script, the README's promise that captures/results.log is its "
        "log, byte for byte, goes unchecked"
    )


HTML_MISSING = "pytest-html is not installed: pip install -e '.[dev]' installs it"
UNDER_CI = " (under CI a missing check fails, never skips)"


@pytest.mark.parametrize("ci", [None, "", "false", "0", "FALSE"])
def test_outside_ci_a_missing_shared_folder_or_pytest_html_skips_saying_why(guards, pytester, ci):
    result = guards(ci)
    result.assert_outcomes(skipped=2)
    skipped = [line.split(": ", 1)[1] for line in result.stdout.lines if line.startswith("SKIPPED")]
    assert skipped == [shared_missing(pytester), HTML_MISSING]


@pytest.mark.parametrize("ci", ["true", "1", "yes"])
def test_under_ci_a_missing_shared_folder_or_pytest_html_fails_naming_it(guards, pytester, ci):
    result = guards(ci)
    result.assert_outcomes(errors=2)
    said = result.stdout.lines
    assert shared_missing(pytester) + UNDER_CI in said
    assert HTML_MISSING + UNDER_CI in said


# -- the comparison exits 1 when the outputs differ -----------------------------------------
@pytest.fixture
def outputs(tmp_path):
    """A folder holding a run's outputs as committed: the log and every figure."""
    out = tmp_path / "out"
    shutil.copytree(ROOT / "diagrams", out / "diagrams")
    shutil.copy(ROOT / "captures" / "results.log", out / "results.log")
    return out


def compare(out, *args):
    """`python -m claimlog.runner OUT ARGS`, as noxfile.py runs it."""
    return subprocess.run(
        [sys.executable, "-m", "claimlog.runner", str(out), *args],
        capture_output=True,
        text=True,
        env=environment(),
        check=False,
    )


def edit_line(log, number, change):
    lines = log.read_text().splitlines(keepends=True)
    lines[number - 1] = change(lines[number - 1])
    log.write_text("".join(lines))


def test_the_comparison_exits_0_when_the_outputs_are_the_committed_ones(outputs):
    done = compare(outputs)
    assert done.returncode == SAME, done.stderr
    assert "results.log: byte-identical to the committed log" in done.stdout
    assert f"the outputs in {outputs} are the committed ones" in done.stdout


def test_the_comparison_exits_1_when_a_line_differs_saying_which(outputs):
    edit_line(outputs / "results.log", 40, lambda line: line.replace("3015", "3016"))
    done = compare(outputs)
    assert done.returncode == DIFFERENT
    assert "results.log: differs from the committed log on lines [40]" in done.stdout
    assert (
        f"the outputs in {outputs} differ from the committed ones: results.log on lines [40]"
        in done.stderr
    )


def test_a_changed_or_missing_figure_or_a_drifted_reading_is_a_difference(outputs, capsys):
    figures = sorted((outputs / "diagrams").glob("*.png"))
    figures[0].write_bytes(b"other bytes")
    figures[1].unlink()
    Record(
        exitstatus=0,
        claims={
            "c.py::t": ClaimOutcome(
                drift=["S6 loss: snapshot 0.0053, here 0.0079"], ran=True, passed=True
            )
        },
        readings={},
        tables={},
    ).save(outputs / "record.json")
    assert main([str(outputs)]) == DIFFERENT
    said = capsys.readouterr()
    names = ", ".join(p.name for p in figures[:2])
    assert f"figures: {len(figures) - 2} of {len(figures)} byte-identical" in said.out
    assert f"figures {names}; 1 drifted readings" in said.err
    assert "  S6 loss: snapshot 0.0053, here 0.0079" in said.out


def test_a_figure_never_committed_is_a_difference(outputs, capsys):
    (outputs / "diagrams" / "new_figure.png").write_bytes(b"png")
    assert main([str(outputs)]) == DIFFERENT
    assert "figures never committed new_figure.png" in capsys.readouterr().err


def test_a_log_that_differs_only_in_line_endings_is_a_difference(outputs, capsys):
    log = outputs / "results.log"
    log.write_bytes(log.read_bytes().replace(b"\n", b"\r\n"))
    assert main([str(outputs)]) == DIFFERENT
    assert "results.log in its line endings" in capsys.readouterr().err


VERSIONS = LOG.line_number("versions")


def other_build(line):
    """The versions line as another build of the same torch release writes it."""
    torch, rest = line.split(" | ", 1)
    return f"{torch.split('+')[0]}+cu130 | {rest}"


def test_another_torch_build_is_a_difference_unless_the_caller_says_it_is_expected(outputs):
    """The one difference the nox sessions on 3.12 and 3.13 expect, and only when they say
    so: the log's versions line naming the CUDA build of the reference's release."""
    edit_line(outputs / "results.log", VERSIONS, other_build)
    done = compare(outputs)
    assert done.returncode == DIFFERENT
    assert f"results.log on lines [{VERSIONS}]" in done.stderr
    done = compare(outputs, "--other-torch-build")
    assert done.returncode == SAME, done.stderr
    assert (
        f"results.log: byte-identical to the committed log but line {VERSIONS}, which names "
        "another build of its torch (committed 'torch 2.13.0+cpu | numpy 2.2.6 | seed 0', "
        "here 'torch 2.13.0+cu130 | numpy 2.2.6 | seed 0'), as --other-torch-build allows"
    ) in done.stdout


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda line: line.replace("torch 2.13.0", "torch 2.14.0"), id="release"),
        pytest.param(lambda line: line.replace("numpy", "numpy 9 |"), id="numpy"),
    ],
)
def test_the_expected_build_difference_allows_nothing_else(outputs, capsys, change):
    edit_line(outputs / "results.log", VERSIONS, lambda line: change(other_build(line)))
    assert main([str(outputs), "--other-torch-build"]) == DIFFERENT
    assert f"results.log on lines [{VERSIONS}]" in capsys.readouterr().err


def test_the_expected_build_difference_allows_no_other_line(outputs, capsys):
    edit_line(outputs / "results.log", VERSIONS, other_build)
    edit_line(outputs / "results.log", 40, lambda line: line.replace("3015", "3016"))
    assert main([str(outputs), "--other-torch-build"]) == DIFFERENT
    assert f"results.log on lines [{VERSIONS}, 40]" in capsys.readouterr().err


def test_a_record_that_cannot_be_read_is_a_usage_error(outputs, capsys):
    (outputs / "record.json").write_text("{")
    assert main([str(outputs)]) == USAGE
    assert f"cannot read the session record {outputs / 'record.json'}" in capsys.readouterr().err


# -- the workshop script's log, kept per environment ----------------------------------------
# A stand-in for ../shared/tools/reference-log: counts its runs beside itself, writes a log
# and prints its path, as the real one does.
FAKE_REFERENCE_LOG = """#!/bin/sh
echo run >> "$(dirname "$0")/runs"
out="$(mktemp -d)/results.log"
echo "the log" > "$out"
echo "$out"
"""


def test_the_script_log_is_kept_for_its_environment_and_computed_again_when_asked(
    pytester, monkeypatch, workshop_ini
):
    """The byte-identity test reads the script's log from pytest's cache when everything it
    is computed from is unchanged; another script, another kernel variable or --recompute
    runs the script again."""
    # torch reads ATEN_CPU_CAPABILITY once, the first time it picks a kernel, and the
    # in-process sessions below may be this process's first: let it pick now, under the
    # reference kernels, so that the "default" this test sets never becomes the kernels of
    # the tests that run after it in this process (they failed so, run after it).
    from bnvg.experiment.runtime import torch

    torch.backends.cpu.get_cpu_capability()

    project, shared = pytester.mkdir("project"), pytester.path / "shared"
    (shared / "tools").mkdir(parents=True)
    (shared / "seed").mkdir()
    script = shared / "seed" / "experiment.py"
    script.write_text("print('the workshop')\n")
    fake = shared / "tools" / "reference-log"
    fake.write_text(FAKE_REFERENCE_LOG)
    fake.chmod(0o755)
    tests = project / "tests"
    tests.mkdir()
    shutil.copy(Path(__file__).with_name("conftest.py"), tests / "conftest.py")
    (tests / "test_log.py").write_text(
        "def test_the_script_log(workshop_script_log):\n"
        "    assert workshop_script_log == b'the log\\n'\n"
    )
    monkeypatch.chdir(project)

    def runs_after(*args):
        pytester.runpytest_inprocess("tests", "-p", "no:randomly", *args).assert_outcomes(passed=1)
        return (shared / "tools" / "runs").read_text().count("run")

    assert runs_after() == 1
    assert runs_after() == 1  # kept
    script.write_text("print('the workshop, edited')\n")
    assert runs_after() == 2
    # The session below takes "default" for the user's choice, and rewrites claimlog's note
    # of the variables it set itself: both go back after this test, or the tests after it in
    # this process would take the reference's ATEN variable for a user's (a sweep's job on
    # the native kernels then kept it).
    monkeypatch.setenv(SET_BY_CLAIMLOG, os.environ[SET_BY_CLAIMLOG])
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "default")
    assert runs_after() == 3
    assert runs_after() == 3
    # claimlog's --recompute, in a project that declares the workshop.
    pytester.makeini(workshop_ini)
    assert runs_after("--recompute") == 4
    assert runs_after("-p", "no:cacheprovider") == 5
