"""The sweep's estimate of its time left (claimlog/sweep/progress.py), from what its batches
told: the together training measured first, the rest from the workshop's own estimate until
measured; the waiting tasks handed to the workers as they come free; and the order of the
tasks (claimlog/sweep/cluster.py), one job alone among the first, to be measured early, and
the kind of machine each runs on."""

from dataclasses import replace

import pytest

from claimlog.evidence.fragments import FragmentStore
from claimlog.platform import Platform
from claimlog.sweep.cluster import Job, Machine, Sweep, batches, kind_of, plan
from claimlog.sweep.progress import Estimate, batch_seconds, time_left
from claimlog.sweep.variants import (
    ATEN_AVX512,
    MKL_AUTO,
    NATIVE,
    THREADS_2,
    WORKSHOP,
    one_setting_varied,
    per_machine,
    seed_variants,
)

# A batch of 32 seeds, 20% into its together training after 24 s (so 120 s in all); its
# claims took 1 s to collect (a session is estimated at as much), the workshop estimates
# one seed's training at 20 s.
EARLY = {
    "task": "b1",
    "seeds": 32,
    "collect": 1.0,
    "alone_prior": 20.0,
    "together_done": 0.2,
    "together_seconds": 24.0,
    "elapsed": 24.5,
}


def test_a_batch_is_unknown_until_its_together_training_says_how_fast_it_goes():
    assert batch_seconds({**EARLY, "together_done": 0.0, "together_seconds": 0.0}) is None
    # collect + together + the first seed alone (its estimate and a session) + 31 sessions
    # that train nothing
    assert batch_seconds(EARLY) == pytest.approx(1 + 120 + 21 + 31 * 1.0)


def test_what_a_batch_measured_replaces_the_estimates():
    measured = {**EARLY, "together_done": 1.0, "together_seconds": 118.0, "first": 27.0}
    assert batch_seconds(measured) == pytest.approx(1 + 118 + 27 + 31 * 1.0)
    measured["seed_seconds"] = 0.9
    assert batch_seconds(measured) == pytest.approx(1 + 118 + 27 + 31 * 0.9)


def test_a_later_seed_is_estimated_at_the_session_of_the_claims_that_read_no_run():
    told = {**EARLY, "session": 0.8}  # spent before the together training, with collecting
    assert batch_seconds(told) == pytest.approx(1 + 0.8 + 120 + 20.8 + 31 * 0.8)


def test_a_batch_whose_seeds_train_apart_costs_its_first_seed_each():
    apart = {**EARLY, "together_done": 1.0, "together_seconds": 118.0, "first": 27.0}
    assert batch_seconds({**apart, "apart": True}) == pytest.approx(1 + 118 + 32 * 27)
    # Once its later seeds have measured themselves (each trained alone, or nothing to train),
    # they stand for the rest.
    measured = {**apart, "apart": True, "seed_seconds": 2.0}
    assert batch_seconds(measured) == pytest.approx(1 + 118 + 27 + 31 * 2)


def test_the_waiting_tasks_go_to_whichever_worker_comes_free_first():
    assert time_left(2, [100.0, 10.0], [20.0, 20.0, 20.0]) == 100.0  # 10 + 60 on one
    assert time_left(2, [100.0, 90.0], [20.0, 20.0]) == 120.0
    assert time_left(2, [], [30.0]) == 30.0  # an idle worker takes it at once
    assert time_left(2, [100.0, None], [20.0]) is None
    assert time_left(1, [5.0], []) == 5.0


ALONE, OWN, OWN_2 = (1, False), (1, True), (2, True)  # kinds of jobs alone (`kind_of`)


def test_a_sweep_of_two_batches_and_platform_jobs_is_estimated_from_the_first_tenth():
    """The shape of the sweep after a recipe edit: two batches running on two workers, six
    platform jobs waiting. Before a platform job ends, each is taken as one seed alone."""
    estimate = Estimate()
    estimate.hear([(1000.0, EARLY), (1000.0, {**EARLY, "task": "b2"})])
    batches = {"b1": (32, ALONE), "b2": (32, ALONE)}
    left = estimate.left(2, batches, [(1, OWN)] * 6, now=1000.0)
    batch = 1 + 120 + 21 + 31 * 1.0 - 24.5
    assert left == pytest.approx(batch + 3 * 21)
    # A platform job of a process of its own that ended measures the others of its kind:
    # five left, three on one worker; one of two threads is measured apart.
    estimate.took[OWN] = [32.0]
    left = estimate.left(2, batches, [(1, OWN)] * 5, now=1000.0)
    assert left == pytest.approx(batch + 3 * 32)
    estimate.took[OWN_2] = [40.0]
    left = estimate.left(2, batches, [(1, OWN_2), (1, OWN), (1, OWN)], now=1000.0)
    assert left == pytest.approx(batch + 2 * 32)  # 40 on one worker, both others on the other


