"""Running the sweep's jobs on a Dask cluster, and saying how far it got.

`plan` asks every worker which platform it computes on (its CPU capability, its torch build),
then lists the jobs whose fragments are still missing: the workshop on each platform, the
kernel variants this cluster's best platform can emulate, and every seed. `run` submits them,
writes each fragment as it arrives (so an interrupted sweep resumes where it stopped), and
prints progress: jobs done of all, those running, and an estimate of the time left.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from distributed import Client, as_completed

from bnvg.sweep.fragments import Fragment, FragmentStore, platform_id
from bnvg.sweep.job import run_variant
from bnvg.sweep.variants import WORKSHOP, Variant, kernel_variants, seed_variants

Say = Callable[[str], None]


def _platform_here() -> dict[str, str]:
    """The platform this worker process computes on (run on the worker)."""
    from bnvg.experiment.platform import current

    return current(threads=1)


@dataclass(frozen=True)
class Job:
    variant: Variant
    workers: tuple[str, ...] | None  # None: any worker


def worker_platforms(client: Client) -> dict[str, dict[str, str]]:
    """Each worker's address and platform."""
    platforms: dict[str, dict[str, str]] = client.run(_platform_here)
    return platforms


def plan(
    client: Client, store: FragmentStore, seeds: int, kernels: bool = True
) -> tuple[list[Job], int]:
    """(the jobs still to run, how many the whole sweep has)."""
    platforms = worker_platforms(client)
    by_platform: dict[str, list[str]] = {}
    for address, p in sorted(platforms.items()):
        by_platform.setdefault(platform_id(p), []).append(address)
    wanted: list[Job] = []
    todo: list[Job] = []
    for pid, addresses in by_platform.items():
        wanted.append(Job(WORKSHOP, tuple(addresses)))  # the workshop itself, on each platform
        if not store.has(pid, WORKSHOP.name):
            todo.append(wanted[-1])
    if kernels:
        best = max(platforms.values(), key=lambda p: _rank(p["cpu capability"]))
        for v in kernel_variants(best["cpu capability"]):
            wanted.append(Job(v, None))
            cap, threads = str(v.capability).upper(), str(v.threads)
            emulated = {**best, "cpu capability": cap, "torch threads": threads}
            if not store.has(platform_id(emulated), v.name):
                todo.append(Job(v, None))
    for v in seed_variants(seeds):
        wanted.append(Job(v, None))
        if not store.platforms_of(v.name) & set(by_platform):
            todo.append(Job(v, None))
    return todo, len(wanted)


def _rank(capability: str) -> int:
    order = ["DEFAULT", "AVX2", "AVX512"]
    return order.index(capability.upper()) if capability.upper() in order else len(order)


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds + 0.5), 60)
    return f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"


def run(
    client: Client,
    jobs: Sequence[Job],
    total: int,
    project: bytes,
    store: FragmentStore,
    select: str | None = None,
    cache_dir: str | None = None,
    say: Say = print,
) -> list[str]:
    """Run `jobs`, writing each fragment as it arrives; return the names of those that failed."""
    if not jobs:
        say(f"all {total} fragments of the sweep are there: nothing to compute")
        return []
    already = total - len(jobs)
    say(
        f"{len(jobs)} of {total} jobs to run"
        + (f" ({already} fragments already there)" if already else "")
        + f", on {len(client.scheduler_info()['workers'])} workers"
    )
    shared = client.scatter(project, broadcast=True)
    session = uuid.uuid4().hex[:8]
    futures: dict[Any, Job] = {}
    for number, job in enumerate(jobs):
        # A platform's own workshop run must run on a worker of that platform.
        placement = (
            {"workers": list(job.workers), "allow_other_workers": False} if job.workers else {}
        )
        future = client.submit(
            run_variant,
            job.variant,
            shared,
            select,
            cache_dir,
            # Unique per job: the workshop runs once per platform under one variant name.
            key=f"bnvg-{job.variant.name}-{number}-{session}",
            pure=False,
            **placement,
        )
        futures[future] = job
    failed: list[str] = []
    start = time.monotonic()
    workers = max(1, len(client.scheduler_info()["workers"]))
    for i, future in enumerate(as_completed(futures), start=1):
        job = futures[future]
        try:
            fragment = Fragment.from_json(future.result())
        except Exception as error:  # a job's failure is reported; the others go on
            failed.append(job.variant.name)
            say(f"[{already + i}/{total}] {job.variant.name} FAILED: {error}")
            continue
        store.write(fragment)
        elapsed = time.monotonic() - start
        left = (elapsed / i) * (len(jobs) - i) / min(workers, max(1, len(jobs) - i))
        running = _running(client, futures)
        say(
            f"[{already + i}/{total}] {job.variant.name} on {fragment.platform_id}"
            + (f"; running: {', '.join(running)}" if running else "")
            + (f"; about {_clock(left)} left" if i < len(jobs) else f"; done in {_clock(elapsed)}")
        )
    return failed


def _executing(dask_worker: Any) -> list[str]:
    """The keys of the tasks a worker is executing now (run on the worker)."""
    return [str(task.key) for task in dask_worker.state.executing]


def _running(client: Client, futures: dict[Any, Job]) -> list[str]:
    """The variants being computed now (not those merely waiting on a worker)."""
    executing = {key for keys in client.run(_executing).values() for key in keys}
    return sorted(job.variant.name for f, job in futures.items() if f.key in executing)
