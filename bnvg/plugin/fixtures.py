"""The fixtures the claims use: the recipe, the data, fresh measurements, snapshots, figures.

Everything expensive is computed once per session and handed out frozen: results are frozen
dataclasses of floats, and a trained network is only ever given out as a fresh copy
(`TrainedRun.network()`), so no claim can change what another reads. The bnvg imports sit
inside the fixtures: an xdist controller loads this plugin but runs no claim, and importing
torch there would only delay starting the workers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from bnvg.plugin.options import UPDATE_COMMAND, fragility, settings
from bnvg.plugin.outcomes import LINE
from bnvg.plugin.quoting import Quoted
from bnvg.plugin.text_snapshots import damage, extension_for

if TYPE_CHECKING:
    from syrupy.assertion import SnapshotAssertion

    from bnvg.evidence.fragility import Fragility
    from bnvg.evidence.verdicts import Standing
    from bnvg.experiment.config import NetSpec, Workshop
    from bnvg.experiment.data import TwoMoons
    from bnvg.experiment.measure import AtInit
    from bnvg.experiment.model import TinyNet
    from bnvg.log.layout import LogLine


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
    from bnvg.plugin.standing import standing

    return standing(pytestconfig)


@pytest.fixture(scope="session")
def data(workshop: Workshop) -> TwoMoons:
    from bnvg.experiment.data import two_moons

    return two_moons(workshop)


@pytest.fixture(scope="session")
def fresh_network(workshop: Workshop) -> Callable[..., TinyNet]:
    """Builds a freshly initialised network of a `NetSpec` from this session's starting
    weights (the workshop's, or --init-seed's): `fresh_network(NetSpec(norm="batch"))`."""
    from bnvg.experiment.config import PLAIN
    from bnvg.experiment.model import build_network

    def build(spec: NetSpec = PLAIN) -> TinyNet:
        return build_network(spec, workshop)

    return build


@pytest.fixture(scope="session")
def at_init(data: TwoMoons, fresh_network: Callable[..., TinyNet]) -> dict[str, AtInit]:
    """The S4 measurements of a fresh plain net and a fresh batch-norm net."""
    from bnvg.experiment.config import NetSpec
    from bnvg.experiment.measure import measure_at_init

    nets = {"plain": NetSpec(), "batch": NetSpec(norm="batch")}
    return {
        name: measure_at_init(fresh_network(spec), data.X_train, data.y_train)
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
