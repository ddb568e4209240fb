"""Snapshots: a changed number fails exactly its claim and names it; updating is one command.

These run the real S5 claims (pure arithmetic, no training) in a scratch copy of the project,
each in a subprocess: the scratch claims module has the name of the real one.
"""

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
S5 = "test_s5_geometric_decay"


@pytest.fixture
def project(pytester, monkeypatch):
    """A scratch project holding the plugin, the claims' conftest, S5 and its snapshot."""
    # When these tests run on an xdist worker, its variables would make the scratch run
    # believe it is a worker too (syrupy then leaves unused snapshots to a controller).
    for name in [n for n in os.environ if n.startswith("PYTEST_XDIST")]:
        monkeypatch.delenv(name)
    shutil.copy(ROOT / "conftest.py", pytester.path / "conftest.py")
    (pytester.path / "claims").mkdir()
    (pytester.path / "snapshots").mkdir()
    for name in ("conftest.py", f"{S5}.py"):
        shutil.copy(ROOT / "claims" / name, pytester.path / "claims" / name)
    shutil.copy(ROOT / "snapshots" / f"{S5}.ambr", pytester.path / "snapshots" / f"{S5}.ambr")
    return pytester


def snapshot_file(project):
    return project.path / "snapshots" / f"{S5}.ambr"


def test_editing_one_stored_number_fails_exactly_the_claim_that_owns_it(project):
    path = snapshot_file(project)
    path.write_text(path.read_text().replace("-> 9.54e-07", "-> 9.55e-07"))
    result = project.runpytest_subprocess("claims", "-p", "no:randomly")
    result.assert_outcomes(passed=5, failed=1)
    result.stdout.fnmatch_lines(
        [
            "FAILED claims/test_s5_geometric_decay.py::test_factor_per_layer_compounds_over_4_and_10_layers?0.25?*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*S5 factor 3, layers: snapshot 9.55e-07, here 9.54e-07 (log line 60, a robust number)",
            "*If the new values are right, accept them: pytest claims/ --snapshot-update -k *",
        ]
    )


def test_the_update_command_restores_the_stored_number(project):
    path = snapshot_file(project)
    original = path.read_text()
    path.write_text(original.replace("-> 9.54e-07", "-> 9.55e-07"))
    project.runpytest_subprocess("claims", "--snapshot-update").assert_outcomes(passed=6)
    assert path.read_text() == original
    project.runpytest_subprocess("claims").assert_outcomes(passed=6)


def test_a_missing_snapshot_file_fails_each_claim_naming_the_file_and_the_command(project):
    snapshot_file(project).unlink()
    result = project.runpytest_subprocess("claims")
    result.assert_outcomes(passed=1, errors=5)
    result.stdout.fnmatch_lines(
        [
            "*the snapshot file */snapshots/test_s5_geometric_decay.ambr is missing. Restore it "
            "from git, or record the numbers computed here with `pytest claims/ --snapshot-update`.",
        ]
    )


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda text: "garbage\n" + text, "does not start with '# serializer version:'"),
        (
            lambda text: text.replace("# ---\n", "", 1),
            "starts a snapshot before the last one ended",
        ),
        (lambda text: text.replace("    'S5 factor 1'", "'S5 factor 1'", 1), "damaged at line"),
        (lambda text: text.rsplit("# ---", 1)[0], "never ends"),
    ],
)
def test_a_damaged_snapshot_file_fails_naming_the_file_and_the_damage(project, damage, said):
    path = snapshot_file(project)
    path.write_text(damage(path.read_text()))
    result = project.runpytest_subprocess("claims")
    result.assert_outcomes(passed=1, errors=5)
    assert said in result.stdout.str()
    assert "test_s5_geometric_decay.ambr" in result.stdout.str()


def test_a_full_update_removes_snapshots_no_claim_uses_and_a_partial_one_removes_nothing(project):
    path = snapshot_file(project)
    stale = "# name: test_a_claim_that_was_removed\n  'gone'\n# ---\n"
    path.write_text(path.read_text() + stale)
    project.runpytest_subprocess("claims", "--snapshot-update", "-k", "0.25").assert_outcomes(
        passed=1
    )
    assert "test_a_claim_that_was_removed" in path.read_text()
    unused = project.runpytest_subprocess("claims", "--snapshot-details")
    assert unused.ret == 1  # a full normal run fails on the unused snapshot, naming it
    unused.stdout.fnmatch_lines(
        ["Unused test_a_claim_that_was_removed (snapshots/test_s5_geometric_decay.ambr)"]
    )
    project.runpytest_subprocess("claims", "--snapshot-update").assert_outcomes(passed=6)
    assert "test_a_claim_that_was_removed" not in path.read_text()
