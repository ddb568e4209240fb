"""The sweep: every claim under other arithmetic and other seeds, on a Dask cluster.

    python -m claimlog.sweep                     # an embedded local cluster, one worker per core
    python -m claimlog.sweep --scheduler tcp://host:8786   # a cluster already running
    python -m claimlog.sweep --here              # add this machine's own platform
    python -m claimlog.sweep --release           # add the torch installed here (nox -s torch-X)

in a workshop's folder (bnvg's own command is `python -m bnvg.sweep`).

By default it runs the workshop under the reference kernels and under each setting varied
from them (`claimlog.sweep.variants`) on every kind of machine the cluster has, and 32 minibatch
orders and 32 sets of starting weights: about 70 claims sessions, each a job whose result is
a fragment under snapshots/evidence/fragments/. Fragments already there are not computed
again, so a killed sweep resumes where it stopped. When every fragment is there it merges
them, with the published log, into snapshots/evidence/{fragility,robustness}.{json,md} and
the documentation's generated sections (docs/sweep.md, docs/platforms.md), and says which
claims changed verdict since the committed tables.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from claimlog.declaration import Declaration


def main(
    argv: list[str] | None = None,
    project: Path | None = None,
    prog: str = "python -m claimlog.sweep",
) -> int:
    """The sweep of the workshop in `project` (by default the current folder), as its own
    command (`prog`: a workshop may give it its own, as `python -m bnvg.sweep` does)."""
    from claimlog.declaration import declared_in
    from claimlog.sweep.variants import SEEDS

    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    where = parser.add_argument_group("where it runs")
    what = parser.add_argument_group("what it measures (default: every variant and seed)")
    written = parser.add_argument_group("where it writes")
    where.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="submit to this Dask scheduler (default: start a local cluster)",
    )
    where.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="workers of the local cluster, one thread each (default: one per core)",
    )
    what.add_argument("--seeds", type=int, default=SEEDS, help="seeds per axis (default 32)")
    where.add_argument(
        "--one-at-a-time",
        action="store_true",
        help="train each seed's networks in its own job, never a batch of seeds together "
        "(the same bits: together is kept only where its first seed matches its training alone)",
    )
    what.add_argument(
        "--no-kernels",
        action="store_true",
        help="leave out the variants of the reference that change one setting everywhere "
        "alike (ATen's scalar and AVX-512 kernels, two threads)",
    )
    what.add_argument(
        "--here",
        action="store_true",
        help="only this machine's own platforms (the workshop under the reference kernels, "
        "with the kernel variables you set, and under --native-kernels), to add them to the "
        "evidence; then merge",
    )
    what.add_argument(
        "--release",
        action="store_true",
        help="only the workshop under the reference kernels on this machine, computed by the "
        "torch installed here: a torch release's fragment (what `nox -s torch-<release>` "
        "runs); then merge",
    )
    what.add_argument(
        "--select",
        metavar="EXPR",
        help="only the claims matching this -k expression (a quick look; the tables then "
        "cover only those claims)",
    )
    written.add_argument(
        "--project",
        type=Path,
        default=project or Path.cwd(),
        help="the project whose claims run and whose evidence folder receives the fragments "
        "and tables (default: %(default)s)",
    )
    written.add_argument(
        "--merge-only",
        action="store_true",
        help="compute nothing: merge the fragments already there into the tables",
    )
    args = parser.parse_args(argv)
    if args.seeds < 0 or args.workers < 1:
        parser.error("--seeds must be at least 0 and --workers at least 1")
    if not (args.project / "claims").is_dir():
        parser.error(f"{args.project} has no claims/ folder: give the project with --project")
    try:
        workshop = declared_in(args.project)
    except ValueError as error:
        parser.error(str(error))
    return sweep(args, workshop)


def sweep(args: argparse.Namespace, workshop: Declaration) -> int:
    import dask
    from distributed import Client, LocalCluster

    from claimlog.evidence.fragments import FragmentStore
    from claimlog.evidence.keys import claim_keys
    from claimlog.kernels import reference_kernels
    from claimlog.places import Places
    from claimlog.runner import selected
    from claimlog.store import unfinished_writes
    from claimlog.sweep import cluster, merge, report
    from claimlog.sweep.job import pack

    places = Places(args.project.resolve())
    keys = claim_keys(places, workshop)
    everything = FragmentStore(places.fragments, keys)
    # The claims this sweep computes: all, or those its --select picks.
    store = FragmentStore(places.fragments, selected(keys, args.select))
    stale = everything.stale()
    for path in unfinished_writes(places.fragments):  # a killed sweep's, resumed here
        path.unlink()
        print(f"deleted what a killed sweep left half written: {path.relative_to(places.root)}")
    for line in report.stale_evidence(store.stale_claims(), len(store.paths())):
        print(line)
    if not args.merge_only:
        kernels = sorted(reference_kernels(places.environment))
        # Only the platforms of the variants the plan runs are measured.
        varied = cluster.varies_one_setting(not args.no_kernels, args.here, args.release)
        with contextlib.ExitStack() as running:
            if args.scheduler:
                client = running.enter_context(Client(args.scheduler))
                machines = cluster.worker_machines(client, kernels, varied)
                cache_dir = None  # each worker keeps its own cache (`job.worker_cache`)
            else:
                cache = places.root / ".pytest_cache"  # resumes reuse trained runs
                machines = {cluster.HERE: cluster.machine_here(cache, kernels, varied)}
                cache_dir = str(cache)
            jobs, total = cluster.plan(
                machines,
                store,
                args.seeds,
                workshop.seed_axes(),
                kernels=not args.no_kernels,
                here_only=args.here,
                release_only=args.release,
            )
            failed: list[str] = []
            if not jobs:
                print(cluster.nothing_to_compute(total))
            else:
                if not args.scheduler:  # a cluster on this machine, only for jobs to run
                    # Its workers start under the reference kernels, as a claims session
                    # would set them: numpy reads its cap once, at import, and a worker
                    # imports numpy before any job runs. So a job under the reference kernels
                    # runs in the worker itself (`claimlog.sweep.job`).
                    running.enter_context(dask.config.set(cluster.reference_environment()))
                    local = running.enter_context(
                        LocalCluster(
                            # No more workers than jobs: each starts a Python that
                            # imports torch, for nothing if no job is left for it.
                            n_workers=min(args.workers, len(jobs)),
                            threads_per_worker=1,
                            processes=True,
                            dashboard_address=None,
                            silence_logs=logging.ERROR,
                        )
                    )
                    client = running.enter_context(Client(local))
                project = pack(places.root)
                failed = cluster.run(
                    client,
                    jobs,
                    total,
                    project,
                    store,
                    args.select,
                    cache_dir,
                    together=not args.one_at_a_time,
                )
        if failed:
            print(f"{len(failed)} jobs failed ({', '.join(failed)}); the tables were not written")
            return 1
        # A fragment with nothing fresh that this sweep could not compute again (another
        # machine's, another torch's) is no evidence for any claim: it goes, rather than wait
        # to mislead. One with fresh parts keeps them.
        for path in everything.stale():
            path.unlink()
            print(f"deleted a stale fragment: {path.relative_to(places.root)}")
            if not any(path.parent.iterdir()):
                path.parent.rmdir()
    elif stale:
        print(f"merging without the {len(stale)} stale fragments")
    before = _load(places.robustness_json)
    merged = merge.merge_folder(places, workshop)
    pages = merge.write(merged, places, workshop)
    wrote = [places.fragility_json, places.robustness_json]
    print(
        "wrote "
        + " and ".join(str(p.relative_to(places.root)) for p in wrote)
        + ", their .md"
        + (", and the generated sections of docs/" if pages else "")
    )
    changes = report.changed(before, merged.robustness, workshop) if before else []
    print(
        "claims whose verdict over seeds changed since the committed table:"
        + ("" if changes else " none")
    )
    for line in changes:
        print(f"  {line}")
    return 0


def _load(path: Path) -> dict:  # type: ignore[type-arg]
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return {}


if __name__ == "__main__":
    sys.exit(main())
