"""Trained networks for the claims: declared per claim, trained once, histories verified.

A claim that reads trained networks says which with `@pytest.mark.runs("plain", ...)` (names
from `bnvg.experiment.runs.RUNS`) and reads them through the `runs` fixture. Only the runs of
the selected claims are trained, so `pytest -k eval_bug` trains the one network it needs.
Under pytest-xdist the workers first train them between them, into a folder they share, each
taking the next untrained run; a worker loads the runs another one trained.

Reading a run checks its whole training history against the stored one (`bnvg.plugin.numbers`)
first: a history that moved fails every claim that reads the run, naming the step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from bnvg.evidence.tables import Table, history_table
from bnvg.plugin.numbers import NumberSnapshots
from bnvg.plugin.options import fragility, settings

if TYPE_CHECKING:
    from bnvg.experiment.config import Workshop
    from bnvg.experiment.run_cache import RunCache
    from bnvg.experiment.runs import TrainedRun

NEEDED_RUNS = pytest.StashKey[tuple[str, ...]]()
TRAINED = pytest.StashKey[list[str]]()  # names of the runs this process trained
TRAINED_OUTPUT = "bnvg_trained"  # the same list, shipped from an xdist worker


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "runs(*names): the trained networks this claim reads (see bnvg.experiment.runs.RUNS)",
    )
    config.stash[TRAINED] = []


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
        config.workeroutput[TRAINED_OUTPUT] = config.stash[TRAINED]  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def run_cache(
    workshop: Workshop, pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory
) -> RunCache:
    """Every run the selected claims need, each trained at most once in the session.

    Under pytest-xdist the workers of one session share a run folder (the pattern xdist
    documents for session fixtures that must run once) and train the runs between them up
    front, each taking the next untrained run, longest first.
    """
    from bnvg.experiment.run_cache import RunCache

    ledger = pytestconfig.stash[TRAINED]
    if not hasattr(pytestconfig, "workerinput"):
        return RunCache(workshop, on_train=ledger.append)
    store = tmp_path_factory.getbasetemp().parent / "bnvg-runs"
    cache = RunCache(workshop, store=store, on_train=ledger.append)
    needed: tuple[str, ...] = pytestconfig.stash[NEEDED_RUNS]
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
