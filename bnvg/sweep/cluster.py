"""Running the sweep's jobs on a Dask cluster, and saying how far it got.

`plan` asks every worker what machine it is (its CPU, its torch build, the widest kernels it
runs), then lists the jobs whose fragments are still missing: on each kind of machine the
reference, MKL's own path and the machine's native kernels; once, the reference with one
setting varied (ATen's scalar or AVX-512 kernels, two threads); and every seed, under the
reference kernels. `run` submits them,
writes each fragment as it arrives (so an interrupted sweep resumes where it stopped), and
prints progress: jobs done of all, those running, and an estimate of the time left.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from distributed import Client, as_completed

from bnvg.experiment.kernels import REFERENCE
from bnvg.experiment.platform import NOT_SET, platform_id
from bnvg.sweep.fragments import Fragment, FragmentStore
from bnvg.sweep.job import run_variant
from bnvg.sweep.variants import (
    ATEN_AVX512,
    NATIVE,
    WORKSHOP,
    Variant,
    one_setting_varied,
    per_machine,
    seed_variants,
)

Say = Callable[[str], None]


def _machine_here() -> dict[str, str]:
    """This worker's machine: its platform as recorded, and the widest ATen kernels its CPU
    runs (run on the worker; torch's own CPU check, whatever the worker's variables say)."""
    import torch

    from bnvg.experiment.kernels import set_by_user
    from bnvg.experiment.platform import current

    best = "AVX512" if torch.cpu._is_avx512_supported() else "AVX2"
    if not torch.cpu._is_avx2_supported():
        best = "DEFAULT"
    # A kernel variable a bnvg process set (inherited from whatever started this worker) is
    # no choice of this machine's user: each job's session decides it again.
    chosen = set(set_by_user())
    inherited = {name: NOT_SET for name in REFERENCE if name not in chosen}
    return {**current(threads=1), **inherited, "best capability": best}


def predicted_platform(variant: Variant, machine: Mapping[str, str]) -> dict[str, str]:
    """The platform `variant` computes on when run on `machine` (as `_machine_here` says):
    the reference kernels or the machine's own, then what the worker's own environment
    sets (a worker started with ATEN_CPU_CAPABILITY=default is such a platform), then the
    variant's one setting, as the job's session will decide them."""
    env = dict(machine)
    env.update({name: NOT_SET for name in REFERENCE} if variant.native else REFERENCE)
    # `_machine_here` reports only the variables the worker's user set.
    env.update({n: machine[n] for n in REFERENCE if machine.get(n, NOT_SET) != NOT_SET})
    env.update(dict(variant.settings))
    aten = env["ATEN_CPU_CAPABILITY"]
    env["cpu capability"] = machine["best capability"] if aten == NOT_SET else aten.upper()
    env["torch threads"] = str(variant.threads)
    return env


@dataclass(frozen=True)
class Job:
    variant: Variant
    workers: tuple[str, ...] | None  # None: any worker


def worker_machines(client: Client) -> dict[str, dict[str, str]]:
    """Each worker's address and machine."""
    machines: dict[str, dict[str, str]] = client.run(_machine_here)
    return machines


def plan(
    client: Client,
    store: FragmentStore,
    seeds: int,
    kernels: bool = True,
    here_only: bool = False,
    release_only: bool = False,
) -> tuple[list[Job], int]:
    """(the jobs still to run, how many the whole sweep has). `here_only` (`--here`): only
    each machine's own platforms, the workshop under the reference kernels (with whatever
    kernel variables the user set) and under its native kernels. `release_only`
    (`--release`): only the first, the workshop under the reference kernels: a torch
    release's fragment, computed by the torch the workers run."""
    machines = worker_machines(client)
    by_cpu: dict[str, list[str]] = {}  # one kind of machine: its CPU, torch and numpy
    for address, m in sorted(machines.items()):
        by_cpu.setdefault(platform_id({**m, "MKL_CBWR": "AUTO"}), []).append(address)
    own = [WORKSHOP] if release_only else [WORKSHOP, NATIVE] if here_only else per_machine()
    everything = not (here_only or release_only)
    wanted: list[tuple[Job, str]] = []  # each job, and the platform its fragment lands in
    for addresses in by_cpu.values():
        machine = machines[addresses[0]]
        for v in own:
            wanted.append((Job(v, tuple(addresses)), platform_id(predicted_platform(v, machine))))
    if kernels and everything:
        any_machine = machines[sorted(machines)[0]]
        avx512 = [a for a, m in sorted(machines.items()) if m["best capability"] == "AVX512"]
        for v in one_setting_varied(avx512=bool(avx512)):
            workers = tuple(avx512) if v is ATEN_AVX512 else None
            wanted.append((Job(v, workers), platform_id(predicted_platform(v, any_machine))))
    if everything:
        # Seeds on one kind of machine (the first, in a fixed order), so that where their
        # fragments land is known before they run.
        first = next(iter(sorted(by_cpu.items())))[1]
        reference = platform_id(predicted_platform(WORKSHOP, machines[first[0]]))
        wanted += [(Job(v, tuple(first)), reference) for v in seed_variants(seeds)]
    todo = [job for job, pid in wanted if not store.has(pid, job.variant.name)]
    return todo, len(wanted)


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
        there = "the one fragment asked for is" if total == 1 else f"all {total} fragments are"
        say(f"nothing to compute: {there} there")
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
