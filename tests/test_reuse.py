"""Trained runs and drawings reused from pytest's cache while nothing they depend on changed.

Every test here runs the real claims: in subprocesses where what is tested is a process's
(what it imports, its kernels and threads, the code it runs, two of them sharing a cache),
in this process where it is only when a run trains again. Those of what a warm run does
reuse the test session's shared cache; those of when a run trains again keep a cache folder
of their own.
"""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from claimlog.places import Places
from claimlog.runner import differing_figures, run_claims, scratch_copy

# Claims sessions in subprocesses that train and reuse networks: the slow tier.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
PROBE = {"PYTHONPATH": str(Path(__file__).parent / "probes")}
# The claim that trains the least: the plain net's S6 claim needs the one run "plain", the
# cheapest of the twelve (what a run is reused or trained for does not depend on which).
ONE_RUN = ("-k", "never_reaches_90")


@pytest.fixture(scope="module")
def cold_then_warm(cold_parallel_run, warm_claims, tmp_path_factory):
    """The test session's cold full run, which filled the shared cache, then a full run that
    reuses it."""
    warm = warm_claims(
        ["-s", "-p", "bnvg_probe"], outputs=tmp_path_factory.mktemp("warm"), env=PROBE
    )
    assert warm.returncode == 0, warm.tail()
    return cold_parallel_run, warm


def test_a_warm_run_reuses_every_network_and_figure_and_writes_the_same_bytes(
    cold_then_warm, committed_log
):
    cold, warm = cold_then_warm
    assert len(cold.record.trained) == 12 and cold.record.reused == ()
    assert warm.record.trained == () and len(warm.record.reused) == 12
    assert len(warm.record.figures_reused) == 15
    assert cold.results_log.read_bytes() == warm.results_log.read_bytes()
    committed_log.check(warm.results_log.read_bytes())
    assert differing_figures(warm.diagrams, Places(ROOT)) == []
    assert differing_figures(cold.diagrams, Places(ROOT)) == []


def test_a_warm_run_imports_neither_torch_nor_matplotlib(cold_then_warm):
    """Every network, figure and other computed result is reused: nothing needs torch."""
    _, warm = cold_then_warm
    assert "matplotlib imported: False" in warm.stdout  # the probe plugin's own lines
    assert "torch imported: False" in warm.stdout
    assert set(warm.record.results_reused) >= {
        "S2 sigmoid facts",
        "S3 starting weights",
        "S4 at-init measurements",
        "S9 eval bug",
    }


def test_the_summary_says_which_runs_were_reused_when_and_on_what(cold_then_warm):
    _, warm = cold_then_warm
    # One line per training minute and platform: the cold run may have crossed a minute.
    said = re.findall(r"reused (\d+) networks? from pytest's cache \(trained 20", warm.stdout)
    assert sum(map(int, said)) == 12
    assert "ATen AVX2, MKL COMPATIBLE, oneDNN AVX2, 1 thread, on " in warm.stdout
    assert "reused 15 figures drawn earlier from the same numbers" in warm.stdout


def own_copy(shared_cache, tmp_path):
    """A cache of this test's own, holding what the session's cold run trained: a test of
    when a run trains again starts from it instead of training the first run itself."""
    return shutil.copytree(shared_cache, tmp_path / "cache")


def one_run_here(claims_here, out, cache, *args):
    return claims_here(out, *ONE_RUN, *args, cache=cache)


def test_recompute_strict_numbers_no_cache_and_cache_clear_train_again(
    tmp_path, shared_cache, claims_here
):
    """In this process (`claims_here`): a process's start-up is no part of what is tested."""
    cache = own_copy(shared_cache, tmp_path)
    assert one_run_here(claims_here, "b", cache).record.reused == ("plain",)
    for i, args in enumerate([["--recompute"], ["--strict-numbers"], ["--cache-clear"]]):
        record = one_run_here(claims_here, f"c{i}", cache, *args).record
        assert record.trained == ("plain",) and record.reused == (), args
    assert one_run_here(claims_here, "d", None).record.trained == ("plain",)


