"""What every workshop's claims read from the engine: `quoted`, `figure`, the evidence.

- **quoted** (`claimlog.plugin.quoting`): a claim's readings and lines, checked against their
  snapshots and handed to the log; `results_log` writes the header's lines unchecked;
- **figures** (`<name>-figures` in pytest's cache): `figure.check` compares the numbers a
  figure plots with their snapshot, `figure.draw` draws it with the workshop's drawing
  module (`Declaration.figures`), or copies the PNG the same code drew from the same numbers
  before, without importing matplotlib;
- **the evidence**: the sweep's table (`fragility_table`) and where this platform stands
  with it (`platform_standing`), for the claims that read the evidence itself;
- **the recipe and computed results** (`recipe`, `computed`, `Computed`): a workshop's results
  by name, each computed at most once per key and kept in pytest's cache, the key made of the
  workshop's code (`Declaration.computing`), its recipe under the session's seeds and the
  platform;
- **trained runs** (`runs`, `<name>-runs` in pytest's cache): the networks a workshop trains
  (`Declaration.training`), each claim reading those it declares (`@pytest.mark.runs(...)`),
  each run trained at most once (`claimlog.runs.TrainedRuns`), those of one shape together
  where the workshop can (`Declaration.together`).

What else the workshop's own claims read (its data, its facts) are its fixtures, in the
plugins it declares.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import pickle
import platform
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext, suppress
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pytest

from claimlog.evidence.tables import Table
from claimlog.kernels import NotDeterministic
from claimlog.log.lines import VERSIONS
from claimlog.machine import import_for_the_whole_process, import_torch, installed
from claimlog.plugin.numbers import NumberSnapshots
from claimlog.plugin.options import UPDATE_COMMAND, owned_keys
from claimlog.plugin.outcomes import TITLE, channel
from claimlog.plugin.quoting import Quoted, damage, extension_for, send_line
from claimlog.plugin.session import RUNS_CACHE, ClaimSession, session_of
from claimlog.plugin.session import recipe as recipe_of
from claimlog.plugin.session import training as training_of
from claimlog.runs import TrainedRuns, known_run
from claimlog.store import (
    REUSED,
    Entry,
    Event,
    Memo,
    Store,
    digest,
    python_files,
    replacing,
    source_digest,
)

if TYPE_CHECKING:
    from syrupy.assertion import SnapshotAssertion

    from claimlog.declaration import Together
    from claimlog.evidence.fragility import Fragility
    from claimlog.evidence.verdicts import Standing
    from claimlog.log.lines import LogLine


T = TypeVar("T")


@pytest.fixture(scope="session")
def fragility_table(pytestconfig: pytest.Config) -> Fragility:
    """The sweep's committed table: which readings travel, and how often bounds hold."""
    return session_of(pytestconfig).evidence.fragility()


@pytest.fixture(scope="session")
def platform_standing(pytestconfig: pytest.Config) -> Standing:
    """Where this session's platform stands with the evidence (`claimlog.evidence.verdicts`)."""

    return session_of(pytestconfig).evidence.standing


@pytest.fixture(scope="session")
def torch_platform(pytestconfig: pytest.Config) -> dict[str, str]:
    """What torch says of this session's platform: its version and ATen's kernels."""

    return session_of(pytestconfig).here.facts


@pytest.fixture
def snapshot(request: pytest.FixtureRequest, snapshot: SnapshotAssertion) -> SnapshotAssertion:
    """syrupy's snapshot, kept as Amber text under snapshots/text/.

    A missing or damaged snapshot file fails the claim naming the file, before any work.
    """
    s = session_of(request.config).settings
    if not s.update:
        problem = damage(s.places.text_snapshot(request.path))
        if problem:
            pytest.fail(
                f"{problem}. Restore it from git, or record the numbers computed here "
                f"with `{UPDATE_COMMAND}`.",
                pytrace=False,
            )
    return snapshot.use_extension(extension_for(s.places))


@pytest.fixture
def quoted(request: pytest.FixtureRequest) -> Quoted:
    """Checks a claim's readings and lines against the snapshots and writes them to the log."""
    return Quoted(request, session_of(request.config))


