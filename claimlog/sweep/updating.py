"""The update's sweep: `pytest --snapshot-update` brings the evidence up to the checkout first.

The sweep's evidence (snapshots/evidence/) is part of the record: each fragment holds, per
claim, what one platform or seed computed, under the key of the code that computed it
(`claimlog.evidence.keys`). After an edit, the parts whose claim's key changed are stale, and
an update that recorded the new numbers beside them would record a text judged without its
evidence. So, as `make` or `dvc repro` would, an update computes what the edit made stale
before any claim runs: the stale claims alone, on each platform and seed the evidence holds
and this machine can compute (the reference's kernels, MKL's own path, the native ones, the
settings varied one at a time, every seed), on the embedded Dask cluster (one worker per core)
or on `--scheduler`'s, saying its progress and the time left; then merges the tables and the
documentation's generated sections. It adds no platform or seed the evidence lacks: that is
the sweep's own job (`python -m claimlog.sweep`).

All of it happens inside the update's transaction (`claimlog.transaction`): an update in
which anything fails writes nothing, the evidence included. What the sweep computed is kept
in pytest's cache all the same (`FragmentStore.restore_kept`), so the next update, after the
author has fixed what failed, computes nothing again that is still fresh.

The plugin that runs it, where an update asks for it, is `claimlog.sweep.plugin`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from claimlog.evidence.fragments import FragmentStore

if TYPE_CHECKING:
    import pytest

    from claimlog.platform import Platform
    from claimlog.plugin.options import Settings
    from claimlog.plugin.session import ClaimSession

EVIDENCE_CACHE = "evidence"  # the fragments an update computed, in pytest's cache
SEED_FRAGMENT = re.compile(r"-seed-(\d+)$")


def bring_up_to_date(claims: ClaimSession, session: pytest.Session) -> None:
    """Compute the evidence of every claim whose key the committed tables hold stale, before
    the first claim runs, and merge the tables; `session.Failed` if it cannot."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")

    def say(line: str, **markup: bool) -> None:
        if reporter is not None:
            reporter.write_line(line, **markup)

    def stop(why: str) -> Exception:
        # pytest ends a session on `session.Failed` without a word: say why first.
        say(why, red=True, bold=True)
        return session.Failed(why)

    s = claims.settings
    places, workshop = s.places, claims.workshop
    # What the committed tables say is stale: once merged, a claim no fragment holds fresh
    # (only machines this one cannot be hold it) is not asked for again by the next update.
    stale = claims.evidence.stale_claims()
    if not stale:
        return
    if reporter is not None:
        reporter.write_sep("-", "the evidence, brought up to this checkout")
    n = len(stale)
    say(
        f"the evidence of {n} claim{'s' if n != 1 else ''} was computed from other code "
        "than this checkout's: computing it again, on each platform and seed the evidence "
        "holds that this machine computes"
    )
    kept = claims.cache.kept(EVIDENCE_CACHE)
    keys = claims.evidence.keys
    store = FragmentStore(places.fragments, keys, kept)
    try:
        from claimlog.sweep import cluster
    except ImportError as error:  # the engine's sweep extra is not installed
        raise stop(
            f"computing the stale evidence needs Dask ({error}): pip install "
            "'claimlog[sweep]', or update with --no-sweep"
        ) from None
    here, recorded = claims.here.platform, claims.here.reference()
    scheduler = session.config.getoption("claimlog_scheduler")
    new_reference = becomes_reference(here, recorded, s, scheduler)
    restored = store.restore_kept(here.identity() if new_reference else None)
    if restored:
        n = len(restored)
        say(
            f"reused {n} fragment{'s' if n != 1 else ''} an earlier update computed from "
            "this code (kept in pytest's cache)"
        )
    if new_reference and recorded is not None:
        say(
            f"this machine becomes the reference ({here.id}, not {recorded.id}): the "
            "reference's own evidence is computed on it"
        )
    options = cluster.Sweep(
        seeds=_seeds_held(store),
        scheduler=scheduler,
        stale_only=True,
        new_reference=new_reference,
        cache=kept.folder.parent.parent if kept is not None else None,
    )
    failed = cluster.compute(places, workshop, store, options, say=say)
    if failed:
        raise stop(
            f"{len(failed)} of the sweep's jobs failed ({', '.join(failed)}): the "
            "evidence is not up to date, and the update writes nothing"
        )
    from claimlog.sweep import merge

    for line in merge.retire_stale(places, FragmentStore(places.fragments, keys)):
        say(line)
    try:
        said = merge.merge_and_write(places, workshop, here.id if new_reference else None)
    except ValueError as error:
        raise stop(f"the evidence could not be merged: {error}") from None
    for line in said:
        say(line)
    claims.evidence.changed()