@pytest.mark.parametrize(
    ("how", "args", "env"),
    [
        # Threads that wait passively: two spinning threads on a shared machine burn its cores
        # (how a thread waits changes when it runs, never what it computes).
        ("two torch threads", ["--torch-threads=2"], {"OMP_WAIT_POLICY": "PASSIVE"}),
        ("scalar CPU kernels", [], {"ATEN_CPU_CAPABILITY": "default"}),
    ],
)
def test_another_thread_count_or_cpu_capability_trains_again(
    tmp_path, how, args, env, shared_cache, claims_here
):
    """The other platform's run in a subprocess, whose kernels and threads are its own; the
    check that the reference's run is still there in this process (`claims_here`), since
    reading a cache is no part of what a process does."""
    cache = own_copy(shared_cache, tmp_path)
    other = run_claims(
        [*ONE_RUN, "--snapshot-update", *args],
        cwd=scratch(tmp_path),
        outputs=tmp_path / "b",
        cache_dir=cache,
        env=env,
    )
    assert other.record.trained == ("plain",), how
    # The first is still there.
    assert one_run_here(claims_here, "c", cache).record.reused == ("plain",)


def scratch(tmp_path):
    """A copy of the project whose snapshots another platform may rewrite."""
    return scratch_copy(ROOT, tmp_path / "project")


def editable_copy(tmp_path, shared_cache, select):
    """A copy of the project with a bnvg of its own to edit, and a function that runs its
    claims selected by `-k select` (on a copy of the session's cache) and returns the record."""
    project = scratch(tmp_path)
    shutil.copytree(ROOT / "bnvg", project / "bnvg", ignore=shutil.ignore_patterns("__pycache__"))
    cache = own_copy(shared_cache, tmp_path)

    def run(out):
        done = run_claims(["-k", select], cwd=project, outputs=tmp_path / out, cache_dir=cache)
        assert done.returncode == 0, done.tail()
        return done.record

    return project, run


def test_editing_a_comment_of_the_training_code_trains_again_and_of_other_code_does_not(
    tmp_path, shared_cache
):
    """In a copy of the project with its own bnvg (its conftest.py puts it first on sys.path)."""
    project, run = editable_copy(tmp_path, shared_cache, ONE_RUN[1])
    assert run("a").reused == ("plain",)  # the same source as the session's cold run
    eval_bug_py = project / "bnvg" / "experiment" / "eval_bug.py"
    eval_bug_py.write_text(eval_bug_py.read_text() + "# a comment\n")
    assert run("b").reused == ("plain",)
    # S2's autograd check is a constant of the recipe no training reads: no network again.
    config_py = project / "bnvg" / "experiment" / "config.py"
    config_py.write_text(config_py.read_text().replace("= 2.0, 0.0  # S2", "= 1.5, 0.0  # S2"))
    assert run("b2").reused == ("plain",)
    train_py = project / "bnvg" / "experiment" / "train.py"
    train_py.write_text(train_py.read_text() + "# a comment\n")
    assert run("c").trained == ("plain",)


def test_a_corrupted_entry_is_reported_and_trained_again(tmp_path, claims_here):
    cache = tmp_path / "cache"
    one_run_here(claims_here, "a", cache)
    [entry] = (cache / "d" / "bnvg-runs").glob("*.bin")
    data = bytearray(entry.read_bytes())
    data[len(data) // 2] ^= 0xFF
    entry.write_bytes(bytes(data))
    run = one_run_here(claims_here, "b", cache)
    assert run.record.damaged == ("plain",) and run.record.trained == ("plain",)
    assert (
        "the cached run 'plain' was damaged (its content does not match its checksum" in run.stdout
    )
    assert one_run_here(claims_here, "c", cache).record.reused == ("plain",)  # written anew


def test_two_sessions_sharing_a_cache_train_a_run_once(tmp_path):
    cache = tmp_path / "cache"
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sys; from pathlib import Path; from claimlog.runner import run_claims; "
                f"r = run_claims({list(ONE_RUN)!r}, cwd=Path({str(ROOT)!r}), "
                f"outputs=Path({str(tmp_path)!r}) / 'out{i}', cache_dir=Path({str(cache)!r})); "
                "print(r.returncode, r.record.trained, r.record.reused)",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    said = [p.communicate(timeout=600)[0].strip() for p in procs]
    assert set(said) == {"0 () ('plain',)", "0 ('plain',) ()"}  # one trained, one reused


def test_editing_a_source_a_computed_result_depends_on_computes_it_again(tmp_path, shared_cache):
    """The at-init measurements run bnvg/experiment/ (measure.py among it): a comment there
    computes them again; one in the log's text (bnvg/log/) reuses them."""
    project, run = editable_copy(tmp_path, shared_cache, "3000x")
    assert "S4 at-init measurements" in run("a").results_reused
    fill_py = project / "bnvg" / "log" / "fill.py"
    fill_py.write_text(fill_py.read_text() + "# a comment\n")
    assert "S4 at-init measurements" in run("b").results_reused
    measure_py = project / "bnvg" / "experiment" / "measure.py"
    measure_py.write_text(measure_py.read_text() + "# a comment\n")
    assert run("c").results_reused == ()
