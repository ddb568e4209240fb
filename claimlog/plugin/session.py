"""The session: everything claimlog knows of one pytest session, in one object on its config.

A `ClaimSession` is made as pytest starts (`claimlog.plugin`'s `pytest_load_initial_conftests`),
from the workshop its configuration declares, and kept in `config.stash` (`session_of`), as
syrupy keeps its `SnapshotSession`. Whatever needs the workshop, the options or what the
session found is handed it; nothing of it is a module global, so a process may run several
sessions of several workshops one after another (pytester does).

It holds, each concept in one member:
- **the workshop** (`ClaimSession.workshop`, its `Declaration`), its log (`ClaimSession.log`)
  and the numbers its published log prints (`ClaimSession.published`);
- **the settings** (`claimlog.plugin.options.Settings`), read once at configure, where the
  session also sets the environment its computations run in (`set_environment`);
- **the platform** this process computes on (`ClaimSession.here`, a `ThisPlatform`), found
  once per process (torch's facts and the bits of the workshop's kernels, kept in pytest's
  cache: a warm session imports no torch to know it), and the reference's. Without a
  readable reference identity no run could stand as the reference, so a missing or damaged
  `snapshots/environment.json` stops the session before any claim runs (but an update,
  which writes it);
- **the evidence** (`ClaimSession.evidence`, an `Evidence`): where the platform stands with
  it (`Standing`: the reference, a platform a fragment holds, or new), each claim's key, the
  sweep's table. The core's knows none (the reference or new, by the record alone); the
  feature plugin `claimlog.evidence` gives the session the sweep's
  (`claimlog.plugin.standing`);
- **what a killed update left** (`ClaimSession.recovered`), put back before anything reads
  the record (`recover`). The update itself is a feature plugin (`claimlog.plugin.update`):
  an update without it is refused;
- **pytest's cache** (`ClaimSession.cache`, a `SessionCache`): the workshop's folders there,
  and what every process computed, reused or found damaged (`Event`s);
- **the kernels** the computations call (`ClaimSession.recording`, a
  `claimlog.plugin.recording.KernelRecording`): recorded by a full update, and those refused
  as not deterministic. An xdist worker ships its events and kernels to the controller
  (`worker_output`);
and, beside it on the controller's config, the controller (claimlog/plugin/controller.py),
which writes the session's files and summary.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Mapping
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from claimlog.declaration import Declaration, Training, seed_variant_name
from claimlog.evidence.fragility import EMPTY, Fragility
from claimlog.evidence.verdicts import NEW, REFERENCE, Standing
from claimlog.kernels import (
    fingerprint,
    kept_kernel_bits,
    kernel_bits,
    reference_kernels,
)
from claimlog.log.lines import Log, PublishedLogError
from claimlog.log.readings import Reading
from claimlog.machine import NUMPY_FOLDER, TORCH_FACTS_FOLDER, kept_torch_facts, torch_facts
from claimlog.places import Places
from claimlog.platform import Platform, UnreadableReference, applied, read_reference
from claimlog.plugin.options import (
    UPDATE,
    UPDATE_COMMAND,
    Settings,
    early_store,
    is_controller,
    places_of,
    read_settings,
    refuse_unwritable,
    seeds_given,
)
from claimlog.plugin.recording import KernelRecording
from claimlog.runs import TrainedRuns
from claimlog.store import Event, Memo, Store, digest

if TYPE_CHECKING:
    from claimlog.transaction import Update

UPDATE_OFF = "-p no:claimlog.update"
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
        self.cache = SessionCache(self)  # its folders in pytest's cache, what it kept there
        # The kernels this process's computations call: recorded under a full update, heard
        # again where a number moved on the reference.
        self.recording = KernelRecording(config, lambda: self.settings, self.cache.memo)
        self.here = ThisPlatform(self)  # the platform this process computes on
        self.recovered = ""  # what this session found of a killed update and put back
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
            self.recovered = recover(places)
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
            if s.update and not config.pluginmanager.has_plugin(UPDATE):
                raise pytest.UsageError(
                    f"--snapshot-update: claimlog's update is off ({UPDATE_OFF}), and without "
                    "it the snapshot libraries would write the record whatever the claims did"
                )

    @cached_property
    def published(self) -> dict[str, Reading]:
        """The numbers the published log prints (`Log.read_published`), by reading name:
        empty where the workshop has none. A malformed one is a usage error, raised as
        the session configures, before anything is computed."""
        path = self.settings.places.published_log
        if not path.exists():
            return {}
        try:
            return self.cache.read_log(path)
        except PublishedLogError as error:
            raise pytest.UsageError(f"the published log: {error}") from None


class SessionCache:
    """What a session keeps in pytest's cache (its workshop's folders there, each a `Store`),
    and what every process of it kept, reused or found damaged (`events`, which the summary
    says: an xdist worker ships its own to the controller)."""

    def __init__(self, session: ClaimSession) -> None:
        self.session = session
        self.events: list[Event] = []

    @cached_property
    def session_id(self) -> str:
        """This session's name, shared by its xdist workers: what a `Memo` writes into the
        entries it keeps, so that --recompute computes each result once per session."""
        worker = getattr(self.session.config, "workerinput", None)
        return str(worker["testrunuid"]) if worker else uuid.uuid4().hex

    def folder(self, what: str) -> str:
        """The name of the workshop's folder of `what` in pytest's cache: "bnvg-runs"."""
        return f"{self.session.workshop.name}-{what}"

    def kept(self, what: str) -> Store | None:
        """The workshop's store of `what` in pytest's cache (`folder`), made by pytest's
        cache plugin; None under `-p no:cacheprovider`."""
        cache = getattr(self.session.config, "cache", None)
        return Store(cache.mkdir(self.folder(what))) if cache is not None else None

    def memo(self, what: str, kind: str) -> Memo:
        """The memo of this session's `kind` of computation ("result", "figure", "kernels"),
        kept in its store of `what`: every process's reuse and computing become events of
        the session, which the summary says (and --recompute computes them again)."""
        s = self.session.settings
        on_event = self.events.append
        return Memo(
            self.kept(what), kind, recompute=s.recompute, session=self.session_id, on_event=on_event
        )

    def kept_early(self, what: str) -> Store | None:
        """`kept`, before the cache plugin is configured: only where pytest has made its
        cache folder already (with its .gitignore)."""
        return early_store(self.session.config, self.folder(what))

    def read_log(self, path: Path) -> dict[str, Reading]:
        """`Log.read_published(path)`, kept in pytest's cache (where it already is) under the
        key of the file's text and how the layout reads it back (`Log.reading_back`)."""
        log = self.session.log
        try:
            text = path.read_bytes()
        except OSError:
            return log.read_published(path)  # which says why it cannot be read
        return Memo(self.kept_early("logs"), "log read back").get(
            str(path),
            digest(text + log.reading_back().encode()),
            lambda: log.read_published(path),
            encode=lambda found: json.dumps([r.to_json() for r in found.values()]).encode(),
            decode=lambda entry: {
                r.name: r for r in map(Reading.from_json, json.loads(entry.content))
            },
        )

    def platform_store(self) -> Store | None:
        """Where pytest's cache keeps what this machine's platform is (torch's facts, the
        bits of the workshop's kernels): None under `-p no:cacheprovider`."""
        cache = getattr(self.session.config, "cache", None)
        return Store(cache.mkdir(TORCH_FACTS_FOLDER)) if cache is not None else None


