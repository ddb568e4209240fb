"""The sweep on real Dask clusters: fragments, resuming, determinism, other platforms.

Each test sweeps a scratch copy of the project over a few claims (`--select`), so a job takes
seconds; the machinery is the one the full sweep runs.
"""

import contextlib
import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from filelock import FileLock

from bnvg.workshop import DECLARATION
from claimlog.evidence.fragments import Fragment, FragmentStore
from claimlog.evidence.keys import claim_keys
from claimlog.places import Places
from claimlog.plugin.session import RUNS_CACHE
from claimlog.runner import environment, scratch_copy
from claimlog.sweep.merge import GENERATED, SWEEP_PAGE, with_findings

# Sweeps on Dask clusters, each job a claims session in a subprocess: the slow tier.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
QUICK = ["--no-kernels", "--select", "s1_"]  # the S1 claims: no training
# One seed of each axis besides the workshop's: with the three platforms, five jobs, so
# each seed axis already merges two runs (k of 2) and a killed sweep leaves some jobs to do.
SEEDS = ["--seeds", "1"]


def project(folder):
    """A scratch project with no sweep evidence yet (but the published log), and the pages of
    docs/ the sweep writes into, their generated sections empty, for the sweep to write."""
    scratch_copy(ROOT, folder)
    for name, markers in GENERATED.items():
        page = (ROOT / name).read_text()
        for begin, end in markers:
            page = with_findings(page, "", begin, end)
        (folder / name).parent.mkdir(exist_ok=True)
        (folder / name).write_text(page)
    evidence = folder / "snapshots" / "evidence"
    shutil.rmtree(evidence / "fragments", ignore_errors=True)
    for name in ("fragility.json", "fragility.md", "robustness.json", "robustness.md"):
        (evidence / name).unlink(missing_ok=True)
    return folder


def keys_of(folder):
    return claim_keys(Places(folder), DECLARATION)


# `python -m bnvg.sweep`, saying at its end whether it imported torch.
SWEEP_SAYING_TORCH = """
import runpy, sys
try:
    runpy.run_module("claimlog.sweep", run_name="__main__", alter_sys=True)
finally:
    print("torch imported:", "torch" in sys.modules)
"""


def sweep(folder, *args, env=None, check=True, cwd=None):
    done = subprocess.run(
        [sys.executable, "-c", SWEEP_SAYING_TORCH, "--project", str(folder), *args],
        capture_output=True,
        text=True,
        timeout=900,
        env=environment(env),
        cwd=cwd,
    )
    if check:
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def evidence_bytes(folder):
    evidence = folder / "snapshots" / "evidence"
    return {
        str(p.relative_to(evidence)): p.read_bytes()
        for p in sorted(evidence.rglob("*"))
        if p.is_file() and p.name != "published.log"
    }


@pytest.fixture(scope="session")
def swept(shared_folder):
    """One sweep of a scratch project (1 seed, 2 workers) for the whole test session, and
    what it said. Whichever xdist worker asks first runs it; the other waits for it. Tests
    only read it: a test that sweeps again does so in a copy."""
    folder, said = shared_folder / "swept", shared_folder / "swept.said"
    with FileLock(str(shared_folder / "swept.lock")):
        if not said.exists():
            shutil.rmtree(folder, ignore_errors=True)  # what a failed attempt left
            done = sweep(project(folder), *SEEDS, "--workers", "2", *QUICK)
            said.write_text(done)  # last: the sweep is complete
    return folder, said.read_text()


def copy_of(folder, tmp_path):
    return shutil.copytree(folder, tmp_path / folder.name)


def fresh_project_keeping_the_cache_of(folder, into):
    """A project with no sweep evidence (`project`), with the pytest cache of the sweep in
    `folder`: its jobs reuse what that sweep's jobs asked torch about this machine's platforms
    and drew, instead of importing torch again (what a job computes is read from its record,
    whichever)."""
    fresh = project(into)
    shutil.copytree(folder / ".pytest_cache", fresh / ".pytest_cache")
    return fresh


