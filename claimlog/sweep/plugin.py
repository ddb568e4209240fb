"""The update's sweep, a feature plugin: `pytest --snapshot-update` brings the evidence up to
the checkout before any claim runs (`claimlog.sweep.updating` says how).

`--no-sweep` leaves the evidence stale (the claims that read it then fail, naming the sweep's
command); `-p no:claimlog.sweep` removes this plugin altogether. It is registered where a
workshop is declared, and does its work only in a full update of the workshop's own seeds, on
the controller, where some evidence is stale; only then does it import the sweep.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from claimlog.plugin.session import ClaimSession

NAME = "claimlog.sweep"  # this plugin's name: `-p no:claimlog.sweep`


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
        from claimlog.declaration import seed_variant_name
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
        stale = self.session.evidence.stale_claims()
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
        if self.active:
            from claimlog.sweep.updating import bring_up_to_date

            bring_up_to_date(self.session, session)

    def pytest_claimlog_kernels_changed(
        self, before: list[str], after: list[str], reference: str
    ) -> list[str] | None:
        """A full update recorded other kernels: the evidence's platforms named again by them
        (`claimlog.sweep.updating.rename_platforms`), whether or not this update swept."""
        try:
            from claimlog.sweep import cluster  # noqa: F401  (Dask, which the renaming asks)
        except ImportError:  # the engine's sweep extra is not installed: nobody answers
            return None
        from claimlog.sweep.updating import rename_platforms

        return rename_platforms(self.session, before, after, reference)
