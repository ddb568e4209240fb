"""The session: everything claimlog knows of one pytest session, in one object on its config.

A `ClaimSession` is made as pytest starts (`claimlog.plugin`'s `pytest_load_initial_conftests`),
from the workshop its configuration declares, and kept in `config.stash` (`session_of`), as
syrupy keeps its `SnapshotSession`. Whatever needs the workshop, the options or what the
session found is handed it; nothing of it is a module global, so a process may run several
sessions of several workshops one after another (pytester does).

It holds
- **the workshop** (`ClaimSession.workshop`, its `Declaration`) and its log (`ClaimSession.log`);
- **the settings** (`claimlog.plugin.options.Settings`), read once at configure;
- **the platform** this process computes on, found once per process (torch's facts and the
  bits of the workshop's kernels, kept in pytest's cache: a warm session imports no torch to
  know it). Without a readable reference identity no run could stand as the
  reference, so a missing or damaged `snapshots/environment.json` stops the session before
  any claim runs (but an update, which writes it);
- **the evidence** (`Evidence`): where the platform stands with it (`Standing`: the
  reference, a platform a fragment holds, or new), each claim's key, the sweep's table. The
  core's knows none (the reference or new, by the record alone); the feature plugin
  `claimlog.evidence` gives the session the sweep's (`claimlog.plugin.standing`);
- **the update**, as one transaction (`claimlog.transaction.Update`): begun at configure,
  committed or rolled back at the session's end; and what a killed one left, put back;
- **what every process did**: the results it computed, reused or found damaged (`Event`s),
  the kernels an update's computations called (`claimlog.hearing.record`), the computations
  refused as not deterministic; an xdist worker ships its own to the controller
  (`ClaimSession.worker_output`);
and, beside it on the controller's config, the controller (claimlog/plugin/controller.py),
which writes the session's files and summary.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from claimlog.declaration import Declaration, Training, seed_variant_name
from claimlog.evidence.fragility import EMPTY, Fragility
from claimlog.evidence.verdicts import NEW, REFERENCE, Standing
from claimlog.kernels import (
    NotDeterministic,
    fingerprint,
    kept_kernel_bits,
    kernel_bits,
    reference_kernels,
)
from claimlog.log.lines import Log, PublishedLogError
from claimlog.log.readings import Reading
from claimlog.machine import TORCH_FACTS_FOLDER, import_torch, kept_torch_facts, torch_facts
from claimlog.places import Places
from claimlog.platform import VARIABLES, Platform, UnreadableReference, apply, read_reference
from claimlog.plugin.options import (
    UPDATE_COMMAND,
    Settings,
    is_controller,
    narrowed,
    places_of,
    read_settings,
    refuse_unwritable,
    seeds_given,
)
from claimlog.runs import TrainedRuns
from claimlog.store import Event, Memo, Store, digest

if TYPE_CHECKING:
    from claimlog.transaction import Update

RUNS_CACHE = "runs"  # a workshop's trained runs, in pytest's cache: "<name>-runs"

# What an xdist worker ships to the controller in its `workeroutput` (built-in types only).
PLATFORM_OUTPUT = "claimlog_platform"  # the platform it computed on
EVENTS_OUTPUT = "claimlog_events"  # what it computed, reused or found damaged
STANDING_OUTPUT = "claimlog_standing"  # where that platform stands with the evidence
KERNELS_OUTPUT = "claimlog_kernels"  # under an update: the kernels its computations called
REFUSED_OUTPUT = "claimlog_refused"  # its computations refused as not deterministic


class ClaimSession:
    """One pytest session of a workshop's claims: its declaration, settings and findings."""

    def __init__(self, config: pytest.Config, workshop: Declaration) -> None:
        self.config = config
        self.workshop = workshop
        self._settings: Settings | None = None
        self.events: list[Event] = []  # what this process (and its workers) kept or reused
        self.recorded: dict[str, tuple[str, ...]] = {}  # kernels called, by computation
        self.refused: list[str] = []  # computations refused as not deterministic
        # Every computation this process asked for (to examine a number that moved), by name.
        self.computations: dict[str, Callable[[], object]] = {}
        self._examined: dict[str, list[str]] = {}
        self.transaction: Update | None = None  # the update's, on the controller
        self.recovered = ""  # what this session found of a killed update and put back
        self._facts: dict[str, str] | None = None
        self._kernel_bits: dict[str, str] | None = None
        self._platform: Platform | None = None
        # What this session knows of the sweep's evidence: none, unless the feature plugin
        # `claimlog.evidence` gives it the sweep's as the session configures.
        self.evidence = Evidence(self)

    # -- the workshop and the options ------------------------------------------------------
    @cached_property
    def log(self) -> Log:
        """The workshop's log, line by line (built once a session). One that cannot be built
        (its data missing, a template wrong) stops the session with the workshop's own
        message, not pytest's internal error."""
        try:
            return self.workshop.log()
        except Exception as error:
            raise pytest.UsageError(
                f"the log of the workshop {self.workshop.name!r} could not be built: "
                f"{type(error).__name__}: {error}"
            ) from error

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            raise RuntimeError("claimlog's settings are read at pytest_configure, not before")
        return self._settings

    @property
    def configured(self) -> bool:
        return self._settings is not None

    def configure(self) -> None:
        """Read the options, put back what a killed update left, refuse what cannot work
        before any claim runs, and begin the update's transaction."""
        config = self.config
        places = places_of(config)
        controller = is_controller(config) and not config.option.help
        if controller:  # before anything reads the record: a killed update is undone first
            self._recover(places)
        s = read_settings(config, self.workshop)
        # The session's two effects beyond itself, here and nowhere else: the environment
        # its computations run in, and pytest-regressions told that --snapshot-update (one
        # command for both snapshot libraries) regenerates its files, as --regen-all would.
        s = self._settings = replace(s, kernels=set_environment(config, s))
        config.option.regen_all = s.update
        config.hook.pytest_claimlog_configure(session=self)  # the features this session uses
        if is_controller(config):
            refuse_unwritable(s)
        if controller:  # `pytest --help` configures too, and must still answer
            _refuse_unknown_reference(s)
            _ = self.published  # a malformed published log stops the session now, in seconds
            for doubt in self.log.kind_doubts():  # before any claim quotes it as its kind
                config.issue_config_time_warning(pytest.PytestConfigWarning(doubt), stacklevel=2)
            if s.update:
                self._begin_update(s)

    @cached_property
    def published(self) -> dict[str, Reading]:
        """The numbers the published log prints (`Log.read_published`), by reading name:
        empty where the workshop has none. A malformed one is a usage error, raised as
        the session configures, before anything is computed."""
        path = self.settings.places.published_log
        if not path.exists():
            return {}
        try:
            return self.log.read_published(path)
        except PublishedLogError as error:
            raise pytest.UsageError(f"the published log: {error}") from None

    @cached_property
    def session_id(self) -> str:
        """This session's name, shared by its xdist workers: what a `Memo` writes into the
        entries it keeps, so that --recompute computes each result once per session."""
        worker = getattr(self.config, "workerinput", None)
        return str(worker["testrunuid"]) if worker else uuid.uuid4().hex

    def recipe(self) -> Any:
        """The workshop's recipe under this session's seeds (`Declaration.recipe`)."""
        if self.workshop.recipe is None:
            raise pytest.UsageError("the workshop declares no recipe (Declaration.recipe)")
        return self.workshop.recipe(self.settings.seeds)

    def training(self) -> Training:
        if self.workshop.training is None:
            raise pytest.UsageError("the workshop declares no training (Declaration.training)")
        return self.workshop.training()

    # -- pytest's cache ---------------------------------------------------------------------
    def cache_folder(self, what: str) -> str:
        """The name of the workshop's folder of `what` in pytest's cache: "bnvg-runs"."""
        return f"{self.workshop.name}-{what}"

    def kept(self, what: str) -> Store | None:
        """The workshop's store of `what` in pytest's cache (`cache_folder`), made by pytest's
        cache plugin; None under `-p no:cacheprovider`."""
        cache = getattr(self.config, "cache", None)
        return Store(cache.mkdir(self.cache_folder(what))) if cache is not None else None

    def memo(self, what: str, kind: str) -> Memo:
        """The memo of this session's `kind` of computation ("result", "figure", "kernels"),
        kept in its store of `what`: every process's reuse and computing become events of
        the session, which the summary says (and --recompute computes them again)."""
        s = self.settings
        on_event = self.events.append
        return Memo(
            self.kept(what), kind, recompute=s.recompute, session=self.session_id, on_event=on_event
        )

    def kept_early(self, what: str) -> Store | None:
        """`kept`, before the cache plugin is configured: only where pytest has made its
        cache folder already (with its .gitignore)."""
        folder = _pytest_cache(self.config)
        if folder is None or not folder.parent.is_dir():
            return None
        return Store(folder / self.cache_folder(what))

    def platform_store(self) -> Store | None:
        """Where pytest's cache keeps what this machine's platform is (torch's facts, the
        bits of the workshop's kernels): None under `-p no:cacheprovider`."""
        cache = getattr(self.config, "cache", None)
        return Store(cache.mkdir(TORCH_FACTS_FOLDER)) if cache is not None else None

    def every_run_kept(self) -> bool:
        """Whether pytest's cache holds every run the workshop trains for this code, recipe
        and platform, as far as can be told without importing torch (the session itself
        checks each whole entry); asked before the options are read into settings. A
        workshop that trains nothing: no."""
        config, workshop = self.config, self.workshop
        if workshop.training is None or workshop.recipe is None:
            return False
        if config.getoption("claimlog_recompute") or config.getoption("claimlog_strict_numbers"):
            return False
        cache = _pytest_cache(config)
        if cache is None:
            return False
        kept = Store(cache / TORCH_FACTS_FOLDER)
        facts = kept_torch_facts(kept)
        if facts is None:
            return False  # no session on this platform asked torch yet: none trained here
        threads = config.getoption("claimlog_torch_threads")
        kernels = reference_kernels(Places(config.rootpath).environment)
        bits = kept_kernel_bits(kernels, threads, kept)
        if bits is None:
            return False  # nor the workshop's kernels: nothing was trained here yet
        where = Platform.here(threads, facts, fingerprint(bits)).cache_fields()
        training = workshop.training()
        runs = TrainedRuns(
            training,
            workshop.recipe(seeds_given(config, workshop)),
            where=lambda: where,
            store=self.kept_early(RUNS_CACHE),
        )
        return runs.kept_names() == set(training.names())

    # -- the platform, and where it stands --------------------------------------------------
    def facts(self) -> dict[str, str]:
        """torch's facts of this process's platform, found once per process."""
        if self._facts is None:
            self._facts = torch_facts(self.platform_store())
        return self._facts

    def kernel_bits(self) -> dict[str, str]:
        """What the workshop's kernels, as the reference identity names them, give in this
        process (`claimlog.kernels.kernel_bits`): found once per process, kept in pytest's
        cache across sessions; empty where the record names no kernels."""
        if self._kernel_bits is None:
            s = self.settings
            kernels = reference_kernels(s.places.environment)
            self._kernel_bits = kernel_bits(kernels, s.torch_threads, self.platform_store())
        return self._kernel_bits

    @property
    def platform(self) -> Platform:
        """The platform this process computes on, its fingerprint included."""
        if self._platform is None:
            bits = fingerprint(self.kernel_bits())
            self._platform = Platform.here(self.settings.torch_threads, self.facts(), bits)
        return self._platform

    def reference(self) -> Platform | None:
        """The reference, as `snapshots/environment.json` records its identity (None if it
        cannot be read: only a session that updates the snapshots runs without it)."""
        try:
            return read_reference(self.settings.places.environment)
        except UnreadableReference:
            return None

    # -- the kernels an update records --------------------------------------------------------
    def records_kernels(self) -> bool:
        """Whether this session may record the reference, and so its kernels: a full update
        at the workshop's own seeds (a narrowed one, a sweep's job among them, never writes
        the reference identity)."""
        s = self.settings
        return s.update and not narrowed(self.config) and seed_variant_name(s.seeds) is None

    def note_kernels(
        self,
        name: str,
        compute: Callable[[], object],
        key: str,
        whole: Mapping[str, str] | None = None,
    ) -> None:
        """Under an update that records the reference: the kernels of the computation `name`,
        from its first call to its last, as it was heard computing (`whole`, `hearing`) or
        run whole once more, then started twice (`claimlog.hearing.record`); a computation
        that gives other bits the second time fails the claim in one line, before anything
        is recorded. Kept in pytest's cache under the computation's own `key` (its code,
        recipe and platform) and how it is recorded: an update after an edit of the text
        records nothing again."""
        __tracebackhide__ = True
        self.computations.setdefault(name, compute)
        if name in self.recorded or not self.records_kernels():
            return
        try:
            found = self._kernels_memo(name, compute, key, whole)
        except NotDeterministic as refused:
            self.refused.append(str(refused))
            pytest.fail(str(refused), pytrace=False)
        self.recorded[name] = tuple(found)

    def _kernels_memo(
        self,
        name: str,
        compute: Callable[[], object],
        key: str,
        whole: Mapping[str, str] | None,
    ) -> list[str]:
        from claimlog.hearing import record

        def recorded() -> list[str]:
            import_torch()
            return sorted(record(name, compute, whole))

        found = self.memo("kernels", "kernels").get(
            name,
            self._kernels_key(key),
            recorded,
            encode=lambda kernels: json.dumps(kernels).encode(),
            decode=lambda entry: list(json.loads(entry.content)),
        )
        return list(found or ())

    def _kernels_key(self, key: str) -> str:
        from claimlog.hearing import recording

        return digest(json.dumps([key, recording()]))

    def kernels_known(self, name: str, key: str) -> bool:
        """Whether the kernels of the computation `name` (under its `key`) need no recording:
        none is recorded in this session, or its record is kept."""
        if not self.records_kernels() or name in self.recorded:
            return True
        memo = self.memo("kernels", "kernels")
        return memo.peek(self._kernels_key(key), lambda entry: entry.content) is not None

    @contextlib.contextmanager
    def hearing(self, name: str, compute: Callable[[], object], key: str) -> Iterator[None]:
        """Around the computation `name` as it runs anyway (a run trained, a result computed):
        where its kernels are to be recorded, it is heard from its first call to its last
        (`claimlog.hearing.Listening`), and its record made and kept at once, so that no
        claim runs it whole again to hear it. A computation refused as not deterministic is
        refused (NotDeterministic), and kept by nobody: a claim that asks for its kernels
        refuses it in one line (`note_kernels`)."""
        if self.kernels_known(name, key):
            yield
            return
        from claimlog.hearing import Listening

        with Listening() as heard:
            yield
        self.recorded[name] = tuple(self._kernels_memo(name, compute, key, heard.kernels))

    def examine(self) -> list[str]:
        """Where this platform's fingerprint is the reference's and a number moved all the
        same: each computation this process asked for heard here, run whole, and its kernels
        held against the record
        (`claimlog.hearing.apart_from_record`): what sets this machine apart from it, for
        people, or [] where every kernel is the record's, with the record's bits (then
        something the keys do not see changed, or the computation is not deterministic).
        Each computation is examined once a session."""
        from claimlog.hearing import apart_from_record, kernels_of

        reference = reference_kernels(self.settings.places.environment)
        found: list[str] = []
        for name, compute in self.computations.items():
            if name not in self._examined:
                import_torch()
                self._examined[name] = apart_from_record(kernels_of(compute), reference)
            found += [f"{name}: {said}" for said in self._examined[name]]
        return found

    def recorded_kernels(self) -> set[str]:
        """Every kernel this process (and, on the controller, every worker) recorded."""
        return {k for kernels in self.recorded.values() for k in kernels}

    # -- the update's transaction -------------------------------------------------------------
    def _recover(self, places: Places) -> None:
        """Put back what an interrupted update left half written (said in the header). Where
        the update's workspace holds nothing, no update runs and none was killed: there is
        nothing to look for under the lock (nor is the transaction's code imported)."""
        workspace = places.update_workspace
        if not workspace.is_dir() or not any(workspace.iterdir()):
            return
        transaction = _locked(places)
        try:
            self.recovered = transaction.recover() or ""
        finally:
            transaction.release()

    def _begin_update(self, s: Settings) -> None:
        """An update holds the lock for its whole session, and keeps the copy of the record
        (and of the documents it may rewrite: the workshop's text, the pages the sweep writes
        sections of) that undoes it if it never completes."""
        transaction = _locked(s.places)
        features = self.config.hook.pytest_claimlog_update_documents(session=self)
        documents = [*(d for found in features for d in found), *s.places.generated_pages]
        transaction.begin(documents)
        self.transaction = transaction

    def end_update(self, completed: bool) -> None:
        """Commit the session's update (`completed`) or roll it back; nothing to do outside
        an update, or a second time. The summary says which, and why."""
        transaction, self.transaction = self.transaction, None
        if transaction is None:
            return
        try:
            if completed:
                transaction.commit()
            else:
                transaction.rollback()
        finally:
            transaction.release()

    # -- what a worker ships to the controller ------------------------------------------------
    def worker_output(self) -> dict[str, Any]:
        """What an xdist worker tells the controller, which imports no torch: the platform it
        computed on, what it kept or reused, and what an update recorded or refused."""
        output: dict[str, Any] = {
            PLATFORM_OUTPUT: self.platform.to_json(),
            EVENTS_OUTPUT: [(e.what, e.kind, e.name, e.detail, e.seconds) for e in self.events],
            REFUSED_OUTPUT: self.refused,
            KERNELS_OUTPUT: {name: list(kernels) for name, kernels in self.recorded.items()},
        }
        if not self.settings.update:
            output[STANDING_OUTPUT] = self.evidence.standing_json()
        return output

    def take_worker_output(self, output: dict[str, Any]) -> tuple[Platform | None, dict[str, str]]:
        """On the controller: add what a worker shipped; its platform and standing."""
        self.events.extend(Event(*e) for e in output.get(EVENTS_OUTPUT, []))
        for name, kernels in output.get(KERNELS_OUTPUT, {}).items():
            self.recorded.setdefault(name, tuple(kernels))
        self.refused.extend(output.get(REFUSED_OUTPUT, []))
        platform = output.get(PLATFORM_OUTPUT)
        return (Platform.from_json(platform) if platform else None), output.get(STANDING_OUTPUT, {})