def test_a_sweep_says_its_progress_and_writes_a_fragment_per_job_and_the_tables(swept):
    folder, said = swept
    assert "5 of 5 jobs to run, on 2 workers" in said
    assert "[5/5] " in said and "done in " in said
    # An estimate of the time left, while jobs remain.
    assert re.search(r"\[[1-4]/5\] .*; about \d+ (min \d+ )?s left", said), said
    fragments = sorted(p.name for p in (folder / "snapshots/evidence/fragments").rglob("*.json.gz"))
    assert fragments == sorted(
        f"{v}.json.gz"
        for v in (
            *("workshop", "mkl-auto", "native"),
            *("sampler-seed-1", "init-seed-1"),
        )
    )
    table = json.loads((folder / "snapshots/evidence/robustness.json").read_text())
    assert {a: len(v) for a, v in table["axes"].items()} == {"sampler": 2, "init": 2}
    # The jobs compute under the reference kernels, but where a variant says otherwise.
    store = FragmentStore(folder / "snapshots/evidence/fragments", keys_of(folder))
    kernels = {
        f.variant.name: (f.platform["MKL_CBWR"], f.platform["ATEN_CPU_CAPABILITY"])
        for f in store.all()
    }
    assert kernels["workshop"] == kernels["init-seed-1"] == ("COMPATIBLE", "avx2")
    assert kernels["mkl-auto"] == ("AUTO", "avx2")
    assert kernels["native"] == ("(not set)", "(not set)")
    findings = (folder / SWEEP_PAGE).read_text()
    assert "Over 2 minibatch orders and 2 starting weights" in findings
    assert "claims hold in every run" in findings


def test_a_second_sweep_computes_nothing_imports_no_torch_and_writes_the_same_bytes(
    swept, tmp_path
):
    """What this machine is, the sweep reads from torch's facts its jobs kept in the
    project's pytest cache; with every fragment there, it starts no cluster."""
    folder, _ = swept
    again = copy_of(folder, tmp_path)
    said = sweep(again, *SEEDS, *QUICK)
    assert "nothing to compute: all 5 fragments are there" in said
    assert "torch imported: False" in said
    assert evidence_bytes(again) == evidence_bytes(folder)
    for name in GENERATED:
        assert (again / name).read_bytes() == (folder / name).read_bytes()


def test_a_release_already_recorded_computes_nothing_and_writes_the_same_bytes(swept, tmp_path):
    """What `nox -s torch-<release>` runs: this torch's workshop under the reference kernels,
    which the sweep above recorded already."""
    folder, _ = swept
    again = copy_of(folder, tmp_path)
    said = sweep(again, "--release", "--select", "s1_")
    assert "nothing to compute: the one fragment asked for is there" in said
    assert evidence_bytes(again) == evidence_bytes(folder)


