"""What the claims read: the recipe, the data, trained runs, computed results and figures.

Everything expensive is computed once per session and handed out frozen: results are frozen
dataclasses of floats, and a trained network is only ever given out as a fresh copy
(`TrainedRun.network()`), so no claim can change what another reads. Each is kept in pytest's
cache folder under a key of everything it depends on, and reused by later sessions while
nothing of it changes (`--recompute` computes everything again):

- **runs** (`.pytest_cache/d/bnvg-runs`, `bnvg.experiment.runs`): a claim declares the
  trained networks it reads (`@pytest.mark.runs("plain", ...)`), so only the selected claims'
  runs are trained; under xdist the workers train them between them, into a folder they
  share. Reading a run checks its whole history against the stored one first.
- **computed results** (`bnvg-results`): everything else that takes torch (the S2 facts, the
  S3 starting weights, the S4 measurements, the at-init ratios, the eval-bug demonstration),
  so a session that computes nothing imports no torch.
- **figures** (`bnvg-figures`): `figure.check` compares the numbers a figure plots with their
  snapshot, `figure.draw` draws it, or copies the PNG the same code drew from the same numbers
  before, without importing matplotlib.

The bnvg imports that reach torch sit inside the fixtures.
"""

from __future__ import annotations

import json
import pickle
import platform
from collections.abc import Callable, Mapping
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pytest

from bnvg.evidence.tables import Table, history_table
from bnvg.experiment.results import TrainedRun
from bnvg.plugin.options import (
    EVENTS,
    RUNS_FOLDER,
    TITLE,
    UPDATE_COMMAND,
    channel,
    fragility,
    owned_keys,
    process_facts,
    send_line,
    session_id,
    settings,
    standing,
)
from bnvg.plugin.quoting import NumberSnapshots, Quoted, damage, extension_for
from bnvg.store import Entry, Memo, Store, digest, replacing, source_digest

if TYPE_CHECKING:
    from syrupy.assertion import SnapshotAssertion

    from bnvg.evidence.fragility import Fragility
    from bnvg.evidence.tables import Table
    from bnvg.evidence.verdicts import Standing
    from bnvg.experiment.config import NetSpec, Workshop
    from bnvg.experiment.data import TwoMoons
    from bnvg.experiment.facts import SigmoidFacts, StartingWeights
    from bnvg.experiment.results import AtInit, LogitGradient, TrainedRun
    from bnvg.experiment.runs import RunCache
    from bnvg.log.layout import LogLine


# -- the recipe, the data, snapshots and the log's writer -----------------------------------
@pytest.fixture(scope="session")
def workshop(pytestconfig: pytest.Config) -> Workshop:
    """The workshop's recipe; --sampler-seed K and --init-seed K (for the sweep) change the
    minibatch order and the starting weights."""
    from bnvg.experiment.config import WORKSHOP

    s = settings(pytestconfig)
    return WORKSHOP.with_seeds(s.sampler_seed, s.init_seed)


@pytest.fixture(scope="session")
def fragility_table(pytestconfig: pytest.Config) -> Fragility:
    """The sweep's committed table: which readings travel, and how often bounds hold."""
    return fragility(pytestconfig)


@pytest.fixture(scope="session")
def platform_standing(pytestconfig: pytest.Config) -> Standing:
    """Where this session's platform stands with the evidence (`bnvg.evidence.verdicts`)."""

    return standing(pytestconfig)


@pytest.fixture(scope="session")
def data(workshop: Workshop) -> TwoMoons:
    from bnvg.experiment.data import two_moons

    return two_moons(workshop)


@pytest.fixture(scope="session")
def at_init(workshop: Workshop, computed: Computed) -> dict[str, AtInit]:
    """The S4 measurements of a fresh plain net and a fresh batch-norm net."""

    def measure() -> dict[str, AtInit]:
        from bnvg.experiment.config import NetSpec
        from bnvg.experiment.data import two_moons
        from bnvg.experiment.measure import measure_at_init
        from bnvg.experiment.model import build_network

        data = two_moons(workshop)
        nets = {"plain": NetSpec(), "batch": NetSpec(norm="batch")}
        return {
            name: measure_at_init(build_network(spec, workshop), data.X_train, data.y_train)
            for name, spec in nets.items()
        }

    return computed.get("S4 at-init measurements", measure)


