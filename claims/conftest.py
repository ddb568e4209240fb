"""Fixtures shared by the claims: the workshop recipe, its data, its networks and runs.

Everything expensive is computed once per session and handed out frozen: results are frozen
dataclasses of floats, and a trained network is only ever given out as a fresh copy
(`TrainedRun.network()`), so no claim can change what another reads.

A claim that needs trained networks says which with `@pytest.mark.runs("plain", ...)` (names
from `bnvg.runs.RUNS`) and reads them through the `runs` fixture. Only the runs of the
selected claims are trained, so `pytest -k eval_bug` trains the one network it needs. Under
pytest-xdist the workers first train them between them, into a folder they share, each taking
the next untrained run; a worker loads the runs another one trained.

The bnvg imports sit inside the fixtures: the xdist controller loads this file but runs no
claim, and importing torch there would only delay starting the workers.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from syrupy.assertion import SnapshotAssertion

    from bnvg.config import Workshop
    from bnvg.data import TwoMoons
    from bnvg.fragility import Fragility
    from bnvg.measure import AtInit
    from bnvg.runs import RunCache, TrainedRun

NEEDED_RUNS = pytest.StashKey[tuple[str, ...]]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "runs(*names): the trained networks this claim reads (see bnvg.runs.RUNS)"
    )


def declared_runs(item: pytest.Item) -> tuple[str, ...]:
    return tuple(name for mark in item.iter_markers("runs") for name in mark.args)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Note which runs the selected claims need (after -k / -m deselection)."""
    from bnvg.runs import run_named

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
def workshop(pytestconfig: pytest.Config) -> Workshop:
    """The workshop's recipe; --sampler-seed K (for the sweep) changes the minibatch order."""
    import dataclasses

    from bnvg.config import WORKSHOP

    seed = pytestconfig.getoption("bnvg_sampler_seed")
    return WORKSHOP if seed is None else dataclasses.replace(WORKSHOP, sampler_seed=seed)


@pytest.fixture(scope="session")
def fragility(pytestconfig: pytest.Config) -> Fragility:
    """The sweep's committed table: which numbers travel between machines, and over seeds."""
    from bnvg.settings import fragility_of

    return fragility_of(pytestconfig)


@pytest.fixture(scope="session")
def data(workshop: Workshop) -> TwoMoons:
    from bnvg.data import two_moons

    return two_moons(workshop)


@pytest.fixture(scope="session")
def run_cache(
    workshop: Workshop, pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory
) -> RunCache:
    """Every run the selected claims need, each trained at most once in the session.

    Under pytest-xdist the workers of one session share a run folder (the pattern xdist
    documents for session fixtures that must run once) and train the runs between them up
    front, each taking the next untrained run, longest first.
    """
    from bnvg.plugin import training_ledger
    from bnvg.runs import RunCache

    worker = getattr(pytestconfig, "workerinput", None)
    if worker is None:
        return RunCache(workshop, on_train=training_ledger(pytestconfig).append)
    store = tmp_path_factory.getbasetemp().parent / "bnvg-runs"
    cache = RunCache(workshop, store=store, on_train=training_ledger(pytestconfig).append)
    cache.prefetch(pytestconfig.stash[NEEDED_RUNS])
    return cache


class DeclaredRuns:
    """The runs one claim declared with `@pytest.mark.runs`, and no others."""

    def __init__(self, cache: RunCache, names: tuple[str, ...], nodeid: str) -> None:
        self._cache, self._names, self._nodeid = cache, names, nodeid

    def get(self, name: str) -> TrainedRun:
        if name not in self._names:
            raise pytest.UsageError(
                f"{self._nodeid} reads run {name!r} without declaring it: "
                f"add it to its @pytest.mark.runs({', '.join(map(repr, self._names))})"
            )
        return self._cache.get(name)


@pytest.fixture
def runs(request: pytest.FixtureRequest, run_cache: RunCache) -> DeclaredRuns:
    """The trained runs this claim declared with `@pytest.mark.runs(...)`."""
    return DeclaredRuns(run_cache, declared_runs(request.node), request.node.nodeid)


@pytest.fixture(scope="session")
def at_init(data: TwoMoons) -> dict[str, AtInit]:
    """The S4 measurements of a fresh plain net and a fresh batch-norm net."""
    from bnvg.config import NetSpec
    from bnvg.measure import measure_at_init
    from bnvg.model import build_network

    nets = {"plain": NetSpec(), "batch": NetSpec(norm="batch")}
    return {
        name: measure_at_init(build_network(spec), data.X_train, data.y_train)
        for name, spec in nets.items()
    }


@pytest.fixture
def figures() -> ModuleType:
    """bnvg.figures, imported on first use so claims that draw nothing never load matplotlib."""
    import bnvg.figures

    return bnvg.figures


UPDATE_COMMAND = "pytest claims/ --snapshot-update"


@pytest.fixture
def snapshot(request: pytest.FixtureRequest, snapshot: SnapshotAssertion) -> SnapshotAssertion:
    """syrupy's snapshot, stored under snapshots/ as Amber text.

    A missing or damaged snapshot file fails the claim naming the file, before any work.
    """
    from bnvg.snapshot_store import WorkshopSnapshots, snapshot_file_problem, snapshot_path

    if not request.config.option.update_snapshots:
        problem = snapshot_file_problem(snapshot_path(request.path))
        if problem:
            pytest.fail(
                f"{problem}. Restore it from git, or record the numbers computed here "
                f"with `{UPDATE_COMMAND}`.",
                pytrace=False,
            )
    return snapshot.use_extension(WorkshopSnapshots)


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def png():
    """Checks that a figure was written as a real, non-trivial PNG image."""

    def check(path):
        __tracebackhide__ = True
        head = path.read_bytes()[:24]
        assert head.startswith(PNG_SIGNATURE), f"{path} is not a PNG file"
        width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
        assert width > 300 and height > 200, f"{path} is only {width}x{height} pixels"

    return check