class ResultsLog:
    """Writes a claim's line to the log unchecked: for the header, which names the platform
    and so has no snapshot."""

    def __init__(self, item: pytest.Item) -> None:
        self._item = item
        self._owns = owned_keys(item)
        self._log = session_of(item.config).log

    def write(self, line: LogLine) -> None:
        __tracebackhide__ = True
        if line.key not in self._owns:
            raise pytest.UsageError(
                f"{self._item.nodeid} writes log line {line.key!r} but its log_lines mark "
                f"declares only {list(self._owns)}"
            )
        send_line(self._item, line, self._log)

    def versions(self, torch: str, numpy: str) -> None:
        """Write the log's versions line (`Line.versions`): what computed it."""
        __tracebackhide__ = True
        self.write(self._log.line_named(VERSIONS).fill({"torch": torch, "numpy": numpy}))


@pytest.fixture
def results_log(request: pytest.FixtureRequest) -> ResultsLog:
    return ResultsLog(request.node)


# -- computed results, kept in pytest's cache -----------------------------------------------
Heard = Callable[[str, Callable[[], object], str], AbstractContextManager[None]]


class Computed:
    """Results by name, each computed at most once per key and kept by `memo` (a `Memo` of
    kind "result"). `inputs`: what every result depends on besides its name. The session
    hears each result computed (`hear`: its kernels, as it computes them), and learns of each
    result a claim reads what a run of it shows (`probe`: its kernels, recorded)."""

    def __init__(
        self,
        memo: Memo,
        inputs: Mapping[str, str],
        probe: Callable[[str, Callable[[], object], str], None] = lambda name, compute, key: None,
        hear: Heard = lambda name, compute, key: nullcontext(),
    ) -> None:
        self.memo = memo
        self.inputs = dict(inputs)
        self._probe = probe
        self._hear = hear
        self._done: dict[str, Any] = {}

    @classmethod
    def of(cls, session: ClaimSession, recipe: Any, where: Mapping[str, str]) -> Computed:
        """A session's results on the platform `where` (`Platform.cache_fields`), keyed by
        the workshop's code (`Declaration.computing`), its `recipe` and the platform."""
        code = source_digest(python_files(session.workshop.computing))
        inputs = {"source": code, "workshop": repr(recipe), **where}
        memo = session.cache.memo("results", "result")
        recording = session.recording
        return cls(memo, inputs, recording.note_kernels, recording.hearing)

    def key(self, name: str) -> str:
        return digest(json.dumps({"result": name, **self.inputs}, sort_keys=True))

    def keep_also_as(self, other: Computed, names: Iterable[str]) -> list[str]:
        """`TrainedRuns.keep_also_as`, for the results `names`."""
        store = self.memo.store
        if store is None:
            return []
        about = {"inputs": other.inputs}
        return [n for n in names if store.keep_as(self.key(n), other.key(n), about)]

    def get(self, name: str, compute: Callable[[], T]) -> T:
        """The result `name`: kept from before, or computed now by `compute()` and kept."""

        key = self.key(name)

        def computing() -> T:
            import_torch()  # with this session's thread count, before the workshop imports it
            with self._hear(name, compute, key):
                return compute()

        if name not in self._done:
            # Refused as not deterministic where it was heard: nothing of it was kept, and the
            # probe refuses it in one line.
            with suppress(NotDeterministic):
                self._done[name] = self.memo.get(
                    name,
                    key,
                    computing,
                    encode=lambda value: pickle.dumps(value, protocol=5),
                    decode=lambda entry: pickle.loads(entry.content),
                    about=lambda value: {"inputs": self.inputs},
                )
            self._probe(name, compute, key)  # heard as it computed, or run whole again
        return self._done[name]  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def recipe(pytestconfig: pytest.Config) -> Any:
    """The workshop's recipe under this session's seeds (`Declaration.recipe`; the seed
    options, `--<axis>-seed K`, are the sweep's)."""
    return recipe_of(session_of(pytestconfig))


@pytest.fixture(scope="session")
def computed(pytestconfig: pytest.Config, recipe: Any) -> Computed:
    """This session's computed results: each by name, computed once and kept in pytest's
    cache (`<name>-results`) under a key of everything it depends on: the workshop's code
    (`Declaration.computing`), its recipe under this session's seeds and the platform."""
    session = session_of(pytestconfig)
    return Computed.of(session, recipe, session.here.platform.cache_fields())


