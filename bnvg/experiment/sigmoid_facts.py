"""The two functions everything hinges on (section S2): the sigmoid and the BCE loss.

Three facts carry the workshop's argument. The sigmoid's slope sigma'(z) = sigma(z)(1 - sigma(z))
is at most 0.25 (at z = 0), so every sigmoid layer multiplies the backward signal by a
quarter or less. A network that outputs p = 0.5 everywhere scores ln 2 = 0.693, the
"learned nothing" loss. And the gradient of BCE with respect to the logit is simply p - y.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from torch import nn

from bnvg.experiment.config import CHECK_LABEL, CHECK_LOGIT
from bnvg.experiment.results import LogitGradient
from bnvg.experiment.runtime import torch


@dataclass(frozen=True)
class SlopeCurve:
    """The sigmoid and its slope on a fine grid."""

    z: torch.Tensor  # (2001,) from -8 to 8
    sigmoid: torch.Tensor
    slope: torch.Tensor

    @property
    def max_slope(self) -> float:
        return float(self.slope[int(torch.argmax(self.slope))])

    @property
    def argmax_z(self) -> float:
        return float(self.z[int(torch.argmax(self.slope))])


def slope_curve(lo: float = -8.0, hi: float = 8.0, points: int = 2001) -> SlopeCurve:
    """Evaluate sigma and its closed-form slope on `points` evenly spaced z in [lo, hi]."""
    if points < 2 or not lo < hi:
        raise ValueError(f"need lo < hi and points >= 2, got lo={lo}, hi={hi}, points={points}")
    z = torch.linspace(lo, hi, points)
    sig = torch.sigmoid(z)
    return SlopeCurve(z=z, sigmoid=sig, slope=sig * (1 - sig))


def slope_at(z: float) -> float:
    """sigma'(z) in float32, as torch computes it."""
    s = torch.sigmoid(torch.tensor(z))
    return float(s * (1 - s))


def bce_at_half() -> float:
    """BCE of the prediction p = 0.5, whatever the label: -ln 0.5 = ln 2."""
    return -math.log(0.5)


def bce_logit_gradient(z: float = CHECK_LOGIT, y: float = CHECK_LABEL) -> LogitGradient:
    """Let autograd differentiate BCE through the sigmoid at one logit."""
    z_t = torch.tensor(z, requires_grad=True)
    p = torch.sigmoid(z_t)
    loss = nn.functional.binary_cross_entropy(p, torch.tensor(y))
    loss.backward()
    assert z_t.grad is not None
    return LogitGradient(z=z, y=y, p=p.item(), formula=p.item() - y, autograd=z_t.grad.item())
