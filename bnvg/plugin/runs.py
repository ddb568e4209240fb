"""Trained networks for the claims: declared per claim, trained once, histories verified.

A claim that reads trained networks says which with `@pytest.mark.runs("plain", ...)` (names
from `bnvg.experiment.runs.RUNS`) and reads them through the `runs` fixture. Only the runs of
the selected claims are trained, so `pytest -k eval_bug` trains the one network it needs.
Under pytest-xdist the workers first train them between them, into a folder they share, each
taking the next untrained run; a worker loads the runs another one trained.

Reading a run checks its whole training history against the stored one (`bnvg.plugin.numbers`)
first: a history that moved fails every claim that reads the run, naming the step.

Trained runs are kept in pytest's cache folder (`.pytest_cache/d/bnvg-runs`), under a key
that covers everything their numbers depend on (`bnvg.experiment.run_cache`), and reused by
later sessions while nothing of it changes. `--recompute` (and `--strict-numbers`) train
every run again; `-p no:cacheprovider` and `--cache-clear` do what pytest users expect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from bnvg.evidence.tables import Table, history_table
from bnvg.plugin.numbers import NumberSnapshots
from bnvg.plugin.options import fragility, settings

if TYPE_CHECKING:
    from bnvg.experiment.config import Workshop
    from bnvg.experiment.results import TrainedRun
    from bnvg.experiment.run_cache import RunCache

NEEDED_RUNS = pytest.StashKey[tuple[str, ...]]()
# What this process did with each run or figure: ("trained" | "reused" | "damaged", run name,
# detail) or ("figure reused" | "figure damaged", figure name, detail).
RUN_EVENTS = pytest.StashKey[list[tuple[str, str, Any]]]()
RUN_EVENTS_OUTPUT = "bnvg_run_events"  # the same list, shipped from an xdist worker
CACHE_FOLDER = "bnvg-runs"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "runs(*names): the trained networks this claim reads (see bnvg.experiment.runs.RUNS)",
    )
    config.addinivalue_line(
        "markers",
        "evidence: the claim reads the sweep's own tables, so the sweep does not judge it per seed",
    )
    config.stash[RUN_EVENTS] = []


def all_runs_stored(config: pytest.Config) -> bool:
    """Whether pytest's cache holds every run of the workshop for this code and platform, as
    far as can be told without importing torch (the session itself checks the whole key)."""
    from bnvg.experiment.config import WORKSHOP
    from bnvg.experiment.platform import Platform, kept_torch_facts
    from bnvg.experiment.runs import RUNS, stored_runs
    from bnvg.plugin.standing import TORCH_FACTS_FOLDER
    from bnvg.store import Store

    if config.getoption("bnvg_recompute") or config.getoption("bnvg_strict_numbers"):
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
        config.getoption("bnvg_sampler_seed"), config.getoption("bnvg_init_seed")
    )
    where = Platform.here(config.getoption("bnvg_torch_threads"), facts).cache_fields()
    return stored_runs(cache / CACHE_FOLDER, workshop, where) == set(RUNS)


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


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if hasattr(config, "workerinput"):
        config.workeroutput[RUN_EVENTS_OUTPUT] = config.stash[RUN_EVENTS]  # type: ignore[attr-defined]


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
    import uuid

    from bnvg.experiment.run_cache import Reused, RunCache
    from bnvg.store import Store

    events = pytestconfig.stash[RUN_EVENTS]

    def note(event: str, name: str, detail: Any) -> None:
        if isinstance(detail, Reused):
            detail = {"trained at": detail.trained_at, "platform": dict(detail.platform)}
        events.append((event, name, detail))

    worker = getattr(pytestconfig, "workerinput", None)
    pytest_cache = getattr(pytestconfig, "cache", None)  # None under -p no:cacheprovider
    cache_dir = pytest_cache.mkdir(CACHE_FOLDER) if pytest_cache is not None else None
    if cache_dir is not None:
        store: Store | None = Store(cache_dir)
    elif worker is not None:
        store = Store(tmp_path_factory.getbasetemp().parent / CACHE_FOLDER)
    else:
        store = None
    s = settings(pytestconfig)
    from bnvg.plugin.standing import process_facts

    cache = RunCache(
        workshop,
        store=store,
        on_event=note,
        session=worker["testrunuid"] if worker else uuid.uuid4().hex,
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
            self._numbers.check_table(history_table(name, run.history))
            self._checked.add(name)
        return run

    def history(self, name: str) -> Table:
        """The run's history as it is stored and plotted (verified)."""
        return history_table(name, self.get(name).history)


@pytest.fixture
def runs(request: pytest.FixtureRequest, run_cache: RunCache) -> DeclaredRuns:
    """The trained runs this claim declared with `@pytest.mark.runs(...)`."""
    return DeclaredRuns(request, run_cache)
