"""What this workshop's claims read beside its trained runs: the recipe, the data, the facts.

Everything expensive is computed once per session and handed out frozen: results are frozen
dataclasses of floats, and a trained network is only ever given out as a fresh copy
(`TrainedRun.network()`), so no claim can change what another reads. Each is kept in pytest's
cache folder under a key of everything it depends on, and reused by later sessions while
nothing of it changes (`--recompute` computes everything again):

- **computed results** (`bnvg-results`, claimlog's `computed`): everything that takes torch
  but training (the S2 facts, the S3 starting weights, the S4 measurements, the at-init
  ratios, the eval-bug demonstration), so a session that computes nothing imports no torch;
- **trained runs** are claimlog's `runs` fixture (`.pytest_cache/d/bnvg-runs`): a claim
  declares those it reads (`@pytest.mark.runs("plain", ...)`), and claimlog trains and keeps
  them as this workshop declares them (`bnvg.experiment.runs.TRAINING`).

A pytest plugin of the workshop's, registered by claimlog (`bnvg.workshop`). The imports that
reach torch sit inside the fixtures.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from claimlog import Computed

if TYPE_CHECKING:
    from bnvg.experiment.config import NetSpec, Workshop
    from bnvg.experiment.data import TwoMoons
    from bnvg.experiment.facts import SigmoidFacts, StartingWeights
    from bnvg.experiment.results import AtInit, LogitGradient


# -- the recipe and the data ------------------------------------------------------------------
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
