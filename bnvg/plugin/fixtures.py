"""The fixtures the claims use: the recipe, the data, fresh measurements, snapshots, figures.

Everything expensive is computed once per session and handed out frozen: results are frozen
dataclasses of floats, and a trained network is only ever given out as a fresh copy
(`TrainedRun.network()`), so no claim can change what another reads. What takes torch to
compute goes through `computed` (`bnvg.plugin.computed`), which keeps it in pytest's cache.
The bnvg imports sit inside the fixtures, and torch's inside the computations: a session
that reuses every result imports no torch at all.
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
    from bnvg.evidence.tables import Table
    from bnvg.evidence.verdicts import Standing
    from bnvg.experiment.config import NetSpec, Workshop
    from bnvg.experiment.data import TwoMoons
    from bnvg.experiment.facts import SigmoidFacts, StartingWeights
    from bnvg.experiment.results import AtInit
    from bnvg.log.layout import LogLine
    from bnvg.plugin.computed import Computed


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
    """The S2 facts: the sigmoid's slope, BCE at p = 0.5, autograd's dL/dz."""
    from bnvg.experiment.facts import sigmoid_facts

    return computed.get("S2 sigmoid facts", sigmoid_facts)


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
    from bnvg.plugin.standing import process_facts

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