class Evidence:
    """What a session knows of the sweep's evidence, and so where its platform stands with it.

    This one knows none, as under `-p no:claimlog.evidence`: the platform is the reference,
    whose identity the record names, or new (its numbers may drift while each claim's
    sentence holds); no reading has evidence, no claim a key, and nothing tells an edit
    since the record from a platform's drift. The feature plugin `claimlog.evidence` puts
    the sweep's in its place as the session configures (`claimlog.plugin.evidence`)."""

    active = False  # whether the sweep's evidence is read (claims marked `evidence` need it)

    def __init__(self, session: ClaimSession) -> None:
        self.session = session
        self._standing: Standing | None = None

    @property
    def keys(self) -> Mapping[str, str] | None:
        """Each claim's key in this checkout, by claim; None where no key is known."""
        return None

    def fragility(self) -> Fragility:
        """The sweep's table, without the readings of claims whose code changed since."""
        return EMPTY

    def committed_fragility(self) -> Fragility:
        """The sweep's committed table, as it is."""
        return EMPTY

    def stale_claims(self) -> list[str]:
        """The claims whose evidence is of other code than this checkout's."""
        return []

    def edited_since_recorded(self, nodeid: str) -> bool | None:
        """Whether the claim `nodeid` changed since the snapshots were recorded (None: not
        known)."""
        return None

    @property
    def standing(self) -> Standing:
        """Where this process's platform stands (found once per process, or again after
        `changed`)."""
        if self._standing is None:
            self._standing = self.find()
        return self._standing

    def find(self) -> Standing:
        """Where this platform stands: `reference_or_new`, nothing else being known."""
        session = self.session
        return reference_or_new(session.platform, session.settings, session.reference())

    def standing_json(self) -> dict[str, str]:
        found = self.standing
        return {"kind": found.kind, "platform": found.platform, "reference": found.reference}

    def changed(self) -> None:
        """The evidence was written anew: where the platform stands is found again."""
        self._standing = None


