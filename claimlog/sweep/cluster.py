"""Running the sweep's jobs on a Dask cluster, and saying how far it got.

`plan` takes what machine each worker is (its CPU, its torch build, the widest kernels it
runs: `worker_machines` asks a running cluster's workers; a cluster of this machine's is this
machine, `machine_here`, known before any worker starts), then lists the jobs whose fragments
are still missing: on each kind of machine the
reference, MKL's own path and the machine's native kernels; once, the reference with one
setting varied (ATen's scalar or AVX-512 kernels, two threads); and every seed, under the
reference kernels. `run` submits them,
writes each fragment as it arrives (so an interrupted sweep resumes where it stopped), and
prints progress: jobs done of all, those running, and an estimate of the time left.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import dask
from distributed import Client, LocalCluster, as_completed

from claimlog.declaration import Declaration
from claimlog.evidence.fragments import Fragment, FragmentStore, Variant
from claimlog.evidence.keys import code_of
from claimlog.kernels import fingerprint_under, reference_kernels
from claimlog.machine import TORCH_FACTS_FOLDER
from claimlog.places import Places
from claimlog.platform import (
    NOT_SET,
    TORCH_REFERENCE,
    VARIABLES,
    Platform,
    apply,
)
from claimlog.sweep.job import (
    WAIT_PASSIVELY,
    Checkout,
    pack,
    run_batch,
    run_variant,
    worker_cache,
)
from claimlog.sweep.progress import PROGRESS, Estimate, Kind
from claimlog.sweep.variants import (
    ATEN_AVX512,
    MKL_AUTO,
    NATIVE,
    WORKSHOP,
    one_setting_varied,
    per_machine,
    seed_variants,
)


@dataclass(frozen=True)
class Machine:
    """What a worker is: its platform as it records it, the kernel variables its own user
    set there, and the widest ATen kernels its CPU runs."""

    platform: Platform
    user_set: Mapping[str, str]
    best_aten: str
    # What the workshop's kernels give under each platform variant's settings, by its name
    # (seed variants compute under the workshop's own): measured on the machine.
    fingerprints: Mapping[str, str] = field(default_factory=dict)

    def runs(self, variant: Variant) -> Platform:
        """The platform `variant` computes on here: the reference kernels or the machine's
        own, then what the worker's user set (a worker started with
        ATEN_CPU_CAPABILITY=default is such a platform), then the variant's one setting, as
        the job's session will decide them; and the fingerprint they give here."""
        named = self.platform.with_settings(
            variables(variant, self.user_set), variant.threads, self.best_aten
        )
        fingerprint = self.fingerprints.get(
            variant.name if variant.axis == "platform" else WORKSHOP.name, ""
        )
        return replace(named, fingerprint=fingerprint)


def variables(variant: Variant, user_set: Mapping[str, str]) -> dict[str, str]:
    """The kernel variables a job of `variant` computes under (NOT_SET: the machine's)."""
    chosen = {name: NOT_SET for name in VARIABLES}
    if not variant.native:
        chosen.update(TORCH_REFERENCE)
    chosen.update(user_set)
    chosen.update(dict(variant.settings))
    return chosen


def _machine_here(
    cache: Path | None, kernels: Sequence[str], varied: bool, threads: int = 1
) -> dict[str, Any]:
    """This process's machine, as JSON (torch's own CPU check, whatever the variables say),
    with the fingerprint of the workshop's `kernels` under each platform variant's settings
    that the sweep runs (those that vary one setting only if `varied`; the machine's own on
    `threads`).
    `cache`: the pytest cache its jobs keep torch's facts in (`torch_facts`): once a job or
    an earlier sweep asked torch there, nobody imports torch to ask again."""
    from claimlog.machine import numpy_reference, numpy_simd, torch_facts
    from claimlog.platform import NUMPY_VARIABLE, set_by_user
    from claimlog.store import Store

    facts = torch_facts(Store(cache / "d" / TORCH_FACTS_FOLDER) if cache else None)
    # A kernel variable a claimlog process set (inherited from whatever started this worker) is
    # no choice of this machine's user: each job's session decides it again.
    user_set = {name: os.environ[name] for name in set_by_user()}
    here = Platform.here(threads=1, facts=facts)
    if NUMPY_VARIABLE not in user_set:
        # Every job's session caps numpy as the reference does (under its native kernels too).
        here = replace(here, numpy_simd=numpy_simd(without=numpy_reference().split()))
    best = facts["widest capability"]
    store = cache / "d" / TORCH_FACTS_FOLDER if cache else None
    own = [replace(v, threads=threads) for v in per_machine()]
    variants = [*own, *(one_setting_varied(avx512=best == "AVX512") if varied else [])]
    fingerprints = {
        v.name: fingerprint_under(variables(v, user_set), v.threads, kernels, store)
        for v in variants
    }
    return {
        "platform": here.to_json(),
        "user set": user_set,
        "best": best,
        "fingerprints": fingerprints,
    }