@pytest.fixture(scope="session")
def sigmoid(computed: Computed) -> SigmoidFacts:
    """The S2 facts: the sigmoid's slope and BCE at p = 0.5."""
    from bnvg.experiment.facts import sigmoid_facts

    return computed.get("S2 sigmoid facts", sigmoid_facts)


@pytest.fixture(scope="session")
def logit_gradient(computed: Computed) -> LogitGradient:
    """S2's autograd check: autograd's dL/dz beside p - y."""
    from bnvg.experiment.facts import logit_gradient as gradient

    return computed.get("S2 autograd check", gradient)


@pytest.fixture(scope="session")
def starting_weights(workshop: Workshop, computed: Computed) -> StartingWeights:
    """The S3 (and S8) facts of the fresh networks: parameters, checksums, weight scales."""
    from bnvg.experiment.facts import starting_weights as facts

    return computed.get("S3 starting weights", lambda: facts(workshop))


@pytest.fixture(scope="session")
def init_ratio(workshop: Workshop, computed: Computed) -> Callable[[NetSpec], float]:
    """The at-init gradient ratio of a fresh network: `init_ratio(NetSpec(depth=8))`."""
    from bnvg.experiment.facts import init_ratio as ratio

    def of(spec: NetSpec) -> float:
        return computed.get(f"init gradient ratio ({spec})", lambda: ratio(spec, workshop))

    return of


@pytest.fixture(scope="session")
def figure_table(computed: Computed) -> Callable[[str, Callable[[], Table]], Table]:
    """The numbers of a figure that torch computes (a curve), computed once:
    `figure_table("bce_loss.png", series.bce_loss)`."""

    def of(name: str, make: Callable[[], Table]) -> Table:
        return computed.get(f"figure {name}", make)

    return of


@pytest.fixture(scope="session")
def torch_platform(pytestconfig: pytest.Config) -> dict[str, str]:
    """What torch says of this session's platform: its version and ATen's kernels."""

    return process_facts(pytestconfig)


@pytest.fixture
def snapshot(request: pytest.FixtureRequest, snapshot: SnapshotAssertion) -> SnapshotAssertion:
    """syrupy's snapshot, kept as Amber text under snapshots/text/.

    A missing or damaged snapshot file fails the claim naming the file, before any work.
    """
    s = settings(request.config)
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
    return Quoted(request, settings(request.config), fragility(request.config))


class ResultsLog:
    """Writes a claim's line to the log unchecked: for the header, which names the platform
    and so has no snapshot."""

    def __init__(self, item: pytest.Item) -> None:

        self._item = item
        self._owns = owned_keys(item)

    def write(self, line: LogLine) -> None:
        __tracebackhide__ = True
        if line.key not in self._owns:
            raise pytest.UsageError(
                f"{self._item.nodeid} writes log line {line.key!r} but its log_lines mark "
                f"declares only {list(self._owns)}"
            )
        send_line(self._item, line)


@pytest.fixture
def results_log(request: pytest.FixtureRequest) -> ResultsLog:
    return ResultsLog(request.node)


# -- trained runs ---------------------------------------------------------------------------
NEEDED_RUNS = pytest.StashKey[tuple[str, ...]]()