def reference_or_new(here: Platform, s: Settings, recorded: Platform | None) -> Standing:
    """The standing of the platform `here` in a session with settings `s`, whose reference
    identity is `recorded`, as far as the record alone says: the reference, where `here` is
    its identity at the workshop's own seeds; else new."""
    reference = recorded.id if recorded else ""
    if seed_variant_name(s.seeds) is None and here.id == reference:
        return Standing(REFERENCE, here.id, reference, s.strict)
    return Standing(NEW, here.id, reference, s.strict)


SESSION = pytest.StashKey[ClaimSession]()


def session_of(config: pytest.Config) -> ClaimSession:
    """The claimlog session of `config` (made as pytest starts, where a workshop is declared)."""
    return config.stash[SESSION]


def set_environment(config: pytest.Config, s: Settings) -> dict[str, str]:
    """Set the reference kernels (`claimlog.platform.apply`, which the summary names) and
    torch's thread count for this process and those it starts, before anything imports torch:
    ATen, MKL and oneDNN read their variables as they start, and the thread count changes the
    training-end numbers. A torch imported already computes with its own choice: said as a
    warning. Returns who chose each kernel variable."""
    before = {name: os.environ.get(name) for name in VARIABLES}
    origins = apply(native=s.native_kernels, threads=s.torch_threads)
    changed = [name for name, value in before.items() if os.environ.get(name) != value]
    if "torch" in sys.modules and changed:
        config.issue_config_time_warning(
            pytest.PytestConfigWarning(
                f"torch was imported before claimlog could set {', '.join(changed)}: set them in "
                "the environment yourself, or the numbers may be this machine's own"
            ),
            stacklevel=2,
        )
    return origins