def _machine(found: Mapping[str, Any]) -> Machine:
    return Machine(
        Platform.from_json(found["platform"]),
        found["user set"],
        found["best"],
        found.get("fingerprints", {}),
    )


# The one "address" of a cluster this sweep starts on this machine: its workers, started with
# this process's variables, are all this machine, so a job may run on any of them.
HERE = "this machine"


def machine_here(
    cache: Path, kernels: Sequence[str], varied: bool = True, threads: int = 1
) -> Machine:
    """This machine, as each worker of a cluster started here will be (`HERE`): asked before
    starting one, so that a sweep with nothing to compute starts none. `cache`: the pytest
    cache of the sweep's jobs; `kernels`: the workshop's, as the reference records them;
    `varied`: whether the sweep runs the variants that change one setting (`plan`'s
    `kernels`); `threads`: those its own platforms compute with (`Sweep.threads`)."""
    return _machine(_machine_here(cache, kernels, varied, threads))


def _worker_machine(
    kernels: Sequence[str], varied: bool, threads: int, dask_worker: Any
) -> dict[str, Any]:
    """The machine of the worker this runs on (`client.run` hands it `dask_worker`: it runs in
    no task, where `get_worker` would find it), with its jobs' cache (`job.worker_cache`)."""
    return _machine_here(worker_cache(dask_worker), kernels, varied, threads)


@dataclass(frozen=True)
class Job:
    variant: Variant
    workers: tuple[str, ...] | None  # None: any worker
    claims: tuple[str, ...] | None = None  # the stale claims it computes (None: every claim)


def worker_machines(
    client: Client, kernels: Sequence[str], varied: bool = True, threads: int = 1
) -> dict[str, Machine]:
    """Each worker's address and machine (`machine_here`)."""
    found: dict[str, dict[str, Any]] = client.run(_worker_machine, list(kernels), varied, threads)
    return {address: _machine(m) for address, m in found.items()}


@dataclass(frozen=True)
class Sweep:
    """What one sweep computes, and where: the options of `python -m claimlog.sweep`, and of
    the sweep an update runs first (`claimlog.sweep.plugin`)."""

    seeds: int  # per seed axis
    scheduler: str | None = None  # a running Dask cluster's address; None: start one here
    workers: int = field(default_factory=lambda: os.cpu_count() or 1)  # the local cluster's
    select: str | None = None  # only the claims this -k expression picks
    together: bool = True  # seeds in batches, trained together (`run_batch`)
    kernels: bool = True  # the variants that change one setting of the reference
    here_only: bool = False  # --here: this machine's own platforms
    threads: int = 1  # --threads: those its own platforms compute with
    release_only: bool = False  # --release: the torch installed here
    # Only what the evidence holds and is stale: no platform or seed it lacks is added (an
    # update brings the record up to the checkout; adding to it is the sweep's own job).
    stale_only: bool = False
    # An update on a platform other than the recorded reference records this machine's numbers
    # as the reference: the reference's own jobs the evidence holds (the workshop, the settings
    # varied one at a time, the seeds) are computed again on it, wherever they ran before.
    new_reference: bool = False
    cache: Path | None = None  # the project's pytest cache (default: its .pytest_cache)

    @property
    def varies_one_setting(self) -> bool:
        """Whether it runs the variants of the reference that change one setting (and so
        measures their platforms first): a whole sweep does, unless told `--no-kernels`."""
        return self.kernels and not (self.here_only or self.release_only)


