"""The loss every network trains on, and the accuracy every table reports.

`bce` fuses the sigmoid into binary cross-entropy (BCEWithLogitsLoss), which is numerically
stable for large logits; its gradient with respect to the logit is p - y (section S2).
"""

from __future__ import annotations

from torch import nn

from bnvg.experiment.runtime import torch

bce = nn.BCEWithLogitsLoss()  # stateless: one instance serves every caller


def accuracy(net: nn.Module, X: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of correct predictions (a logit > 0 means p > 0.5).

    Evaluates in `eval()` mode, so batch norm normalises with its running averages rather
    than this batch's statistics (the S9 bug, avoided), then restores the caller's mode.
    """
    was_training = net.training
    net.eval()
    with torch.no_grad():
        acc = float(((net(X) > 0).float() == y).float().mean().item())
    net.train(was_training)
    return acc