def _pytest_cache(config: pytest.Config) -> Path | None:
    """Where pytest's Cache.mkdir(...) puts its folders, known before the cache plugin is
    configured (pytest_xdist_auto_num_workers and this plugin's pytest_configure run first);
    None under `-p no:cacheprovider`."""
    if not config.pluginmanager.has_plugin("cacheprovider"):
        return None
    return config.rootpath / str(config.getini("cache_dir")) / "d"


def _locked(places: Places) -> Update:
    """The checkout's update transaction, its lock taken (refused while an update runs)."""
    from claimlog.transaction import Busy, Update

    transaction = Update(places)
    try:
        transaction.acquire()
    except Busy as busy:
        raise pytest.UsageError(str(busy)) from None
    return transaction


def _refuse_unknown_reference(s: Settings) -> None:
    """Without the reference identity no platform stands as the reference: this one would
    be compared with a fragment of the evidence, or judged as new (drift allowed), never
    with the snapshots bit for bit, and the run would pass having checked less than it
    says. So a missing or damaged `snapshots/environment.json` stops the session before any
    claim runs. `--snapshot-update` writes the file, and a project that has recorded no
    snapshot yet has nothing for it to describe (each claim fails for want of its own)."""
    if s.update:
        return
    if not s.places.environment.exists() and not holds_snapshots(s.places):
        return
    try:
        read_reference(s.places.environment)
    except UnreadableReference as problem:
        raise pytest.UsageError(
            f"{problem}: it names the reference platform, whose numbers the snapshots hold, "
            "and without it no number is compared with them bit for bit. Restore it from git, "
            f"or write it with `{UPDATE_COMMAND}` (which makes this machine's numbers the "
            "reference)"
        ) from None


def holds_snapshots(places: Places) -> bool:
    """Whether the project has recorded any snapshot, a claim's text or numbers: only then
    does the reference identity describe anything."""
    folders = (places.text_snapshots, places.numbers)
    return any(path.is_file() for folder in folders for path in folder.rglob("*"))