def plan(
    machines: Mapping[str, Machine], store: FragmentStore, sweep: Sweep, axes: Sequence[str] = ()
) -> tuple[list[Job], int]:
    """(the jobs of `sweep` still to run, how many the whole sweep has). `sweep.here_only`
    (`--here`): only each machine's own platforms, the workshop under the reference kernels
    (with whatever kernel variables the user set) and under its native kernels.
    `sweep.release_only` (`--release`): only the first, the workshop under the reference
    kernels: a torch release's fragment, computed by the torch the workers run. `machines`:
    each worker's address and machine, or `{HERE: machine_here()}`. `sweep.seeds`: how many
    of each seed axis of the workshop's (`axes`). `sweep.stale_only`: only the jobs whose
    fragment the store holds, stale (what an update computes: it adds no platform or seed
    the evidence lacks; with `sweep.new_reference`, the reference's own jobs land on this
    machine's platforms). `sweep.threads`: those each machine's own platforms compute with."""

    def on(addresses: Sequence[str]) -> tuple[str, ...] | None:
        return None if HERE in machines else tuple(addresses)

    by_cpu: dict[str, list[str]] = {}  # one kind of machine: its CPU, torch and numpy
    for address, m in sorted(machines.items()):
        by_cpu.setdefault(m.runs(MKL_AUTO).id, []).append(address)
    own = [WORKSHOP, NATIVE] if sweep.here_only else per_machine()
    own = [replace(v, threads=sweep.threads) for v in ([WORKSHOP] if sweep.release_only else own)]
    everything = not (sweep.here_only or sweep.release_only)
    # The reference's own jobs (the workshop, the variants of one setting, and the seeds) run
    # on one kind of machine (the first, in a fixed order; ATen's AVX-512 kernels on the first
    # that has them), so that where their fragments land (the platform that kind computes on)
    # is known before they run.
    kinds = [addresses for _, addresses in sorted(by_cpu.items())]
    first = next(iter(kinds), [])
    # Each job, the platform its fragment lands in, and whether it is the reference's own.
    wanted: list[tuple[Job, str, bool]] = []
    for addresses in by_cpu.values():
        machine = machines[addresses[0]]
        for v in own:
            of_reference = v.name == WORKSHOP.name and addresses == first
            wanted.append((Job(v, on(addresses)), machine.runs(v).id, of_reference))
    if sweep.varies_one_setting:
        avx512 = next((k for k in kinds if machines[k[0]].best_aten == "AVX512"), [])
        for v in one_setting_varied(avx512=bool(avx512)):
            kind = avx512 if v is ATEN_AVX512 else first
            wanted.append((Job(v, on(kind)), machines[kind[0]].runs(v).id, True))
    if everything:
        reference = machines[first[0]].runs(WORKSHOP).id
        seeds = seed_variants(axes, sweep.seeds)
        wanted += [(Job(v, on(first)), reference, True) for v in seeds]
    held = store.variants() if sweep.new_reference else set()
    todo = []
    for job, pid, of_reference in wanted:
        name = job.variant.name
        if sweep.stale_only and not (
            store.path(pid, name).exists() or (of_reference and name in held)
        ):
            continue
        stale = store.to_compute(pid, job.variant.name)
        if stale:
            every = len(stale) == len(store.current)
            todo.append(replace(job, claims=None if every else tuple(stale)))
    return todo, len(wanted)