class ThisPlatform:
    """The platform this process computes on (found once per process: torch's facts and the
    bits of the workshop's kernels, kept in pytest's cache, so that a warm session imports no
    torch to know it), and the reference's, as the record names it."""

    def __init__(self, session: ClaimSession) -> None:
        self.session = session

    @cached_property
    def facts(self) -> dict[str, str]:
        """torch's facts of this process's platform."""
        return torch_facts(self.session.cache.platform_store())

    @cached_property
    def kernel_bits(self) -> dict[str, str]:
        """What the workshop's kernels, as the reference identity names them, give in this
        process (`claimlog.kernels.kernel_bits`): kept in pytest's cache across sessions;
        empty where the record names no kernels."""
        s, store = self.session.settings, self.session.cache.platform_store()
        return kernel_bits(reference_kernels(s.places.environment), s.torch_threads, store)

    @cached_property
    def platform(self) -> Platform:
        """The platform this process computes on, its fingerprint included."""
        bits = fingerprint(self.kernel_bits)
        return Platform.here(self.session.settings.torch_threads, self.facts, bits)

    def reference(self) -> Platform | None:
        """The reference, as `snapshots/environment.json` records its identity (None if it
        cannot be read: only a session that updates the snapshots runs without it)."""
        try:
            return read_reference(self.session.settings.places.environment)
        except UnreadableReference:
            return None


