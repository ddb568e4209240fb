"""Whole runs of the real claims, in subprocesses, as a user or CI would start them.

Each writes its log and diagrams to a scratch folder, never to the repository's.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REFERENCE_LOG = ROOT.parent / "shared" / "tools" / "reference-log"


def run_claims(tmp_path, *args, env=None):
    """`pytest claims/ ARGS` from the project root, outputs redirected to tmp_path."""
    log, diagrams = tmp_path / "results.log", tmp_path / "diagrams"
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    environ.update(env or {})
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "claims/",
            "-p",
            "no:cacheprovider",
            f"--results-log={log}",
            f"--diagrams={diagrams}",
            *args,
        ],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout, log, diagrams


def trained(stdout):
    line = next(line for line in stdout.splitlines() if line.startswith("trained "))
    return line.split(": ", 1)[1].split("; ")


def test_k_eval_bug_selects_only_the_eval_bug_claims_and_trains_one_network(tmp_path):
    stdout, _, _ = run_claims(tmp_path, "-k", "eval_bug", "-v")
    selected = [line.split()[0] for line in stdout.splitlines() if " PASSED" in line]
    assert selected and all(n.startswith("claims/test_s9_eval_bug.py::") for n in selected)
    assert trained(stdout) == ["batch norm"]
    assert "created:" not in stdout  # one process: no xdist workers for a narrowed selection


def test_an_at_init_claim_trains_nothing_and_never_imports_matplotlib(tmp_path):
    stdout, _, _ = run_claims(
        tmp_path,
        "-k",
        "3000x",
        "-s",
        "-p",
        "bnvg_probe",
        env={"PYTHONPATH": str(Path(__file__).parent / "probes")},
    )
    assert "1 passed" in stdout
    assert not any(line.startswith("trained ") for line in stdout.splitlines())
    assert "matplotlib imported: False" in stdout


@pytest.fixture(scope="module")
def parallel_run(tmp_path_factory):
    return run_claims(tmp_path_factory.mktemp("parallel"), "-n", "2")


def test_the_full_suite_trains_each_of_the_twelve_runs_once_across_workers(parallel_run):
    stdout, _, _ = parallel_run
    runs = trained(stdout)
    assert len(runs) == len(set(runs)) == 12


def test_serial_and_parallel_runs_write_the_committed_log_and_diagrams_byte_for_byte(
    parallel_run, tmp_path
):
    stdout, serial_log, serial_diagrams = run_claims(tmp_path, "-n", "0")
    assert len(trained(stdout)) == 12
    _, parallel_log, parallel_diagrams = parallel_run
    committed = (ROOT / "captures" / "results.log").read_bytes()
    assert serial_log.read_bytes() == parallel_log.read_bytes() == committed
    for png in (ROOT / "diagrams").glob("*.png"):
        assert (serial_diagrams / png.name).read_bytes() == png.read_bytes(), png.name
        assert (parallel_diagrams / png.name).read_bytes() == png.read_bytes(), png.name


@pytest.mark.parametrize(
    ("how", "args", "env"),
    [
        ("shuffled, seed 1", ["-n", "0", "-p", "randomly", "--randomly-seed=1"], {}),
        (
            "shuffled, seed 2, on two workers",
            ["-n", "2", "-p", "randomly", "--randomly-seed=2"],
            {},
        ),
        ("with OMP_NUM_THREADS=8 set by the user", [], {"OMP_NUM_THREADS": "8"}),
    ],
)
def test_the_log_does_not_depend_on_order_distribution_or_thread_settings(tmp_path, how, args, env):
    stdout, log, _ = run_claims(tmp_path, *args, env=env)
    assert log.read_bytes() == (ROOT / "captures" / "results.log").read_bytes(), how
    if "randomly" in args:
        assert "Using --randomly-seed=" in stdout


def test_a_partial_update_touches_no_other_snapshot_file(tmp_path):
    """`pytest claims/ -k eval_bug --snapshot-update` rewrites at most the eval-bug claims'
    file, and leaves every other snapshot file (and the recorded environment) as it was."""
    project = tmp_path / "project"
    for name in ("claims", "snapshots"):
        shutil.copytree(ROOT / name, project / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("conftest.py", "pyproject.toml"):
        shutil.copy(ROOT / name, project / name)
    before = {p.name: p.read_bytes() for p in (project / "snapshots").iterdir()}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "claims/",
            "-k",
            "eval_bug",
            "--snapshot-update",
            "-p",
            "no:cacheprovider",
            f"--diagrams={tmp_path / 'diagrams'}",
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=600,
        env={k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")},
    )
    assert result.returncode == 0, result.stdout[-3000:]
    after = {p.name: p.read_bytes() for p in (project / "snapshots").iterdir()}
    assert after == before


@pytest.mark.skipif(not REFERENCE_LOG.exists(), reason="needs ../shared/tools/reference-log")
def test_the_committed_log_is_byte_identical_to_the_workshop_scripts_log():
    """In this environment (the pinned torch, one thread) the script and the claims agree."""
    result = subprocess.run(
        [str(REFERENCE_LOG)],
        env={**os.environ, "PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    script_log = Path(result.stdout.strip()).read_bytes()
    assert (ROOT / "captures" / "results.log").read_bytes() == script_log