def test_a_job_in_its_workers_process_measures_nothing_for_one_in_a_process_of_its_own():
    """The workshop's own job runs in its worker, which keeps torch and the claims' imports;
    the kernel variants each start a Python, import torch and train under other kernels.
    After a recipe edit they took 9 s and about 35 s: the one measured no other kind, but
    before one of its own kind has ended, a job of two threads is taken as those of one."""
    estimate = Estimate()
    estimate.hear([(1000.0, {**EARLY, "first": 24.0})])
    estimate.took[ALONE] = [9.0]
    assert estimate.left(1, {}, [(1, OWN)], now=1000.0) == pytest.approx(24.0)
    estimate.took[OWN] = [35.0]
    assert estimate.left(1, {}, [(1, OWN), (1, OWN_2)], now=1000.0) == pytest.approx(70.0)
    assert kind_of(WORKSHOP) == ALONE and kind_of(MKL_AUTO) == OWN and kind_of(NATIVE) == OWN


def test_nothing_is_said_while_a_running_batch_has_told_nothing():
    assert Estimate().left(2, {"b1": (32, ALONE)}, [(1, OWN)], now=0.0) is None


def test_one_job_alone_starts_with_the_batches_so_that_the_others_are_measured_early():
    """After a recipe edit on two workers: two batches of 32 seeds and six platform jobs.
    A job of a process of its own goes to the second worker before its batch (each worker
    still gets one batch): most jobs alone are of that kind; the job of two threads is never
    the one measured for the others."""
    platform = [Job(v, None) for v in [*per_machine(), *one_setting_varied(avx512=True)]]
    seeds = [Job(v, None) for v in seed_variants(["sampler", "init"], 32)]
    tasks = batches([*platform, *seeds], workers=2)
    assert [len(t) for t in tasks] == [32, 1, 32, 1, 1, 1, 1, 1]
    assert tasks[1][0].variant is MKL_AUTO
    assert tasks[3][0].variant.threads == 2  # the longest of the rest first
    assert sorted(j.variant.name for t in tasks for j in t) == sorted(
        j.variant.name for j in [*platform, *seeds]
    )
    # One worker: the job alone before the batch (one after another, the order costs
    # nothing); no batch: the longest first, else the plan's order.
    assert [len(t) for t in batches([*platform[:2], *seeds[:4]], workers=1)] == [1, 4, 1]
    by_threads = sorted(platform, key=lambda j: -j.variant.threads)
    assert batches(platform, workers=2) == [[j] for j in by_threads]


def machine(best, bits):
    """A kind of machine whose widest ATen kernels are `best`, each variant's platform
    fingerprinted `bits` and the variant's number."""
    facts = {"torch": "2.13.0+cpu", "cpu capability": "AVX2", "widest capability": best}
    varied = one_setting_varied(avx512=best == "AVX512")
    prints = {v.name: f"{bits}{n:02d}" for n, v in enumerate([*per_machine(), *varied])}
    return Machine(Platform.here(1, facts), {}, best, prints)


def test_on_a_cluster_of_two_kinds_each_variant_runs_on_the_kind_its_fragment_is_named_for(
    tmp_path,
):
    """The plan names each job's fragment by the platform it will compute on, before it runs:
    so a job that may run on either kind of machine would land elsewhere than planned. The
    variants of one setting run on the first kind (the seeds too), ATen's AVX-512 kernels
    on the first kind that has them, each named by what that kind measured."""
    machines = {"tcp://a": machine("AVX2", "aaaa"), "tcp://b": machine("AVX512", "bbbb")}
    store = FragmentStore(tmp_path, {"claims/test_x.py::test_x": "key"})
    jobs, total = plan(machines, store, Sweep(seeds=1), axes=["init"])
    where = {job.variant.name: job.workers for job in jobs}
    assert where[ATEN_AVX512.name] == ("tcp://b",)
    for v in one_setting_varied(avx512=True):
        if v is not ATEN_AVX512:
            assert where[v.name] == ("tcp://a",), v.name
    assert where["init-seed-1"] == ("tcp://a",)
    assert total == len(jobs) == 2 * len(per_machine()) + 3 + 1


def test_an_update_on_a_new_reference_computes_the_references_own_variants_on_it(tmp_path):
    """An update computes only what the evidence holds, stale: it adds no platform. On a
    machine other than the recorded reference (MKL's Zen path, where its COMPATIBLE branch
    gives other bits), the update records this machine as the reference, so the reference's
    own variants (the workshop, the settings varied, the seeds) are computed on it though the
    evidence held them on the old reference's platforms; another CPU's own platform (its
    native kernels) is not added."""
    store = FragmentStore(tmp_path, {"claims/test_x.py::test_x": "edited"})
    for platform, name in [
        ("the-old-reference", WORKSHOP.name),
        ("the-old-reference", "init-seed-1"),
        ("the-old-reference-2t", THREADS_2.name),
        ("another-cpu-native", NATIVE.name),
    ]:  # each stale: what they hold was computed under the claim's earlier key
        store.path(platform, name).parent.mkdir(parents=True, exist_ok=True)
        store.path(platform, name).touch()
    machines = {"tcp://a": machine("AVX2", "aaaa")}
    update = Sweep(seeds=1, stale_only=True)
    assert plan(machines, store, update, axes=["init"])[0] == []
    jobs, _ = plan(machines, store, replace(update, new_reference=True), axes=["init"])
    assert sorted(j.variant.name for j in jobs) == ["init-seed-1", "threads-2", "workshop"]
    assert all(j.claims is None for j in jobs)  # nothing of them is on this machine yet
