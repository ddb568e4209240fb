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
        "--threads",
        type=int,
        default=1,
        help="with --here: the threads this machine's own platforms compute with (default: "
        "%(default)s, the reference's); a platform of its own, as a reader's laptop may be",
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
    if args.threads < 1 or (args.threads != 1 and not args.here):
        parser.error("--threads takes a count of at least 1, and only with --here")
    if not (args.project / "claims").is_dir():
        parser.error(f"{args.project} has no claims/ folder: give the project with --project")
    try:
        workshop = declared_in(args.project)
    except ValueError as error:
        parser.error(str(error))
    return sweep(args, workshop)


def sweep(args: argparse.Namespace, workshop: Declaration) -> int:
    from claimlog.evidence.fragments import FragmentStore
    from claimlog.evidence.keys import claim_keys
    from claimlog.places import Places
    from claimlog.runner import selected
    from claimlog.store import unfinished_writes
    from claimlog.sweep import cluster, merge, report

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
        options = cluster.Sweep(
            seeds=args.seeds,
            scheduler=args.scheduler,
            workers=args.workers,
            select=args.select,
            together=not args.one_at_a_time,
            kernels=not args.no_kernels,
            here_only=args.here,
            threads=args.threads,
            release_only=args.release,
        )
        failed = cluster.compute(places, workshop, store, options)
        if failed:
            print(f"{len(failed)} jobs failed ({', '.join(failed)}); the tables were not written")
            return 1
        for line in merge.retire_stale(places, everything):
            print(line)
    elif stale:
        print(f"merging without the {len(stale)} stale fragments")
    try:
        for line in merge.merge_and_write(places, workshop):
            print(line)
    except ValueError as error:  # no fresh fragment of the reference, say
        print(f"the tables were not written: {error}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