def rename_platforms(
    claims: ClaimSession, before: list[str], after: list[str], reference: str
) -> list[str]:
    """Under a full update that records other kernels than the record named (`before`, now
    `after`; `pytest_claimlog_kernels_changed`): the evidence's platforms were fingerprinted
    by the old kernels, and none can be compared with a platform fingerprinted by the new.
    Those this machine computes are named again: a fragment of a variant that lies on the
    platform this machine gives it under `before` is this machine's to name, by what the
    variant gives here under `after` (its numbers are what this machine computes either way).
    The others are another machine's, and retired: only there can it be said which platform
    they are of now. Then the tables are merged again, with `reference` for reference."""
    from claimlog.sweep import cluster, merge

    places = claims.settings.places
    # pytest's cache is only read here (the fingerprints the sweep kept): what the update's
    # sweep kept stays under the names it computed, in case the update rolls back.
    store = FragmentStore(places.fragments, claims.evidence.keys)
    kept = claims.cache.kept(EVIDENCE_CACHE)
    cache = kept.folder.parent.parent if kept is not None else places.root / ".pytest_cache"
    old, new = cluster.machine_here(cache, before), cluster.machine_here(cache, after)
    # Every move is planned before any is made: a fragment renamed is never taken for one
    # still to judge.
    renames, retired = {}, []
    for path in store.paths():
        variant = store.read(path).variant
        fingerprint = new.runs(variant).fingerprint
        if old.runs(variant).id == path.parent.name and fingerprint:
            renames[path] = fingerprint
        else:
            retired.append(path)
    for path in retired:
        path.unlink()
    for path, fingerprint in renames.items():
        store.rename(path, fingerprint)
    store.drop_empty_platforms()
    n = len(renames)
    said = [
        f"named {n} fragment{'s' if n != 1 else ''} of this machine's platforms by the "
        "fingerprints the new kernels give here"
    ]
    said += [
        f"retired {path.relative_to(places.root)}: another machine's, fingerprinted by the "
        "old kernels (the sweep computes it again there)"
        for path in retired
    ]
    try:
        said += merge.merge_and_write(places, claims.workshop, reference)
    except ValueError as error:  # --no-sweep left the evidence stale: the sweep merges it
        said.append(f"the tables are not merged again ({error})")
    claims.evidence.changed()
    return said


def becomes_reference(
    here: Platform, recorded: Platform | None, s: Settings, scheduler: str | None
) -> bool:
    """Whether this update's sweep computes the reference's own evidence on `here`: on a
    platform other than the `recorded` reference, the update records this machine's numbers
    as the reference (`claimlog.plugin.update`), so its evidence is of this one. Only where
    this session computes as the reference's own jobs would (the reference kernels and its
    threads, on this machine): under other settings, or on `--scheduler`'s machines, those
    jobs land on other platforms than this session's, and the reference stays."""
    return (
        recorded is not None
        and recorded.id != here.id
        and here.threads == recorded.threads
        and not (s.native_kernels or scheduler or "user" in s.kernels.values())
    )


def _seeds_held(store: FragmentStore) -> int:
    """The most seeds of any axis the evidence holds (its seed fragments' largest number):
    an update computes again every seed the evidence holds, and adds none."""
    names = store.variants()
    return max((int(m[1]) for n in names if (m := SEED_FRAGMENT.search(n))), default=0)