def compute(
    places: Places,
    workshop: Declaration,
    store: FragmentStore,
    sweep: Sweep,
    say: Callable[[str], None] = print,
) -> list[str]:
    """Compute the fragments `store` lacks, or holds stale, on the embedded local cluster (one
    worker per core, started only if there is a job to run) or on `sweep.scheduler`'s;
    write each into `store` as it arrives, and say how it goes. Returns the names of the
    jobs that failed."""
    kernels = sorted(reference_kernels(places.environment))
    # Only the platforms of the variants the plan runs are measured.
    varied = sweep.varies_one_setting
    with contextlib.ExitStack() as running:
        if sweep.scheduler:
            client = running.enter_context(Client(sweep.scheduler))
            machines = worker_machines(client, kernels, varied, sweep.threads)
            cache_dir = None  # each worker keeps its own cache (`job.worker_cache`)
        else:
            cache = sweep.cache or places.root / ".pytest_cache"  # resumes reuse trained runs
            machines = {HERE: machine_here(cache, kernels, varied, sweep.threads)}
            cache_dir = str(cache)
        jobs, total = plan(machines, store, sweep, workshop.seed_axes())
        if not jobs:
            say(nothing_to_compute(total))
            return []
        if not sweep.scheduler:  # a cluster on this machine, only for jobs to run
            # Its workers start under the reference kernels, as a claims session would set
            # them: numpy reads its cap once, at import, and a worker imports numpy before any
            # job runs. So a job under the reference kernels runs in the worker itself
            # (`claimlog.sweep.job`).
            running.enter_context(dask.config.set(reference_environment()))
            local = running.enter_context(
                LocalCluster(
                    # No more workers than jobs: each starts a Python that imports torch, for
                    # nothing if no job is left for it.
                    n_workers=min(sweep.workers, len(jobs)),
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                    silence_logs=logging.ERROR,
                )
            )
            client = running.enter_context(Client(local))
        checkout = Checkout(store.current, code_of(workshop))
        return run(
            client,
            jobs,
            total,
            pack(places.root),
            checkout,
            store,
            sweep.select,
            cache_dir,
            together=sweep.together,
            say=say,
        )


def reference_environment() -> dict[str, dict[str, Any]]:
    """Dask's configuration for local workers that start under the reference kernels: the
    variables a claims session sets (`Platform.apply`), marked as claimlog's own so that a job's
    own process decides torch's again (`--native-kernels`), set before each worker's process
    is spawned (what Dask's `pre-spawn-environ` is for: numpy reads them at import)."""
    env = dict(os.environ)
    apply(environ=env)
    spawned = dict(dask.config.get("distributed.nanny.pre-spawn-environ") or {})
    spawned.update({k: v for k, v in env.items() if os.environ.get(k) != v})
    spawned = {**WAIT_PASSIVELY, **spawned}  # what the user's Dask configuration says wins
    return {"distributed.nanny.pre-spawn-environ": spawned}


def nothing_to_compute(total: int) -> str:
    """What a sweep whose fragments are all there says."""
    there = "the one fragment asked for is" if total == 1 else f"all {total} fragments are"
    return f"nothing to compute: {there} there"


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds + 0.5), 60)
    return f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"


BATCH = 32  # seeds a task trains together at the most


