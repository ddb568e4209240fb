"""The classic bug (section S9): predicting with a batch-norm net left in train mode.

In train mode batch norm normalises every batch by that batch's own mean and variance. On a
large, mixed batch those are close to the training statistics and predictions look fine; on a
batch of two they are nonsense, and so are the predictions. `model.eval()` switches to the
running averages learned in training and removes the dependence on batch composition.
"""

from __future__ import annotations

import copy

from torch import nn

from bnvg.experiment.config import EVAL_BUG_BATCH
from bnvg.experiment.model import TinyNet
from bnvg.experiment.results import EvalBug
from bnvg.experiment.runtime import torch


def _correct(logits: torch.Tensor) -> torch.Tensor:
    return (logits > 0).float()


def demonstrate_eval_bug(
    net: TinyNet, X_test: torch.Tensor, y_test: torch.Tensor, batch: int = EVAL_BUG_BATCH
) -> EvalBug:
    """Score a trained batch-norm net in eval mode and in train mode.

    Works on a private copy: a train-mode forward pass overwrites batch norm's running
    statistics, and the caller's network must come back exactly as it went in.
    """
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 2:
        raise ValueError(
            f"batch norm needs batches of at least 2 points to normalise, got {batch!r}"
        )
    if net.spec.norm != "batch":
        raise ValueError(f"the eval bug needs a batch-norm network, got {net!r}")
    net = copy.deepcopy(net)
    net.eval()
    with torch.no_grad():
        acc_eval = (_correct(net(X_test)) == y_test).float().mean().item()

    net.train()  # the bug: every batch normalised by its own statistics
    with torch.no_grad():
        acc_full = (_correct(net(X_test)) == y_test).float().mean().item()
        # Small batches: batch norm needs more than one sample to compute a variance, so a
        # last batch of fewer than `batch` points is left out, as the workshop does.
        starts = range(0, len(X_test) - (batch - 1), batch)
        pred = torch.cat([_correct(net(X_test[i : i + batch])) for i in starts])
        acc_small = (pred == y_test[: len(pred)]).float().mean().item()

    first_norm = net.norms[0]
    assert isinstance(first_norm, nn.BatchNorm1d)
    return EvalBug(
        eval_mode=acc_eval,
        train_mode_full_batch=acc_full,
        train_mode_small_batches=acc_small,
        batch=batch,
        gamma=tuple(first_norm.weight.detach().tolist()),
        beta=tuple(first_norm.bias.detach().tolist()),
    )