@pytest.fixture(scope="session")
def figure_table(computed: Computed) -> Callable[[str, Callable[[], Table]], Table]:
    """The numbers of a figure that take computing (a curve), computed once:
    `figure_table("bce_loss.png", series.bce_loss)`."""

    def of(name: str, make: Callable[[], Table]) -> Table:
        return computed.get(f"figure {name}", make)

    return of


# -- trained runs, kept in pytest's cache ---------------------------------------------------
NEEDED_RUNS = pytest.StashKey[tuple[str, ...]]()


def declared_runs(item: pytest.Item) -> tuple[str, ...]:
    """The runs a claim declares it reads: `@pytest.mark.runs("plain", ...)`."""
    return tuple(name for mark in item.iter_markers("runs") for name in mark.args)


def note_needed_runs(session: pytest.Session) -> None:
    """Note which runs the selected claims read (after -k and -m deselection): only those
    are trained."""
    needed: dict[str, None] = {}
    for item in session.items:
        for name in declared_runs(item):
            try:
                needed[known_run(training_of(session_of(session.config)), name)] = None
            except ValueError as error:
                raise pytest.UsageError(f"{item.nodeid}: {error}") from None
    session.config.stash[NEEDED_RUNS] = tuple(needed)


class RunsRead:
    """Registered in a session (`pytest.main(..., plugins=[...])`), the runs its selected
    claims read, once they are collected (`names`): what a sweep's batch trains for every
    seed before any claim runs."""

    def __init__(self) -> None:
        self.names: tuple[str, ...] = ()

    @pytest.hookimpl(trylast=True)  # after the plugin's own, which notes them
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.names = session.config.stash.get(NEEDED_RUNS, ())


@pytest.fixture(scope="session")
def run_cache(
    pytestconfig: pytest.Config, recipe: Any, tmp_path_factory: pytest.TempPathFactory
) -> TrainedRuns:
    """Every run the selected claims read, each trained at most once, and reused from
    pytest's cache folder (`<name>-runs`) while nothing it depends on changed.

    Under pytest-xdist the workers of one session share the store (the pattern xdist
    documents for session fixtures that must run once) and train the missing runs between
    them up front, each taking the next untrained run, longest first. Without pytest's cache
    the workers share a folder of the session's temporary directory instead. Where the
    workshop trains runs together (`Declaration.together`; not under --train-alone), the runs
    of one shape are one unit of that work, trained at once, also in one process.
    """
    claims = session_of(pytestconfig)
    events = claims.cache.events

    def note(event: Event) -> None:
        if event.what == REUSED:  # when and on what it was trained, for the summary
            about = event.detail
            kept = {"trained at": about.get("at"), "platform": about.get("platform")}
            event = Event(event.what, event.kind, event.name, kept)
        events.append(event)

    worker = getattr(pytestconfig, "workerinput", None)
    store = claims.cache.kept(RUNS_CACHE)
    if store is None and worker is not None:
        store = Store(tmp_path_factory.getbasetemp().parent / claims.cache.folder(RUNS_CACHE))
    training = training_of(claims)
    needed: tuple[str, ...] = pytestconfig.stash.get(NEEDED_RUNS, ())

    def hear(name: str) -> AbstractContextManager[object]:
        """A run trained alone, heard as it trains where its kernels are to be recorded."""
        compute = partial(training.train, name, recipe, "")
        return claims.recording.hearing(f"run {name}", compute, trained.key(name))

    def made(together: Callable[[], Together] | None) -> TrainedRuns:
        return TrainedRuns(
            training,
            recipe,
            where=lambda: claims.here.platform.cache_fields(),  # torch's facts: kept
            store=store,
            on_event=note,
            session=claims.cache.session_id,
            recompute=claims.settings.recompute,
            prepare=import_torch,
            together=together,
            hear=hear,
        )

    trained = made(None)
    # A run whose kernels are to be recorded trains alone, heard from its first kernel to its
    # last (trained together, it would call its group's kernels, of other shapes): its
    # training is the one that runs anyway, so hearing it costs no second training.
    hearing = claims.recording.records_kernels() and any(
        not claims.recording.kernels_known(f"run {n}", trained.key(n)) for n in needed
    )
    together = None if claims.settings.alone or hearing else claims.workshop.together
    if together is not None:
        trained = made(together)
    # Up front: a worker shares the training; runs of a shape train together; and a run to
    # be heard is heard here, before a claim asks for its kernels (`DeclaredRuns.get`).
    if worker is not None or together is not None or hearing:
        trained.prefetch(needed)
    return trained


