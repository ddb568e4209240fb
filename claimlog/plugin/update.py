"""claimlog.update: the record's update, a feature plugin of its own. `-p no:claimlog.update`
turns it off, and `--snapshot-update` is then refused: without it nothing would keep the
snapshot libraries' writes to what every claim verified.

This module is what pytest loads through the entry point. Where a session is an update, on
the controller, it registers `Update`, which

- begins the update's transaction (`claimlog.transaction.Update`) as the session starts: the
  checkout's lock, and a copy of the record and of the documents a feature may rewrite
  (`pytest_claimlog_update_documents`);
- once the log is written (`pytest_claimlog_finish`, before the other features), records the
  reference identity (`snapshots/environment.json`, fingerprinted by the kernels the session's
  computations called) and each claim's key (`snapshots/keys.json`), where every claim ran
  and passed;
- once every other plugin has written its files (syrupy's included), commits the whole of it,
  or rolls it back if anything it judged failed (`Controller.rolls_back`).

What a killed update left is put back by the core before anything reads the record
(`claimlog.plugin.session.recover`), whether this plugin is loaded or not.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from claimlog.platform import Platform
    from claimlog.plugin.controller import Controller
    from claimlog.plugin.session import ClaimSession
    from claimlog.transaction import Update as Transaction

# Nothing heavier than pytest is imported here: pytest loads this module as it starts, before
# claimlog sets the reference kernels that numpy reads as it is imported.


@pytest.hookimpl(optionalhook=True)
def pytest_claimlog_configure(session: ClaimSession) -> None:
    """Under `--snapshot-update`, on the controller: the update, registered now."""
    from claimlog.plugin.options import UPDATE, is_controller

    config = session.config
    if session.settings.update and is_controller(config) and not config.option.help:
        config.pluginmanager.register(Update(session), UPDATE)


class Update:
    """The record's update, as one transaction (see the module)."""

    def __init__(self, session: ClaimSession) -> None:
        self.session = session
        self.transaction: Transaction | None = None
        self.evidence_of = ""  # the platform the sweep's tables had for reference, at the start

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """The update holds the lock for its whole session, and keeps the copy of the record
        (and of the documents it may rewrite: the workshop's text, the pages the sweep writes
        sections of) that undoes it if it never completes."""
        from claimlog.plugin.session import locked

        places = self.session.settings.places
        transaction = locked(places)
        features = session.config.hook.pytest_claimlog_update_documents(session=self.session)
        transaction.begin([*(d for found in features for d in found), *places.generated_pages])
        self.transaction = transaction
        self.evidence_of = self.session.evidence.committed_fragility().reference

    def before(self, path: Path) -> Path:
        """Where the record's file `path` is as it was before this update began."""
        if self.transaction is None:
            return path
        return self.transaction.before / path.relative_to(self.session.settings.places.root)

    @pytest.hookimpl(tryfirst=True)
    def pytest_claimlog_finish(self, controller: Controller, session: pytest.Session) -> None:
        """A full update re-records the reference and the claims' keys; one that selected
        claims, or in which one failed, records neither."""
        from claimlog.plugin.options import UPDATE_COMMAND
        from claimlog.plugin.session import holds_snapshots
        from claimlog.store import relative

        c, places = controller, self.session.settings.places
        if c.full(session) and c.log is not None and c.log.complete and c.platform:
            refused = _record_reference(c, c.platform)
            _record_keys(c)
            if refused:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
                c.summary.append(refused)
        elif self.session.evidence.committed_fragility().reference != self.evidence_of:
            # The update's sweep merged the evidence with this machine as the reference
            # (`claimlog.sweep.updating`): the record may hold it only beside that reference.
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
            c.summary.append(
                "the evidence was merged with this machine as the reference, which only a full "
                f"update in which every claim passes records: nothing is written ({UPDATE_COMMAND})"
            )
        elif self.session.here.reference() is None and holds_snapshots(places):
            # The next run without --snapshot-update stops on it: say so now, and why.
            c.summary.append(
                f"{relative(places.environment, places.root)} was not written: only a full "
                f"update in which every claim passes records the reference ({UPDATE_COMMAND})"
            )

    # Inside terminalreporter's wrapper, which writes the summary once this returns: the
    # summary says whether the update was written.
    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Generator[None, None, None]:
        """Once every other plugin has written its files: commit the update, or roll it back
        if anything it judged failed, the session was interrupted or a computation was
        refused as not deterministic (nothing it computed is a record)."""
        from claimlog.plugin.controller import controller_of

        completed = False
        try:
            yield
            controller = controller_of(session.config)
            if controller is not None:
                completed = controller.completed = not controller.rolls_back(session)
        finally:
            self.end(completed)

    def pytest_unconfigure(self) -> None:
        # An update whose session never finished (a usage error after it began) changes
        # nothing.
        self.end(completed=False)

    def end(self, completed: bool) -> None:
        """Commit the update (`completed`) or roll it back; nothing to do a second time."""
        transaction, self.transaction = self.transaction, None
        if transaction is None:
            return
        try:
            (transaction.commit if completed else transaction.rollback)()
        finally:
            transaction.release()