def declared_runs(item: pytest.Item) -> tuple[str, ...]:
    return tuple(name for mark in item.iter_markers("runs") for name in mark.args)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Note which runs the selected claims need (after -k / -m deselection)."""
    from bnvg.experiment.runs import run_named

    needed: dict[str, None] = {}
    for item in session.items:
        for name in declared_runs(item):
            try:
                run_named(name)
            except ValueError as error:
                raise pytest.UsageError(f"{item.nodeid}: {error}") from None
            needed[name] = None
    session.config.stash[NEEDED_RUNS] = tuple(needed)


@pytest.fixture(scope="session")
def run_cache(
    workshop: Workshop, pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory
) -> RunCache:
    """Every run the selected claims need, each trained at most once, and reused from pytest's
    cache folder while nothing it depends on changed.

    Under pytest-xdist the workers of one session share the store (the pattern xdist
    documents for session fixtures that must run once) and train the missing runs between
    them up front, each taking the next untrained run, longest first. Without pytest's cache
    the workers share a folder of the session's temporary directory instead.
    """
    from bnvg.experiment.runs import RunCache
    from bnvg.store import REUSED, Event

    events = pytestconfig.stash[EVENTS]

    def note(event: Event) -> None:
        if event.what == REUSED:  # when and on what it was trained, for the summary
            about = event.detail
            kept = {"trained at": about.get("at"), "platform": about.get("platform")}
            event = Event(event.what, event.kind, event.name, kept)
        events.append(event)

    worker = getattr(pytestconfig, "workerinput", None)
    pytest_cache = getattr(pytestconfig, "cache", None)  # None under -p no:cacheprovider
    cache_dir = pytest_cache.mkdir(RUNS_FOLDER) if pytest_cache is not None else None
    if cache_dir is not None:
        store: Store | None = Store(cache_dir)
    elif worker is not None:
        store = Store(tmp_path_factory.getbasetemp().parent / RUNS_FOLDER)
    else:
        store = None
    s = settings(pytestconfig)

    cache = RunCache(
        workshop,
        store=store,
        on_event=note,
        session=session_id(pytestconfig),
        recompute=s.recompute,
        facts=lambda: process_facts(pytestconfig),  # read from pytest's cache: no torch
    )
    needed: tuple[str, ...] = pytestconfig.stash[NEEDED_RUNS]
    if worker is not None:
        cache.prefetch(needed)
    return cache


class DeclaredRuns:
    """The runs one claim declared with `@pytest.mark.runs`, and no others; each read
    checks its history against the stored one first."""

    def __init__(self, request: pytest.FixtureRequest, cache: RunCache) -> None:
        self._request = request
        self._cache = cache
        self._names = declared_runs(request.node)
        self._numbers = NumberSnapshots(
            request, settings(request.config), fragility(request.config)
        )
        self._checked: set[str] = set()

    def get(self, name: str) -> TrainedRun:
        """The trained run `name`, its history verified."""
        __tracebackhide__ = True
        if name not in self._names:
            raise pytest.UsageError(
                f"{self._request.node.nodeid} reads run {name!r} without declaring it: "
                f"add it to its @pytest.mark.runs({', '.join(map(repr, self._names))})"
            )
        run = self._cache.get(name)
        if name not in self._checked:
            # Deferred: the claim first quotes its readings, so that what moved with the
            # history is said; it fails then (or at the end of its call) all the same.
            self._numbers.check_table(history_table(name, run.history), defer=True)
            self._checked.add(name)
        return run

    def history(self, name: str) -> Table:
        """The run's history as it is stored and plotted (verified)."""
        return history_table(name, self.get(name).history)


@pytest.fixture
def runs(request: pytest.FixtureRequest, run_cache: RunCache) -> DeclaredRuns:
    """The trained runs this claim declared with `@pytest.mark.runs(...)`."""
    return DeclaredRuns(request, run_cache)


# -- computed results, kept in pytest's cache -----------------------------------------------
T = TypeVar("T")
RESULTS_FOLDER = "bnvg-results"
PACKAGE = Path(__file__).resolve().parent.parent
# Every line a computed result can execute: the experiment, and the figures' tables.
SOURCES = (*sorted((PACKAGE / "experiment").glob("*.py")), PACKAGE / "figures" / "series.py")


class Computed:
    """Results by name, each computed at most once per key and kept by `memo` (a `Memo` of
    kind "result"). `inputs`: what every result depends on besides its name."""

    def __init__(self, memo: Memo, inputs: Mapping[str, str]) -> None:
        self.memo = memo
        self.inputs = dict(inputs)
        self._done: dict[str, Any] = {}

    def key(self, name: str) -> str:
        return digest(json.dumps({"result": name, **self.inputs}, sort_keys=True))

    def get(self, name: str, compute: Callable[[], T]) -> T:
        """The result `name`: kept from before, or computed now by `compute()` and kept."""
        if name not in self._done:
            self._done[name] = self.memo.get(
                name,
                self.key(name),
                compute,
                encode=lambda value: pickle.dumps(value, protocol=5),
                decode=lambda entry: pickle.loads(entry.content),
                about=lambda value: {"inputs": self.inputs},
            )
        return self._done[name]  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def computed(pytestconfig: pytest.Config, run_cache: Any) -> Computed:
    """This session's computed results (see the module's docstring)."""
    pytest_cache = getattr(pytestconfig, "cache", None)
    store = Store(pytest_cache.mkdir(RESULTS_FOLDER)) if pytest_cache is not None else None
    memo = Memo(
        store,
        "result",
        recompute=settings(pytestconfig).recompute,
        session=session_id(pytestconfig),
        on_event=pytestconfig.stash[EVENTS].append,
    )
    inputs = {
        "source": source_digest(SOURCES),
        "workshop": repr(run_cache.workshop),
        **run_cache.where,
    }
    return Computed(memo, inputs)