def batches(jobs: Sequence[Job], workers: int) -> list[list[Job]]:
    """The tasks `jobs` run as: the seed variants that compute the same claims on the same
    workers in batches (`run_batch`), as many as there are workers and none larger than
    `BATCH`, each one's seeds trained together; every other job alone. Batches first, as
    they are the longest, but for one job alone of one thread, which goes to the last
    worker before its batch: until a job alone has ended, the estimate of the time left
    takes each to cost what a seed does alone, and they cost less (each worker still gets a
    batch, and its share of the rest)."""
    alike: dict[tuple[object, object], list[Job]] = {}
    for job in jobs:
        if job.variant.axis != "platform":
            alike.setdefault((job.claims, job.workers), []).append(job)
    grouped: list[list[Job]] = []
    for seeds in alike.values():
        count = min(len(seeds), max(workers, -(-len(seeds) // BATCH)))
        size = -(-len(seeds) // count)
        grouped += [seeds[i : i + size] for i in range(0, len(seeds), size)]
    grouped = [g for g in grouped if len(g) > 1]
    batched = {id(j) for group in grouped for j in group}
    # The longest first, so that none is left to end the sweep alone: a job of more threads
    # shares the machine's cores with the others' (a stable sort: else the plan's order).
    alone = sorted(([j] for j in jobs if id(j) not in batched), key=lambda t: -t[0].variant.threads)
    # The job measured early is one of a process of its own where there is one: those cost
    # their process's start and their own training, and most of the jobs alone are of them.
    early = next(
        (t for t in alone if kind_of(t[0].variant) == (1, True) and t[0].workers is None),
        next((t for t in alone if t[0].variant.threads == 1 and t[0].workers is None), None),
    )
    if early is None or not grouped:
        return [*grouped, *alone]
    alone.remove(early)
    before = max(0, min(len(grouped), workers) - 1)
    return [*grouped[:before], early, *grouped[before:], *alone]


def run(
    client: Client,
    jobs: Sequence[Job],
    total: int,
    project: bytes,
    checkout: Checkout,
    store: FragmentStore,
    select: str | None = None,
    cache_dir: str | None = None,
    together: bool = True,
    say: Callable[[str], None] = print,
) -> list[str]:
    """Run `jobs` (at least one), writing each fragment as it arrives; return the names of
    those that failed; each line of progress goes to `say`. Seeds run in batches, each
    trained together (`batches`; not with `together` False). The count is in jobs; the time
    left is estimated from what the batches measured as they went
    (`claimlog.sweep.progress`), said as each task ends and every `PERIOD` seconds between;
    the floor the sweep is measured against is every job's
    computations one at a time (a batch's first seed trains alone: what each of its seeds
    would cost)."""
    already = total - len(jobs)
    workers = max(1, len(client.scheduler_info()["workers"]))
    tasks = batches(jobs, workers) if together else [[j] for j in jobs]
    batched = sum(len(t) for t in tasks if len(t) > 1)  # seeds trained in batches
    say(
        f"{len(jobs)} of {total} jobs to run"
        + (f" ({already} fragments already there)" if already else "")
        + f", on {workers} worker{'s' if workers != 1 else ''}"
        + (f"; {batched} seeds in {_batches(tasks)}" if batched else "")
    )
    shared = client.scatter(project, broadcast=True)
    session = uuid.uuid4().hex[:8]

    def submit(number: int, task: list[Job]) -> Any:
        job = task[0]
        # A platform's own workshop run must run on a worker of that platform.
        placement = (
            {"workers": list(job.workers), "allow_other_workers": False} if job.workers else {}
        )
        # Unique per task: the workshop runs once per platform under one variant name.
        key = f"claimlog-{job.variant.name}-{number}-{session}"
        # A batch of seeds trains together (`run_batch`); any other job runs alone.
        batch = len(task) > 1
        runs: Callable[..., Any] = run_batch if batch else run_variant
        what = [j.variant for j in task] if batch else job.variant
        return client.submit(
            runs,
            what,
            shared,
            checkout,
            select,
            cache_dir,
            job.claims,
            key=key,
            pure=False,
            **placement,
        )

    # The tasks any worker may run go to Dask one per free worker, in the order `batches`
    # gives (handed over at once, Dask spreads them over the workers as they come, and a
    # batch may wait behind jobs alone while another worker idles); a machine's own, at once.
    numbered = list(enumerate(tasks))
    later = [(n, t) for n, t in numbered if t[0].workers is None]
    first = [(n, t) for n, t in numbered if t[0].workers is not None] + later[:workers]
    later = later[workers:]
    futures: dict[Any, list[Job]] = {submit(n, t): t for n, t in first}
    failed: list[str] = []
    start = said = time.monotonic()
    done = 0
    floor = spent = 0.0
    estimate = Estimate()
    pending = as_completed(futures)
    known = False  # whether the time left was said yet
    while not pending.is_empty():
        if not pending.has_ready():
            # Nothing ended: a batch may be long in its together training. What it measured
            # so far says how long the sweep has left, every PERIOD seconds; until it first
            # does, asked every few seconds, and said as soon as it is known.
            time.sleep(0.5)
            asked = time.monotonic()
            if asked - said >= (PERIOD if known else ASK):
                said = asked
                left, running = _standing(client, futures, later, estimate, workers)
                # Nothing running yet (a worker still starting): no time left worth saying.
                if left is not None and running:
                    known = True
                    now = ", ".join(running)
                    say(f"[{already + done}/{total}] running: {now}; about {_clock(left)} left")
            continue
        for future in pending.next_batch(block=False):
            said = time.monotonic()
            task = futures[future]
            if later:  # a worker came free: the next task in order
                number, following = later.pop(0)
                submitted = submit(number, following)
                futures[submitted] = following
                pending.add(submitted)
            try:
                answer = future.result()
                results = answer if len(task) > 1 else [answer]
            except Exception as error:  # a task's failure is reported; the others go on
                results = [{"failed": f"{type(error).__name__}: {error}"} for _ in task]
            # A batch's lead (`job.run_batch`) says what it found; one at a time, a seed
            # trained together would have trained as its lead did.
            lead = next((r for r in results if "together" in r), results[0])
            found = lead.get("together")
            alone = float(lead.get("alone", 0.0)) if found == "the same bits" else 0.0
            if len(task) == 1 and "seconds" in results[0]:
                took = estimate.took.setdefault(kind_of(task[0].variant), [])
                took.append(float(results[0]["seconds"]))
            written = []
            for job, result in zip(task, results, strict=True):
                done += 1
                if "failed" in result:
                    failed.append(job.variant.name)
                    say(f"[{already + done}/{total}] {job.variant.name} FAILED: {result['failed']}")
                    continue
                fragment = Fragment.from_json(result["fragment"])
                store.write(fragment)
                written.append(fragment)
                floor += float(result["computing"]) + (alone if result.get("kept together") else 0)
                spent += float(result["seconds"])
            if not written:
                continue
            elapsed = time.monotonic() - start
            left, running = _standing(client, futures, later, estimate, workers)
            known = known or left is not None
            named = task[0].variant.name
            if len(task) > 1:
                named += (
                    f" to {task[-1].variant.name} ({len(task)} seeds, trained together: {found})"
                )
            say(
                f"[{already + done}/{total}] {named} on {written[0].platform_id}"
                + (f"; running: {', '.join(running)}" if running else "")
                + (
                    f"; done in {_clock(elapsed)}"
                    if done == len(jobs)
                    else f"; about {_clock(left)} left"
                    if left is not None
                    else ""  # not known yet: no batch has said how fast it trains
                )
            )
    if spent:
        say(floor_said(time.monotonic() - start, floor, workers))
    return failed


PERIOD = 15.0  # seconds between the lines that say the time left while no task ends
ASK = 3.0  # seconds between asking for it until it is first known


def _standing(
    client: Client,
    futures: Mapping[Any, Sequence[Job]],
    later: Sequence[tuple[int, Sequence[Job]]],
    estimate: Estimate,
    workers: int,
) -> tuple[float | None, list[str]]:
    """Where the sweep stands, the cluster asked once: its time left (`Estimate`, from what
    its batches told so far; None while not known) and the tasks being computed now, by
    their first variant (a batch: "sampler-seed-1 and 31 more"). When the cluster cannot be
    asked (a worker lost: its tasks go on elsewhere), neither is said this time."""
    try:
        estimate.hear(client.get_events(PROGRESS))
        executing = {str(key) for keys in client.run(_executing).values() for key in keys}
    except Exception:
        return None, []
    running, waiting, names = {}, [], []
    for future, task in futures.items():
        shape = (len(task), kind_of(task[0].variant))
        if str(future.key) in executing:
            running[str(future.key)] = shape
            more = f" and {len(task) - 1} more" if len(task) > 1 else ""
            names.append(task[0].variant.name + more)
        elif not future.done():
            waiting.append(shape)
    waiting += [(len(t), kind_of(t[0].variant)) for _, t in later]
    return estimate.left(workers, running, waiting), sorted(names)


def kind_of(variant: Variant) -> Kind:
    """What a job alone costs like (`Estimate`): its thread count, and whether it runs in a
    process of its own (another kernel setting, or the machine's own kernels: it starts
    Python, imports torch and trains its runs there) or in its worker's (`job.in_this_process`
    on a local cluster)."""
    return variant.threads, bool(variant.settings or variant.native or variant.threads != 1)


def _batches(tasks: Sequence[Sequence[Job]]) -> str:
    n = sum(len(t) > 1 for t in tasks)
    return f"{n} batch{'es' if n != 1 else ''}"


def floor_said(elapsed: float, computing: float, workers: int) -> str:
    """The sweep's wall time against its floor: what its jobs' computations (training, the
    computed results) would take one at a time, shared by its workers."""
    floor = computing / workers
    return (
        f"the sweep took {_clock(elapsed)}; one at a time its computations take "
        f"{_clock(computing)}, over {workers} worker{'s' if workers != 1 else ''} a floor of "
        f"{_clock(floor)}: the sweep took {elapsed / floor:.2f}x its floor"
        if floor
        else f"the sweep took {_clock(elapsed)}"
    )


def _executing(dask_worker: Any) -> list[str]:
    """The keys of the tasks a worker is executing now (run on the worker)."""
    return [str(task.key) for task in dask_worker.state.executing]