class Evidence:
    """What a session knows of the sweep's evidence, and so where its platform stands with it.

    This one knows none, as under `-p no:claimlog.evidence`: the platform is the reference,
    whose identity the record names, or new (its numbers may drift while each claim's
    sentence holds); no reading has evidence, no claim a key, and nothing tells an edit
    since the record from a platform's drift. The feature plugin `claimlog.evidence` puts
    the sweep's in its place as the session configures (`claimlog.plugin.evidence`)."""

    # Whether the sweep's evidence is read, and so each claim's key known (claims marked
    # `evidence` need it; an update records the keys beside the snapshots only then).
    active = False

    def __init__(self, session: ClaimSession) -> None:
        self.session = session

    @property
    def keys(self) -> Mapping[str, str]:
        """Each claim's key in this checkout, by claim (none is known here: `active`)."""
        return {}

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

    @cached_property
    def standing(self) -> Standing:
        """Where this process's platform stands (found once per process, or again after
        `changed`)."""
        return self.find()

    def find(self) -> Standing:
        """Where this platform stands: `reference_or_new`, nothing else being known."""
        session = self.session
        return reference_or_new(session.here.platform, session.settings, session.here.reference())

    def standing_json(self) -> dict[str, str]:
        found = self.standing
        return {"kind": found.kind, "platform": found.platform, "reference": found.reference}

    def changed(self) -> None:
        """The evidence was written anew: where the platform stands is found again."""
        self.__dict__.pop("standing", None)


def reference_or_new(here: Platform, s: Settings, recorded: Platform | None) -> Standing:
    """The standing of the platform `here` in a session with settings `s`, whose reference
    identity is `recorded`, as far as the record alone says: the reference, where `here` is
    its identity at the workshop's own seeds; else new."""
    reference = recorded.id if recorded else ""
    if seed_variant_name(s.seeds) is None and here.id == reference:
        return Standing(REFERENCE, here.id, reference, s.strict)
    return Standing(NEW, here.id, reference, s.strict)


SESSION = pytest.StashKey[ClaimSession]()


def recipe(session: ClaimSession) -> Any:
    """The workshop's recipe under the session's seeds (`Declaration.recipe`)."""
    if session.workshop.recipe is None:
        raise pytest.UsageError("the workshop declares no recipe (Declaration.recipe)")
    return session.workshop.recipe(session.settings.seeds)


def training(session: ClaimSession) -> Training:
    """The networks the workshop trains (`Declaration.training`)."""
    if session.workshop.training is None:
        raise pytest.UsageError("the workshop declares no training (Declaration.training)")
    return session.workshop.training()