class DeclaredRuns:
    """The runs one claim declared with `@pytest.mark.runs`, and no others; each read
    checks the run's numbers (`Training.table`: its history) against their snapshot first."""

    def __init__(self, request: pytest.FixtureRequest, runs: TrainedRuns, recipe: Any) -> None:
        self._request = request
        self._runs = runs
        self._recipe = recipe
        self._names = declared_runs(request.node)
        self._numbers = NumberSnapshots(request, session_of(request.config))
        self._checked: set[str] = set()

    def get(self, name: str) -> Any:
        """The trained run `name`, its numbers verified."""
        __tracebackhide__ = True
        if name not in self._names:
            raise pytest.UsageError(
                f"{self._request.node.nodeid} reads run {name!r} without declaring it: "
                f"add it to its @pytest.mark.runs({', '.join(map(repr, self._names))})"
            )
        training = self._runs.training
        config = self._request.config
        session_of(config).recording.note_kernels(
            f"run {name}", lambda: training.train(name, self._recipe, ""), self._runs.key(name)
        )
        run = self._runs.get(name)
        if name not in self._checked:
            # Deferred: the claim first quotes its readings, so that what moved with the
            # run is said; it fails then (or at the end of its call) all the same.
            self._numbers.check_table(self._runs.training.table(name, run), defer=True)
            self._checked.add(name)
        return run

    def history(self, name: str) -> Table:
        """The run's numbers as they are stored and plotted (verified)."""
        return self._runs.training.table(name, self.get(name))


@pytest.fixture
def runs(request: pytest.FixtureRequest, run_cache: TrainedRuns, recipe: Any) -> DeclaredRuns:
    """The trained runs this claim declared with `@pytest.mark.runs(...)`."""
    return DeclaredRuns(request, run_cache, recipe)


# -- figures: checked, drawn or reused ------------------------------------------------------
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# What the figures are drawn with and on, beside the numbers and the code.
RENDERER = (installed("matplotlib"), platform.python_version(), platform.machine())


def fingerprint(value: Any) -> list[bytes | str]:
    """What a figure's input is, as bytes: tables and arrays by content, networks by their
    weights, a trained run by its `key` (`Training.train`: its key in the cache names
    everything its numbers depend on), tensors by their values, a dataclass (a workshop's
    data set) by its fields, containers by their items, anything else by its repr."""
    if isinstance(value, Table):
        parts: list[bytes | str] = [value.name, value.index_name, repr(value.index)]
        for column, values in value.columns.items():
            array = np.ascontiguousarray(values)
            parts += [column, str(array.dtype), array.tobytes()]
        return parts
    if isinstance(value, np.ndarray):
        return [str(value.dtype), repr(value.shape), np.ascontiguousarray(value).tobytes()]
    key = getattr(value, "key", None)
    if isinstance(key, str) and key:  # a trained run: the same run key, the same weights
        return ["run", key]
    if callable(getattr(value, "network", None)):  # a run kept nowhere: its network's weights
        return fingerprint(value.network())
    if hasattr(value, "state_dict"):  # a network: its weights and buffers decide what it draws
        return [
            part
            for name, tensor in sorted(value.state_dict().items())
            for part in (name, *fingerprint(tensor.detach().cpu().numpy()))
        ]
    if hasattr(value, "detach") and hasattr(value, "numpy"):  # a tensor: its values
        return fingerprint(value.detach().cpu().numpy())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):  # a data set, say
        fields = dataclasses.fields(value)
        return [type(value).__qualname__] + [
            part for f in fields for part in (f.name, *fingerprint(getattr(value, f.name)))
        ]
    if isinstance(value, Mapping):
        return [p for k, v in value.items() for p in (repr(k), *fingerprint(v))]
    if isinstance(value, list | tuple):
        return [p for item in value for p in ("[", *fingerprint(item), "]")]
    return [repr(value)]