# -- figures: checked, drawn or reused ------------------------------------------------------
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
FIGURES_FOLDER = "bnvg-figures"
DRAWING_CODE = Path(__file__).resolve().parent.parent / "figures" / "draw.py"
# What the figures are drawn with and on, beside the numbers and the code.
RENDERER = (metadata.version("matplotlib"), platform.python_version(), platform.machine())


def fingerprint(value: Any) -> list[bytes | str]:
    """What a figure's input is, as bytes: tables and arrays by content, networks by their
    weights, trained runs by their key in the run store (which names everything their weights
    depend on), containers by their items, anything else by its repr."""
    if isinstance(value, Table):
        parts: list[bytes | str] = [value.name, value.index_name, repr(value.index)]
        for column, values in value.columns.items():
            array = np.ascontiguousarray(values)
            parts += [column, str(array.dtype), array.tobytes()]
        return parts
    if isinstance(value, np.ndarray):
        return [str(value.dtype), repr(value.shape), np.ascontiguousarray(value).tobytes()]
    if isinstance(value, TrainedRun):  # the same run key, the same weights
        return ["run", value.key] if value.key else fingerprint(value.network())
    if hasattr(value, "state_dict"):  # a network: its weights and buffers decide what it draws
        return [
            part
            for name, tensor in sorted(value.state_dict().items())
            for part in (name, *fingerprint(tensor.detach().cpu().numpy()))
        ]
    if hasattr(value, "X") and hasattr(value, "y"):  # the data set
        return [*fingerprint(value.X), *fingerprint(value.y), repr(value.n_train)]
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
        self._draws = settings(request.config).figures
        self._numbers = NumberSnapshots(
            request, settings(request.config), fragility(request.config)
        )

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
        said = {
            "figure": name,
            "title": text,
            "holds": list(holds),
            **{"sometimes": dict(sometimes or {})},
        }
        channel(self._item).append((TITLE, said))

    def check(self, *tables: Table) -> None:
        """Compare the numbers the figure plots with their snapshot."""
        __tracebackhide__ = True
        for table in tables:
            self._numbers.check_table(table)

    def draw(self, name: str, *inputs: Any) -> Path:
        """Draw `name` with the function of `bnvg.figures.draw` named after it, given `inputs`
        and the folder; or copy the PNG the same code drew from the same inputs before. Under
        --no-figures, nothing: the path it would have."""
        __tracebackhide__ = True
        if not self._draws:
            return self.folder / name
        key = digest(name, source_digest([DRAWING_CODE]), *RENDERER, *fingerprint(inputs))
        path = self.folder / name

        def draw() -> Path:
            import bnvg.figures.draw as drawing

            drawn: Path = getattr(drawing, name.removesuffix(".png"))(*inputs, self.folder)
            return drawn

        def copy(entry: Entry) -> Path:
            if not path.exists() or path.read_bytes() != entry.content:
                with replacing(path) as tmp:
                    tmp.write_bytes(entry.content)
            return path

        drawn = self._memo.get(name, key, draw, encode=lambda png: png.read_bytes(), decode=copy)
        assert drawn is not None  # waiting for the lock always gives a drawing
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
    path = settings(pytestconfig).diagrams
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def drawings(pytestconfig: pytest.Config) -> Memo:
    """Drawings kept in pytest's cache folder (drawn every time under -p no:cacheprovider)."""
    pytest_cache = getattr(pytestconfig, "cache", None)
    store = Store(pytest_cache.mkdir(FIGURES_FOLDER)) if pytest_cache is not None else None
    return Memo(
        store,
        "figure",
        recompute=settings(pytestconfig).recompute,
        session=session_id(pytestconfig),
        on_event=pytestconfig.stash[EVENTS].append,
    )


@pytest.fixture
def figure(request: pytest.FixtureRequest, diagrams_dir: Path, drawings: Memo) -> Figure:
    return Figure(request, diagrams_dir, drawings)