def _record_reference(c: Controller, computed_on: Platform) -> str | None:
    """A full update re-records every number: the reference is now the identity of the
    platform that computed them, its fingerprint made of the kernels this session's
    computations called, replayed here (`claimlog.kernels`). On any machine of the same
    platform the file keeps its bytes; another identity (another torch, say) is said, with
    both. Where the kernels themselves changed, the evidence's platforms are named again by
    them (`pytest_claimlog_kernels_changed`); why the update writes nothing, if it cannot."""
    from claimlog import platform
    from claimlog.kernels import fingerprint, kernel_bits, reference_kernels
    from claimlog.store import atomic_write

    s, session = c.settings, c.session
    before = session.here.reference()
    store = session.cache.platform_store()
    bits = kernel_bits(session.recording.recorded_kernels(), s.torch_threads, store)
    keyed_by = computed_on  # what the session kept its runs and results by
    computed_on = replace(computed_on, fingerprint=fingerprint(bits))
    now = platform.Platform.from_json(computed_on.identity())
    kept = reference_kernels(s.places.environment)
    if before is not None and before.identity() == now.identity() and kept == bits:
        c.summary.append(f"the reference identity is unchanged ({now.id})")
        return None
    identity = {**now.identity(), **({platform.KERNELS: bits} if bits else {})}
    atomic_write(s.places.environment, json.dumps(identity, indent=2, sort_keys=True) + "\n")
    _keep_for_the_next_run(c, keyed_by, computed_on)
    if before is None:
        c.summary.append(f"recorded the reference: {now.describe()}")
        return None
    if kept and set(kept) != set(bits) and any(s.places.fragments.glob("*/*")):
        # The fingerprints the evidence's platforms are named by replayed the old kernels.
        said = c.config.hook.pytest_claimlog_kernels_changed(
            session=session, before=sorted(kept), after=sorted(bits), reference=now.id
        )
        if said is None:
            return (
                "the workshop calls other kernels than the record names, so the evidence's "
                "platforms, fingerprinted by the old ones, compare with none of today's, and "
                "nothing here names them again (claimlog.sweep does, with the engine's sweep "
                "extra): nothing is written"
            )
        gone, new = len(set(kept) - set(bits)), len(set(bits) - set(kept))
        c.summary.append(
            f"the workshop calls other kernels ({gone} of the {len(kept)} recorded no longer, "
            f"{new} new): the reference is fingerprinted by them, {now.describe()} ({now.id})"
        )
        c.summary.extend(said)
        return None
    # The update's sweep computed the reference's own evidence on it, where some was stale
    # (`claimlog.sweep.updating`); else the evidence is still the old one's.
    held = session.evidence.committed_fragility().reference.startswith(f"{now.id}/")
    c.summary.append(
        "the reference changed: the snapshots now hold the numbers of "
        f"{now.describe()} ({now.id}), not of {before.describe()} ({before.id}); "
        + (
            "the evidence of the reference was computed on it"
            if held
            else "the evidence of the old reference is stale: " + session.workshop.sweep_command
        )
    )
    return None


def _record_keys(c: Controller) -> None:
    """Beside the snapshots, the code they are of: each claim's key. A run on another
    platform tells by it an edit (a failure) from a number its platform moved (drift), where
    no sweep has measured the workshop. A session that knows no key (it runs without the
    evidence) removes the old ones, which are not of these snapshots."""
    from claimlog.store import atomic_write, relative

    path, evidence = c.settings.places.recorded_keys, c.session.evidence
    if not evidence.active:
        if path.is_file():
            path.unlink()
            c.summary.append(
                f"removed {relative(path, c.config.rootpath)}: this update knew no claim's "
                "key (it ran without claimlog.evidence)"
            )
        return
    keys = json.dumps(dict(sorted(evidence.keys.items())), indent=1) + "\n"
    if not path.is_file() or path.read_text() != keys:
        atomic_write(path, keys)


def _keep_for_the_next_run(c: Controller, keyed_by: Platform, recorded: Platform) -> None:
    """This session kept its runs and results under the fingerprint of the kernels the record
    named before it (none, for a new workshop's first update); the next keys them by the one
    just `recorded`. What this session used is kept under it too, so the next run reuses it:
    the same results of the same platform, named by the kernels it calls."""
    from claimlog.plugin.fixtures import Computed  # registered in every process already
    from claimlog.plugin.session import RUNS_CACHE
    from claimlog.plugin.session import recipe as recipe_of
    from claimlog.plugin.session import training as training_of
    from claimlog.runs import TrainedRuns
    from claimlog.store import COMPUTED, REUSED

    session, old, new = c.session, keyed_by.cache_fields(), recorded.cache_fields()
    if old == new or session.workshop.recipe is None:
        return
    used = {k: c.names_of(COMPUTED, k) + c.names_of(REUSED, k) for k in ("run", "result")}
    try:  # a copy in pytest's cache, never worth the update it would fail
        recipe = recipe_of(session)
        results = Computed.of(session, recipe, old)
        results.keep_also_as(Computed.of(session, recipe, new), used["result"])
        store = session.cache.kept(RUNS_CACHE)
        if store is not None and session.workshop.training is not None:
            training = training_of(session)
            runs = TrainedRuns(training, recipe, where=old.copy, store=store)
            again = TrainedRuns(training, recipe, where=new.copy, store=store)
            runs.keep_also_as(again, used["run"])
    except Exception as error:
        c.summary.append(f"the next run computes this update's results again ({error!r})")
