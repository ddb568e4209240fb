"""The numbers the claims of S2, S3, S5, S7 and S8 read, computed in one call each.

Each function runs the workshop's own computations (`sigmoid_facts`, `model`, `measure`)
and returns plain numbers, so a session can keep the result in pytest's cache and a later one
read it without importing torch (`claimlog.plugin.fixtures`). torch is imported inside them, on
the one path that computes. S5's geometric decay (`remaining`) is pure arithmetic: if each
layer passes back a fraction f of the gradient it receives, k layers pass back f**k, and a
quarter per layer (the sigmoid's best case) leaves 1e-6 after ten layers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bnvg.experiment.config import SATURATION_Z, NetSpec, Workshop
from bnvg.experiment.results import LogitGradient

if TYPE_CHECKING:
    from torch import nn

    from bnvg.experiment.model import TinyNet


@dataclass(frozen=True)
class SigmoidFacts:
    """Section S2: the sigmoid's slope and the BCE loss, as torch computes them."""

    max_slope: float  # the largest slope on the grid of `slope_curve`
    argmax_z: float  # where it is reached
    saturated_slope: float  # the slope at z = +SATURATION_Z (float32)
    saturated_slope_negative: float  # ... and at z = -SATURATION_Z
    bce_at_half: float  # BCE of p = 0.5


def sigmoid_facts() -> SigmoidFacts:
    from bnvg.experiment.sigmoid_facts import bce_at_half, slope_at, slope_curve

    curve = slope_curve()
    return SigmoidFacts(
        max_slope=curve.max_slope,
        argmax_z=curve.argmax_z,
        saturated_slope=slope_at(SATURATION_Z),
        saturated_slope_negative=slope_at(-SATURATION_Z),
        bce_at_half=bce_at_half(),
    )


def logit_gradient() -> LogitGradient:
    """S2's autograd check: dL/dz at the recipe's `CHECK_LOGIT`, beside p - y. A fact of its
    own, apart from the sigmoid's: an edit of the check's logit moves it and nothing else."""
    from bnvg.experiment.sigmoid_facts import bce_logit_gradient

    return bce_logit_gradient()


@dataclass(frozen=True)
class StartingWeights:
    """Sections S3 and S8: the fresh networks of the workshop's starting weights."""

    parameters: int  # of the plain net
    identical: bool  # every weight and bias of the plain and batch-norm nets' linear layers
    checksum_plain: float
    checksum_batch_norm: float
    layer2_std: float  # of the plain net's second hidden layer's weights
    layer2_max_abs: float
    xavier_layer2_std: float  # the same layer, under Xavier init


def starting_weights(workshop: Workshop) -> StartingWeights:
    from bnvg.experiment.model import build_network, parameter_count, weight_checksum
    from bnvg.experiment.runtime import torch

    plain = build_network(NetSpec(), workshop)
    batch_norm = build_network(NetSpec(norm="batch"), workshop)
    xavier = build_network(NetSpec(init="xavier"), workshop)

    def linears(net: TinyNet) -> list[nn.Linear]:
        return [*(net.linear(k) for k in range(net.spec.depth)), net.out]

    pairs = zip(linears(plain), linears(batch_norm), strict=True)
    w = plain.linear(1).weight
    return StartingWeights(
        parameters=parameter_count(plain),
        identical=all(
            torch.equal(p.weight, b.weight) and torch.equal(p.bias, b.bias) for p, b in pairs
        ),
        checksum_plain=weight_checksum(plain),
        checksum_batch_norm=weight_checksum(batch_norm),
        layer2_std=w.std().item(),
        layer2_max_abs=w.abs().max().item(),
        xavier_layer2_std=xavier.linear(1).weight.std().item(),
    )


def init_ratio(spec: NetSpec, workshop: Workshop) -> float:
    """The at-init gradient ratio of a fresh network of `spec` on the training set."""
    from bnvg.experiment.data import two_moons
    from bnvg.experiment.measure import init_grad_ratio
    from bnvg.experiment.model import build_network

    data = two_moons(workshop)
    return init_grad_ratio(build_network(spec, workshop), data.X_train, data.y_train)


# -- S5: geometric decay, pure arithmetic ---------------------------------------------------
def remaining(factor: float, layers: int) -> float:
    """The fraction of the gradient left after travelling back `layers` layers."""
    if layers < 0:
        raise ValueError(f"layers must be >= 0, got {layers}")
    return float(factor**layers)
