"""What this workshop's claims read: the recipe, the data, trained runs, computed results.

Everything expensive is computed once per session and handed out frozen: results are frozen
dataclasses of floats, and a trained network is only ever given out as a fresh copy
(`TrainedRun.network()`), so no claim can change what another reads. Each is kept in pytest's
cache folder under a key of everything it depends on, and reused by later sessions while
nothing of it changes (`--recompute` computes everything again):

- **runs** (`.pytest_cache/d/bnvg-runs`, `bnvg.experiment.runs`): a claim declares the
  trained networks it reads (`@pytest.mark.runs("plain", ...)`), so only the selected claims'
  runs are trained; under xdist the workers train them between them, into a folder they
  share. Reading a run checks its whole history against the stored one first.
- **computed results** (`bnvg-results`, a claimlog `Computed`): everything else that takes
  torch (the S2 facts, the S3 starting weights, the S4 measurements, the at-init ratios, the
  eval-bug demonstration), so a session that computes nothing imports no torch.

A pytest plugin of the workshop's, registered by claimlog (`bnvg.workshop`). The imports that
reach torch sit inside the fixtures.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pytest

from claimlog.evidence.tables import Table, slug
from claimlog.plugin.fixtures import Computed
from claimlog.plugin.options import (
    EVENTS,
    fragility,
    process_facts,
    session_id,
    settings,
)
from claimlog.plugin.quoting import NumberSnapshots
from claimlog.store import Store

if TYPE_CHECKING:
    from bnvg.experiment.config import NetSpec, Workshop
    from bnvg.experiment.data import TwoMoons
    from bnvg.experiment.facts import SigmoidFacts, StartingWeights
    from bnvg.experiment.results import AtInit, History, LogitGradient, TrainedRun
    from bnvg.experiment.runs import RunCache

RUNS_FOLDER = "bnvg-runs"  # trained runs, in pytest's cache folder


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "runs(*names): the trained networks this claim reads (see bnvg.experiment.runs.RUNS)",
    )


# -- the recipe, the data, snapshots and the log's writer -----------------------------------
@pytest.fixture(scope="session")
def workshop(recipe: Workshop) -> Workshop:
    """The workshop's recipe (claimlog's `recipe`); --sampler-seed K and --init-seed K (for
    the sweep) change the minibatch order and the starting weights."""
    return recipe


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
    from claimlog.store import REUSED, Event

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


def history_table(run: str, history: History) -> Table:
    """A run's history as it is stored and plotted: the test accuracy in percent, computed
    as the figures compute it (`a * 100`)."""
    return Table(
        name=f"runs/{slug(run)}",
        title=f"run {run!r}",
        index_name="step",
        index=tuple(history.step),
        columns={
            "train loss": np.asarray(history.loss, dtype=float),
            "test accuracy %": np.asarray([a * 100 for a in history.test_acc], dtype=float),
        },
    )


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


# -- a warm session, told without torch ------------------------------------------------------
def all_runs_stored(config: pytest.Config) -> bool:
    """Whether pytest's cache holds every run of the workshop for this code and platform, as
    far as can be told without importing torch (the session itself checks the whole key)."""
    from bnvg.experiment.config import WORKSHOP
    from bnvg.experiment.runs import RUNS, stored_runs
    from claimlog.platform import TORCH_FACTS_FOLDER, Platform, kept_torch_facts

    if config.getoption("claimlog_recompute") or config.getoption("claimlog_strict_numbers"):
        return False
    if not config.pluginmanager.has_plugin("cacheprovider"):
        return False
    # Where pytest's Cache.mkdir(...) puts its folders; pytest_xdist_auto_num_workers runs
    # before the cache plugin is configured.
    cache = config.rootpath / config.getini("cache_dir") / "d"
    facts = kept_torch_facts(Store(cache / TORCH_FACTS_FOLDER))
    if facts is None:
        return False  # no session on this platform asked torch yet: none trained here either
    workshop = WORKSHOP.with_seeds(
        config.getoption("claimlog_sampler_seed"), config.getoption("claimlog_init_seed")
    )
    where = Platform.here(config.getoption("claimlog_torch_threads"), facts).cache_fields()
    return stored_runs(cache / RUNS_FOLDER, workshop, where) == set(RUNS)