def test_a_killed_sweep_resumes_computing_only_the_missing_fragments_on_any_number_of_workers(
    swept, tmp_path
):
    """Killed, then resumed, on one worker: the same bytes as the two workers of `swept`."""
    folder, _ = swept
    resumed = fresh_project_keeping_the_cache_of(folder, tmp_path / "resumed")
    fragments = resumed / "snapshots/evidence/fragments"
    started = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "claimlog.sweep",
            "--project",
            str(resumed),
            *SEEDS,
            "--workers",
            "1",
            *QUICK,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=environment(),
        start_new_session=True,
    )
    deadline = time.monotonic() + 300
    while len(list(fragments.rglob("*.json.gz"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    os.killpg(started.pid, signal.SIGKILL)  # the sweep, its cluster and its jobs
    started.wait()
    kept = len(list(fragments.rglob("*.json.gz")))
    assert 2 <= kept < 5
    # Killed as it wrote a fragment, a sweep leaves the write's temporary file beside it
    # (whether this one did depends on the moment): one more, as such a write leaves it.
    platform = next(fragments.rglob("*.json.gz")).parent
    half_written = platform / ".sampler-seed-1.json.gz.x1y2z3.tmp"
    half_written.write_bytes(b"")
    said = sweep(resumed, *SEEDS, "--workers", "1", *QUICK)
    assert "deleted what a killed sweep left half written: " in said
    assert not list(fragments.rglob("*.tmp"))
    assert f"{5 - kept} of 5 jobs to run ({kept} fragments already there)" in said
    assert evidence_bytes(resumed) == evidence_bytes(folder)


def test_a_sweep_after_edits_computes_only_the_stale_claims_and_writes_the_whole_evidence(
    swept, tmp_path
):
    """Since `swept`, one claim's bound was edited (its evidence is stale in every fragment),
    the workshop fragment is re-keyed as computed by other code (as after an edit every claim
    reads), and a fragment of a machine this sweep cannot run holds nothing fresh. The sweep
    computes only what is stale (the edited claim in four jobs, every claim in the
    workshop's), deletes the other machine's fragment, and writes the same bytes as a sweep
    of the edited project from nothing."""
    folder, _ = swept
    edited = copy_of(folder, tmp_path)
    claim = edited / "claims" / "test_s1_dataset.py"
    text = claim.read_text()
    assert '"std of x1": below(1.0)' in text
    claim.write_text(text.replace('"std of x1": below(1.0)', '"std of x1": below(0.95)'))
    before, after = keys_of(folder), keys_of(edited)
    bound = "claims/test_s1_dataset.py::test_input_features_have_std_0_890_and_0_511"
    assert [c for c in before if before[c] != after[c]] == [bound]
    store = FragmentStore(edited / "snapshots/evidence/fragments", after)
    assert store.stale_claims() == {bound: 5}  # stale in all 5 fragments, and nothing else
    [workshop] = list(store.folder.glob("*/workshop.json.gz"))
    fragment = store.read(workshop)
    rekeyed = dataclasses.replace(fragment, keys=dict.fromkeys(fragment.keys, "another key"))
    workshop.write_bytes(rekeyed.encode())
    elsewhere = store.folder / "x86_64-a-machine-gone-elsewhere" / "native.json.gz"
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(rekeyed.encode())
    # Fresh, but of a platform measured before fingerprints: nobody knows what it computes.
    unknown = {k: v for k, v in fragment.platform.items() if k != "fingerprint"}
    before_fingerprints = store.folder / "x86_64-measured-before-fingerprints" / "native.json.gz"
    before_fingerprints.parent.mkdir()
    before_fingerprints.write_bytes(dataclasses.replace(fragment, platform=unknown).encode())
    assert set(store.stale()) == {workshop, elsewhere}
    assert store.unknown_platforms() == [before_fingerprints]

    # On one worker, where `swept` had two: how many workers compute is no part of the bytes.
    said = sweep(edited, *SEEDS, "--workers", "1", *QUICK)
    assert "the evidence of 4 claims is stale" in said
    assert f"{bound}: stale in 7 of 7 fragments" in said
    assert "claims/test_s1_dataset.py::test_two_moons_figure_is_drawn: stale in 2 of 7" in said
    assert "5 of 5 jobs to run" in said
    assert "deleted a stale fragment: snapshots/evidence/fragments/x86_64-a-machine-gone" in said
    assert not elsewhere.parent.exists() and store.stale() == [] and store.stale_claims() == {}
    assert (
        "retired a fragment measured before platforms had fingerprints: snapshots/evidence/"
        "fragments/x86_64-measured-before-fingerprints/native.json.gz (nobody knows which bits"
    ) in said
    assert not before_fingerprints.parent.exists()
    table = json.loads((edited / "snapshots/evidence/fragility.json").read_text())
    assert table["readings"]["S1 feature std, std of x1"]["bound"] == ["<", 0.95]
    assert table["keys"].items() <= after.items() and table["keys"]

    whole = fresh_project_keeping_the_cache_of(folder, tmp_path / "whole")
    (whole / "claims" / "test_s1_dataset.py").write_text(claim.read_text())
    sweep(whole, *SEEDS, "--workers", "1", *QUICK)
    assert evidence_bytes(edited) == evidence_bytes(whole)


def test_fragments_are_the_same_bytes_whenever_encoded_and_a_damaged_one_is_named(swept, tmp_path):
    folder, _ = swept
    store = FragmentStore(folder / "snapshots/evidence/fragments", keys_of(folder))
    [path] = list(store.folder.glob("*/workshop.json.gz"))
    fragment = store.read(path)
    assert fragment.encode() == path.read_bytes()
    assert Fragment.from_json(fragment.to_json()) == fragment
    damaged = tmp_path / "x" / "workshop.json.gz"
    damaged.parent.mkdir()
    damaged.write_bytes(path.read_bytes()[:100])
    with pytest.raises(ValueError, match=r"the fragment .*workshop.json.gz is damaged"):
        FragmentStore(tmp_path, keys_of(folder)).read(damaged)


def test_a_capped_platform_keeps_every_fragment_of_the_higher_capability(swept, tmp_path):
    folder, _ = swept
    capped = fresh_project_keeping_the_cache_of(folder, tmp_path / "capped")
    shutil.copytree(
        folder / "snapshots/evidence/fragments", capped / "snapshots/evidence/fragments"
    )
    fragments = capped / "snapshots/evidence/fragments"
    before = {p.relative_to(fragments) for p in fragments.rglob("*.json.gz")}
    best = {p.name for p in fragments.iterdir()}
    sweep(capped, *SEEDS, "--workers", "2", *QUICK, env={"ATEN_CPU_CAPABILITY": "default"})
    now = {p.name for p in (capped / "snapshots/evidence/fragments").iterdir()}
    assert best < now  # the scalar platform is added; the best one is still there
    platforms = json.loads((capped / "snapshots/evidence/fragility.json").read_text())["variants"]
    scalar = re.compile(r"-aten-default-mkl-compatible-onednn-avx2-1t-bits-[0-9a-f]{8}/workshop$")
    assert any(scalar.search(n) for n in platforms)
    assert before <= {p.relative_to(fragments) for p in fragments.rglob("*.json.gz")}


@contextlib.contextmanager
def cluster_on_loopback(folder, workers):
    """A Dask scheduler on loopback and a worker process per name of `workers`, each started
    with the variables given for it (its scalar kernels, the code it imports); its address."""
    dask = Path(sys.executable).parent / "dask"
    file = folder / "scheduler.json"
    common = ["--no-dashboard"]
    procs = [
        subprocess.Popen(
            [
                str(dask),
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--scheduler-file",
                str(file),
                *common,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=environment(),
        )
    ]
    try:
        deadline = time.monotonic() + 60
        while not file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        for name, extra in workers.items():
            procs.append(
                subprocess.Popen(
                    [
                        str(dask),
                        "worker",
                        "--scheduler-file",
                        str(file),
                        "--nthreads",
                        "1",
                        "--name",
                        name,
                        # No nanny process to restart a worker that died: a test's workers
                        # live as long as the test, and a dead one is a failure to see.
                        "--no-nanny",
                        *common,
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    env=environment(extra),
                )
            )
        from distributed import Client

        with Client(scheduler_file=str(file)) as client:
            client.wait_for_workers(len(workers), timeout=120)
        yield json.loads(file.read_text())["address"]
    finally:
        for proc in reversed(procs):
            proc.terminate()
            proc.wait(timeout=30)


@pytest.fixture
def loopback_cluster(tmp_path):
    """A Dask scheduler and two workers on loopback, one of them on scalar CPU kernels."""
    workers = {"native": {}, "scalar": {"ATEN_CPU_CAPABILITY": "default"}}
    with cluster_on_loopback(tmp_path, workers) as address:
        yield address


def test_a_sweep_on_a_loopback_cluster_counts_each_workers_platform(loopback_cluster, tmp_path):
    folder = project(tmp_path / "cluster")
    said = sweep(folder, "--scheduler", loopback_cluster, "--seeds", "0", *QUICK)
    # On each of the two kinds of machine: the reference, MKL's own path, the native kernels.
    assert "6 of 6 jobs to run, on 2 workers" in said
    platforms = {p.name for p in (folder / "snapshots/evidence/fragments").iterdir()}
    assert len(platforms) == 6 and any("-aten-default-mkl-compatible-" in p for p in platforms)
    table = json.loads((folder / "snapshots/evidence/fragility.json").read_text())
    assert any("-aten-default-mkl-compatible-" in v for v in table["variants"])
    report = (folder / "snapshots/evidence/fragility.md").read_text()
    assert all(p in report for p in platforms)


def test_a_job_that_computes_with_another_checkouts_code_fails_naming_both(tmp_path):
    """A worker computes with the workshop installed beside it: here another checkout's, of
    the code before an edit (as a remote worker's older release would be). Each job fails,
    naming both codes, and no fragment is written: numbers of other code never stand under
    this checkout's keys."""
    checkout, elsewhere = project(tmp_path / "checkout"), tmp_path / "elsewhere"
    for code in (checkout, elsewhere):
        shutil.copytree(ROOT / "bnvg", code / "bnvg", ignore=shutil.ignore_patterns("__pycache__"))
    config = checkout / "bnvg" / "experiment" / "config.py"
    config.write_text(
        config.read_text().replace(
            "CHECK_LOGIT, CHECK_LABEL = 2.0,", "CHECK_LOGIT, CHECK_LABEL = 2.5,"
        )
    )
    workers = {"elsewhere": {"PYTHONPATH": str(elsewhere)}}
    with cluster_on_loopback(tmp_path, workers) as address:
        said = sweep(
            checkout,
            *("--scheduler", address, "--seeds", "0", "--no-kernels", "--select", "s2_"),
            env={"PYTHONPATH": str(checkout)},
            check=False,
            cwd=checkout,  # as an author runs it: in the checkout, whose code it imports
        )
    failed = re.findall(r"\[\d/3\] (\S+) FAILED: RuntimeError: (.*)", said)
    assert sorted(name for name, _ in failed) == ["mkl-auto", "native", "workshop"], said
    for _, why in failed:
        assert re.search(
            rf"the workshop it imported \({elsewhere}/bnvg, code digest (\w+)\) is not the "
            rf"checkout's \({checkout}/bnvg, code digest (?!\1)\w+\): the key of ",
            why,
        ), why
        assert "claims/test_s2_sigmoid_and_loss.py::test_autograd_gradient_of" in why
    assert "3 jobs failed (" in said and "the tables were not written" in said
    assert not list((checkout / "snapshots/evidence").rglob("*.json.gz"))


@pytest.mark.parametrize("hash_seed", ["1", "2"])
def test_the_committed_tables_are_the_merge_of_the_committed_fragments(tmp_path, hash_seed):
    """Whatever Python's string hashing (so whatever order sets iterate in)."""
    copy = scratch_copy(ROOT, tmp_path / "copy")
    shutil.copytree(ROOT / "docs", copy / "docs")
    sweep(copy, "--merge-only", env={"PYTHONHASHSEED": hash_seed})
    assert evidence_bytes(copy) == evidence_bytes(ROOT)
    for name in GENERATED:
        assert (copy / name).read_bytes() == (ROOT / name).read_bytes()


def test_the_tables_are_the_same_bytes_whether_seeds_train_together_or_one_at_a_time(
    swept, tmp_path
):
    """Issue 51: a batch of seeds trained at once (its first seed alone, compared bit for bit
    with its share of the batch) merges into the same tables as each seed trained in a job of
    its own; the sweep says how it trained them, and measures itself against its floor."""
    runs = ["--seeds", "1", "--workers", "1", "--no-kernels"]
    runs += ["--select", "test_plain_net_never_reaches_90_percent"]
    together = fresh_project_keeping_the_cache_of(swept[0], tmp_path / "together")
    said = sweep(together, *runs)
    assert "2 seeds in 1 batch" in said
    assert "sampler-seed-1 to init-seed-1 (2 seeds, trained together: the same bits) on " in said
    assert re.search(r"the sweep took .*x its floor", said), said
    # The same platforms' fragments, the seeds computed again, each in a job of its own,
    # which trains its networks alone: the runs the batch kept are not in its cache.
    alone = shutil.copytree(together, tmp_path / "alone")
    for fragment in (alone / "snapshots/evidence/fragments").rglob("*-seed-*.json.gz"):
        fragment.unlink()
    shutil.rmtree(alone / ".pytest_cache" / "d" / f"{DECLARATION.name}-{RUNS_CACHE}")
    said = sweep(alone, *runs, "--one-at-a-time")
    assert "2 of 5 jobs to run (3 fragments already there)" in said and "batch" not in said
    assert evidence_bytes(together) == evidence_bytes(alone)

    # Resumed after a kill that came once the first seed had kept its runs, and before the
    # batch kept the others': the seed with runs left leads, and the batch still trains
    # together (it used to train the others alone, "the first seed's runs were kept").
    resumed = shutil.copytree(together, tmp_path / "resumed")
    for fragment in (resumed / "snapshots/evidence/fragments").rglob("*-seed-*.json.gz"):
        fragment.unlink()
    runs_cache = resumed / ".pytest_cache" / "d" / f"{DECLARATION.name}-{RUNS_CACHE}"
    for about in runs_cache.glob("*.json"):
        if "init_seed=1)" in json.loads(about.read_text())["inputs"]["run"]["workshop"]:
            for entry in runs_cache.glob(f"{about.stem}.*"):
                entry.unlink()
    said = sweep(resumed, *runs)
    assert "sampler-seed-1 to init-seed-1 (2 seeds, trained together: the same bits) on " in said
    assert evidence_bytes(together) == evidence_bytes(resumed)


def test_a_job_runs_its_session_once_more_after_cpythons_ast_race_and_no_other_error(
    monkeypatch, tmp_path
):
    """CPython 3.11 keeps one AST recursion counter for all of a process's threads: a job
    importing a plugin beside a worker's threads was seen to fail so (`AST_RACE`). The race
    decides nothing the session computes, so the job runs it once more; any other
    SystemError, or the race twice, is the job's failure."""
    from claimlog.sweep import job

    raised = [SystemError(f"{job.AST_RACE} (before=210, after=91)")]

    def session(args, *, root, outputs, cache_dir):
        if raised:
            raise raised.pop()
        return "the record"

    monkeypatch.setattr(job, "run_claims_here", session)
    assert job._run_here_once_more_after_the_ast_race([], tmp_path, tmp_path, tmp_path) == (
        "the record"
    )
    raised[:] = [SystemError(f"{job.AST_RACE} again")] * 2
    with pytest.raises(SystemError, match="again"):
        job._run_here_once_more_after_the_ast_race([], tmp_path, tmp_path, tmp_path)
    raised[:] = [SystemError("another error")]
    with pytest.raises(SystemError, match="another error"):
        job._run_here_once_more_after_the_ast_race([], tmp_path, tmp_path, tmp_path)
