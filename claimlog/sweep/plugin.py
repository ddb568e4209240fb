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

`--no-sweep` leaves the evidence stale (the claims that read it then fail, naming the sweep's
command); `-p no:claimlog.sweep` removes this plugin altogether. It is registered where a
workshop is declared, and does its work only in a full update of the workshop's own seeds, on
the controller, where some evidence is stale.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from claimlog.places import Places
    from claimlog.plugin.session import ClaimSession

NAME = "claimlog.sweep"  # this plugin's name: `-p no:claimlog.sweep`
EVIDENCE_CACHE = "evidence"  # the fragments an update computed, in pytest's cache
SEED_FRAGMENT = re.compile(r"-seed-(\d+)$")


# Loaded by its entry point before claimlog has set the reference kernels, this module
# imports nothing of the engine until a session is declared: numpy reads its cap once, when it
# is first imported, and the engine's evidence imports it.
@pytest.hookimpl(trylast=True)  # after claimlog's own, which makes the session
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    from claimlog.plugin.session import SESSION

    session = early_config.stash.get(SESSION, None)
    if session is not None:
        early_config.pluginmanager.register(UpdateSweep(session), f"{NAME}.update")


class UpdateSweep:
    """The update's sweep, registered where a workshop is declared (see the module)."""

    def __init__(self, session: ClaimSession) -> None:
        self.session = session
        self.active = False

    def pytest_addoption(self, parser: pytest.Parser) -> None:
        name = self.session.workshop.name
        group = parser.getgroup("claimlog-sweep", f"{name}: the evidence, under an update")
        group.addoption(
            "--no-sweep",
            dest="claimlog_no_sweep",
            action="store_true",
            help="under --snapshot-update, leave the sweep's stale evidence as it is instead of "
            "computing it first (the claims that read it fail, naming the sweep's command)",
        )
        group.addoption(
            "--scheduler",
            dest="claimlog_scheduler",
            metavar="ADDRESS",
            help="under --snapshot-update, compute the stale evidence on this Dask scheduler's "
            "cluster (default: an embedded local cluster, one worker per core)",
        )

    def _may_sweep(self, config: pytest.Config) -> bool:
        """Whether this session is one whose evidence this plugin brings up to date: a full
        update of the workshop's own seeds, on the controller, not told --no-sweep."""
        from claimlog.evidence.fragments import seed_variant_name
        from claimlog.plugin.options import is_controller, narrowed

        seeds = {a: config.getoption(f"claimlog_{a}_seed") for a in self.session.workshop.seeds}
        return (
            bool(getattr(config.option, "update_snapshots", False))
            and is_controller(config)
            and not narrowed(config)
            and seed_variant_name(seeds) is None
            and not config.getoption("claimlog_no_sweep")
            and not config.option.collectonly
        )

    @pytest.hookimpl(tryfirst=True, optionalhook=True)
    def pytest_xdist_auto_num_workers(self, config: pytest.Config) -> int | None:
        """An update that computes stale evidence runs its claims in one process: the
        sweep trains every run they read and keeps it in pytest's cache, so no worker would
        have anything to train (and none starts beside the sweep's cluster)."""
        if not self._may_sweep(config):
            return None
        from claimlog.evidence.fragility import load
        from claimlog.evidence.keys import claim_keys
        from claimlog.places import Places

        places, workshop = Places(config.rootpath), self.session.workshop
        table = load(places.fragility_json, workshop.sweep_command, workshop.seeds)
        return 0 if table.stale_claims(claim_keys(places, workshop)) else None

    def pytest_configure(self, config: pytest.Config) -> None:
        self.active = self.session.configured and self._may_sweep(config)

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        if not self.session.configured or not self.session.settings.update:
            return []
        stale = self.session.stale_claims()
        if not stale:
            return []
        name = self.session.workshop.name
        if self.active:
            return [
                f"{name}: this update computes the stale evidence first (--no-sweep leaves "
                "it stale)"
            ]
        return [
            f"{name}: this update leaves the stale evidence as it is: the claims that read "
            f"it fail ({self.session.workshop.sweep_command} computes it)"
        ]

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        """Before the first claim runs: the stale evidence computed, the tables merged."""
        if not self.active:
            return
        from claimlog.evidence.fragments import FragmentStore
        from claimlog.store import Store

        reporter = session.config.pluginmanager.get_plugin("terminalreporter")

        def say(line: str) -> None:
            if reporter is not None:
                reporter.write_line(line)

        claims = self.session
        s = claims.settings
        places, workshop = s.places, claims.workshop
        # What the committed tables say is stale: once merged, a claim no fragment holds fresh
        # (only machines this one cannot be hold it) is not asked for again by the next update.
        stale = claims.stale_claims()
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
        cache = getattr(session.config, "cache", None)
        kept = Store(cache.mkdir(claims.cache_folder(EVIDENCE_CACHE))) if cache else None
        store = FragmentStore(places.fragments, s.keys, kept)
        restored = store.restore_kept()
        if restored:
            n = len(restored)
            say(
                f"reused {n} fragment{'s' if n != 1 else ''} an earlier update computed from "
                "this code (kept in pytest's cache)"
            )
        try:
            from claimlog.sweep import cluster
        except ImportError as error:  # the engine's sweep extra is not installed
            raise session.Failed(
                f"computing the stale evidence needs Dask ({error}): pip install "
                "'claimlog[sweep]', or update with --no-sweep"
            ) from None
        options = cluster.Sweep(
            seeds=_seeds_held(places),
            scheduler=session.config.getoption("claimlog_scheduler"),
            workers=os.cpu_count() or 1,
            stale_only=True,
            cache=kept.folder.parent.parent if kept is not None else None,
        )
        failed = cluster.compute(places, workshop, store, options, say=say)
        if failed:
            raise session.Failed(
                f"{len(failed)} of the sweep's jobs failed ({', '.join(failed)}): the "
                "evidence is not up to date, and the update writes nothing"
            )
        from claimlog.sweep import merge

        for line in merge.retire_stale(places, FragmentStore(places.fragments, s.keys)):
            say(line)
        try:
            said = merge.merge_and_write(places, workshop)
        except ValueError as error:
            raise session.Failed(f"the evidence could not be merged: {error}") from None
        for line in said:
            say(line)
        claims.evidence_changed()


def _seeds_held(places: Places) -> int:
    """The most seeds of any axis the evidence holds (its seed fragments' largest number):
    an update computes again every seed the evidence holds, and adds none."""
    from claimlog.evidence.fragments import SUFFIX

    found = [
        int(m[1])
        for path in places.fragments.glob(f"*/*{SUFFIX}")
        if (m := SEED_FRAGMENT.search(path.name.removesuffix(SUFFIX)))
    ]
    return max(found, default=0)
