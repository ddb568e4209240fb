"""The fixtures the claims use: the recipe, the data, fresh measurements, snapshots, figures.

Everything expensive is computed once per session and handed out frozen: results are frozen
dataclasses of floats, and a trained network is only ever given out as a fresh copy
(`TrainedRun.network()`), so no claim can change what another reads. The bnvg imports sit
inside the fixtures: an xdist controller loads this plugin but runs no claim, and importing
torch there would only delay starting the workers.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest

from bnvg.plugin.numbers import NumberSnapshots
from bnvg.plugin.options import UPDATE_COMMAND, fragility, settings
from bnvg.plugin.outcomes import LINE
from bnvg.plugin.quoting import Quoted
from bnvg.plugin.text_snapshots import damage, extension_for

if TYPE_CHECKING:
    from syrupy.assertion import SnapshotAssertion

    from bnvg.evidence.fragility import Fragility
    from bnvg.evidence.tables import Table
    from bnvg.experiment.config import Workshop
    from bnvg.experiment.data import TwoMoons
    from bnvg.experiment.measure import AtInit
    from bnvg.log.layout import LogLine

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="session")
def workshop(pytestconfig: pytest.Config) -> Workshop:
    """The workshop's recipe; --sampler-seed K (for the sweep) changes the minibatch order."""
    import dataclasses

    from bnvg.experiment.config import WORKSHOP

    seed = settings(pytestconfig).sampler_seed
    return WORKSHOP if seed is None else dataclasses.replace(WORKSHOP, sampler_seed=seed)


@pytest.fixture(scope="session")
def fragility_table(pytestconfig: pytest.Config) -> Fragility:
    """The sweep's committed table: which readings travel, and how often bounds hold."""
    return fragility(pytestconfig)


@pytest.fixture(scope="session")
def data(workshop: Workshop) -> TwoMoons:
    from bnvg.experiment.data import two_moons

    return two_moons(workshop)


@pytest.fixture(scope="session")
def at_init(data: TwoMoons) -> dict[str, AtInit]:
    """The S4 measurements of a fresh plain net and a fresh batch-norm net."""
    from bnvg.experiment.config import NetSpec
    from bnvg.experiment.measure import measure_at_init
    from bnvg.experiment.model import build_network

    nets = {"plain": NetSpec(), "batch": NetSpec(norm="batch")}
    return {
        name: measure_at_init(build_network(spec), data.X_train, data.y_train)
        for name, spec in nets.items()
    }


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
        from bnvg.plugin.outcomes import owned_keys

        self._item = item
        self._owns = owned_keys(item)

    def write(self, line: LogLine) -> None:
        __tracebackhide__ = True
        if line.key not in self._owns:
            raise pytest.UsageError(
                f"{self._item.nodeid} writes log line {line.key!r} but its log_lines mark "
                f"declares only {list(self._owns)}"
            )
        self._item.user_properties.append((LINE, line.to_json()))


@pytest.fixture
def results_log(request: pytest.FixtureRequest) -> ResultsLog:
    return ResultsLog(request.node)


class Figure:
    """Where a claim draws its figure, and the checks around drawing it: the numbers it
    plots against their snapshot before, a real PNG after."""

    def __init__(self, request: pytest.FixtureRequest, folder: Path) -> None:
        self.folder = folder
        self._numbers = NumberSnapshots(
            request, settings(request.config), fragility(request.config)
        )

    def check(self, *tables: Table) -> None:
        """Compare the numbers the figure plots with their snapshot."""
        __tracebackhide__ = True
        for table in tables:
            self._numbers.check_table(table)

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


@pytest.fixture
def figure(request: pytest.FixtureRequest, diagrams_dir: Path) -> Figure:
    return Figure(request, diagrams_dir)


@pytest.fixture
def draw() -> ModuleType:
    """bnvg.figures.draw, imported on first use so claims that draw nothing never load
    matplotlib."""
    import bnvg.figures.draw

    return bnvg.figures.draw
