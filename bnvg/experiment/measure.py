"""At-initialisation measurements (section S4): where the backward signal dies.

One forward/backward pass over the full training set, no optimiser step. Per hidden layer it
reads the weight gradient ||dL/dW_k||, the travelling signal ||dL/dh_k||, the forward scales
(std of z_pre, z and h), the mean sigmoid slope, the share of saturated units and the gain W_k
gives a typical vector. The one-number summary is the ratio of the first hidden layer's
weight gradient to the output layer's: ~1e-4 for the plain sigmoid net, ~0.2 with batch norm.
"""

from __future__ import annotations

import math

from bnvg.experiment.model import TinyNet, bce
from bnvg.experiment.results import AtInit, LayerStats
from bnvg.experiment.runtime import torch

SATURATED_SLOPE = 0.05  # a sigmoid slope below this sits deep in a flat zone


def measure_at_init(net: TinyNet, X: torch.Tensor, y: torch.Tensor) -> AtInit:
    """Measure one fresh network with one forward/backward pass on (X, y).

    The network is left with no gradients; in train mode, as in the workshop, so a
    batch-norm net's running statistics take one update from this pass.
    """
    net.zero_grad()
    logits, rec = net.forward_recorded(X)
    loss = bce(logits, y)
    loss.backward()
    rows = []
    for k, (z_pre, z, h) in enumerate(zip(rec.z_pre, rec.z, rec.h, strict=True)):
        slopes = torch.sigmoid(z) * (1 - torch.sigmoid(z))
        weight = net.linear(k).weight
        assert weight.grad is not None and h.grad is not None
        rows.append(
            LayerStats(
                layer=k + 1,
                w_grad=weight.grad.norm().item(),
                h_grad=h.grad.norm().item(),
                z_pre_std=z_pre.std().item(),
                z_std=z.std().item(),
                h_std=h.std().item(),
                slope=slopes.mean().item(),
                # A healthy mean slope could hide a saturated tail, so count that tail too.
                sat_pct=(slopes < SATURATED_SLOPE).float().mean().item() * 100,
                w_gain=weight.norm().item() / math.sqrt(min(weight.shape)),
            )
        )
    assert net.out.weight.grad is not None
    out_grad = net.out.weight.grad.norm().item()
    net.zero_grad()
    return AtInit(loss=loss.item(), layers=tuple(rows), out_grad=out_grad)


def init_grad_ratio(net: TinyNet, X: torch.Tensor, y: torch.Tensor) -> float:
    """||dL/dW|| of the first hidden layer over the output layer's, before any training.

    The cheap form of `measure_at_init(...).grad_ratio` that S7 and S8 quote; it too runs in
    train mode, so it updates a batch-norm net's running statistics once.
    """
    net.zero_grad()
    loss = bce(net(X), y)
    loss.backward()
    w1, w_out = net.linear(0).weight.grad, net.out.weight.grad
    assert w1 is not None and w_out is not None
    ratio = float(w1.norm().item() / w_out.norm().item())
    net.zero_grad()
    return ratio