class Figure:
    """Where a claim draws its figure, and the checks around drawing it: the numbers it
    plots against their snapshot before, a real PNG after."""

    def __init__(self, request: pytest.FixtureRequest, folder: Path, memo: Memo) -> None:
        self.folder = folder
        self._memo = memo
        self._item = request.node
        session = session_of(request.config)
        self._draws = session.settings.figures
        self._module = session.workshop.figures
        self._numbers = NumberSnapshots(request, session)

    def title(
        self,
        name: str,
        text: str,
        holds: Mapping[str, bool],
        sometimes: Mapping[str, str] | None = None,
    ) -> None:
        """A figure's title is a sentence too: assert each part of it that `holds` (by what
        it says of what: {"the plain net stays below 90%": plain < 90, ...}); a part that holds
        only `sometimes` is not asserted, and the session names it with how often it holds
        ({"layer norm reaches 90%": "51.5% here; at least 90 in 16 of 33 orders"})."""
        __tracebackhide__ = True
        broken = [part for part, held in holds.items() if not held]
        if broken:
            pytest.fail(
                f"{self._item.nodeid}: the title of {name}, {text!r}, does not hold here: "
                + "; ".join(broken),
                pytrace=False,
            )
        sometimes = dict(sometimes or {})
        said = {"figure": name, "title": text, "holds": list(holds), "sometimes": sometimes}
        channel(self._item).append((TITLE, said))

    def check(self, *tables: Table) -> None:
        """Compare the numbers the figure plots with their snapshot."""
        __tracebackhide__ = True
        for table in tables:
            self._numbers.check_table(table)

    def draw(self, name: str, *inputs: Any) -> Path:
        """Draw `name` with the function of the workshop's drawing module (its declared
        `figures`) named after it, given `inputs` and the folder; or copy the PNG the same code
        drew from the same inputs before. Under --no-figures, nothing: the path it would have."""
        __tracebackhide__ = True
        if not self._draws:
            return self.folder / name
        module = self._module
        if module is None:
            raise pytest.UsageError(
                f"{self._item.nodeid} draws {name}, but the workshop declares no figures module"
            )
        code = importlib.util.find_spec(module)
        assert code is not None and code.origin, module
        key = digest(name, source_digest([Path(code.origin)]), *RENDERER, *fingerprint(inputs))
        path = self.folder / name

        def draw() -> Path:
            drawing = import_for_the_whole_process(module)  # and matplotlib, as torch
            drawn: Path = getattr(drawing, name.removesuffix(".png"))(*inputs, self.folder)
            return drawn

        def copy(entry: Entry) -> Path:
            if not path.exists() or path.read_bytes() != entry.content:
                with replacing(path) as tmp:
                    tmp.write_bytes(entry.content)
            return path

        drawn = self._memo.get(name, key, draw, encode=lambda png: png.read_bytes(), decode=copy)
        return self.saved(drawn)

    def saved(self, path: Path) -> Path:
        """Check that the figure was written as a real, non-trivial PNG image."""
        __tracebackhide__ = True
        head = path.read_bytes()[:24]
        assert head.startswith(PNG_SIGNATURE), f"{path} is not a PNG file"
        width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
        assert width > 300 and height > 200, f"{path} is only {width}x{height} pixels"
        return path


@pytest.fixture(scope="session")
def diagrams_dir(pytestconfig: pytest.Config) -> Path:
    """The folder the claims draw their figures into."""
    path = session_of(pytestconfig).settings.diagrams
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def drawings(pytestconfig: pytest.Config) -> Memo:
    """Drawings kept in pytest's cache folder (drawn every time under -p no:cacheprovider)."""
    return session_of(pytestconfig).cache.memo("figures", "figure")


@pytest.fixture
def figure(request: pytest.FixtureRequest, diagrams_dir: Path, drawings: Memo) -> Figure:
    return Figure(request, diagrams_dir, drawings)