def every_run_kept(session: ClaimSession) -> bool:
    """Whether pytest's cache holds every run the workshop trains for this code, recipe
    and platform, as far as can be told without importing torch (the session itself
    checks each whole entry); asked before the options are read into settings. A
    workshop that trains nothing: no."""
    config, workshop = session.config, session.workshop
    if workshop.training is None or workshop.recipe is None:
        return False
    if config.getoption("claimlog_recompute") or config.getoption("claimlog_strict_numbers"):
        return False
    kept = early_store(config, TORCH_FACTS_FOLDER)
    facts = kept_torch_facts(kept) if kept is not None else None
    if kept is None or facts is None:
        return False  # no session on this platform asked torch yet: none trained here
    threads = config.getoption("claimlog_torch_threads")
    kernels = reference_kernels(Places(config.rootpath).environment)
    bits = kept_kernel_bits(kernels, threads, kept)
    if bits is None:
        return False  # nor the workshop's kernels: nothing was trained here yet
    where = Platform.here(threads, facts, fingerprint(bits)).cache_fields()
    trained = workshop.training()
    runs = TrainedRuns(
        trained,
        workshop.recipe(seeds_given(config, workshop)),
        where=lambda: where,
        store=session.cache.kept_early(RUNS_CACHE),
    )
    return runs.kept_names() == set(trained.names())


def worker_output(session: ClaimSession) -> dict[str, Any]:
    """What an xdist worker tells the controller, which imports no torch: the platform it
    computed on, what it kept or reused, and what an update recorded or refused."""
    recording, events = session.recording, session.cache.events
    output: dict[str, Any] = {
        PLATFORM_OUTPUT: session.here.platform.to_json(),
        EVENTS_OUTPUT: [(e.what, e.kind, e.name, e.detail, e.seconds) for e in events],
        REFUSED_OUTPUT: recording.refused,
        KERNELS_OUTPUT: {name: list(kernels) for name, kernels in recording.recorded.items()},
    }
    if not session.settings.update:
        output[STANDING_OUTPUT] = session.evidence.standing_json()
    return output


def take_worker_output(
    session: ClaimSession, output: dict[str, Any]
) -> tuple[Platform | None, dict[str, str]]:
    """On the controller: add what a worker shipped (`worker_output`) to the session; its
    platform and standing."""
    session.cache.events.extend(Event(*e) for e in output.get(EVENTS_OUTPUT, []))
    for name, kernels in output.get(KERNELS_OUTPUT, {}).items():
        session.recording.recorded.setdefault(name, tuple(kernels))
    session.recording.refused.extend(output.get(REFUSED_OUTPUT, []))
    platform = output.get(PLATFORM_OUTPUT)
    return (Platform.from_json(platform) if platform else None), output.get(STANDING_OUTPUT, {})


def session_of(config: pytest.Config) -> ClaimSession:
    """The claimlog session of `config` (made as pytest starts, where a workshop is declared)."""
    return config.stash[SESSION]


def set_environment(config: pytest.Config, s: Settings) -> dict[str, str]:
    """Set the reference kernels (`claimlog.platform.apply`, which the summary names) and
    torch's thread count for this process and those it starts, before anything imports torch:
    ATen, MKL and oneDNN read their variables as they start, and the thread count changes the
    training-end numbers. A torch imported already computes with its own choice: said as a
    warning. Returns who chose each kernel variable."""
    numpy = early_store(config, NUMPY_FOLDER)
    origins, changed = applied(s.native_kernels, s.torch_threads, numpy)
    if "torch" in sys.modules and changed:
        config.issue_config_time_warning(
            pytest.PytestConfigWarning(
                f"torch was imported before claimlog could set {', '.join(changed)}: set them in "
                "the environment yourself, or the numbers may be this machine's own"
            ),
            stacklevel=2,
        )
    return origins


def recover(places: Places) -> str:
    """Put back what an interrupted update left half written, and say what (empty: nothing).
    Where the update's workspace holds nothing, no update runs and none was killed: there is
    nothing to look for under the lock (nor is the transaction's code imported)."""
    workspace = places.update_workspace
    if not workspace.is_dir() or not any(workspace.iterdir()):
        return ""
    transaction = locked(places)
    try:
        return transaction.recover() or ""
    finally:
        transaction.release()


def locked(places: Places) -> Update:
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
    if s.update or (not s.places.environment.exists() and not holds_snapshots(s.places)):
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
