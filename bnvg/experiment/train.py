"""The training loop every variant goes through (sections S6 to S8).

Plain minibatch SGD with a seeded sampler: the same minibatches, in the same order, for every
network. Every `eval_every` steps (and after step 1) it records the full training-set loss
and the held-out test accuracy, both in eval mode.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from bnvg.experiment.config import TARGET_ACCURACY, WORKSHOP, Workshop
from bnvg.experiment.data import TwoMoons
from bnvg.experiment.metrics import accuracy, bce
from bnvg.experiment.model import TinyNet


@dataclass(frozen=True)
class History:
    """What one training run recorded, at steps 1, eval_every, 2 * eval_every, ..."""

    step: tuple[int, ...]
    loss: tuple[float, ...]  # full training-set BCE
    test_acc: tuple[float, ...]  # fraction of the test set classified correctly

    @property
    def final_loss(self) -> float:
        return self.loss[-1]

    @property
    def final_acc(self) -> float:
        return self.test_acc[-1]

    @property
    def best_acc(self) -> float:
        return max(self.test_acc)

    @property
    def first_step_at_target(self) -> int | None:
        """The first recorded step with test accuracy >= 90%, or None if it never got there."""
        return next(
            (s for s, a in zip(self.step, self.test_acc, strict=True) if a >= TARGET_ACCURACY),
            None,
        )


def train(net: TinyNet, data: TwoMoons, lr: float, workshop: Workshop = WORKSHOP) -> History:
    """Train `net` in place for `workshop.steps` SGD steps at learning rate `lr`."""
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr!r}")
    X_train, y_train = data.X_train, data.y_train
    X_test, y_test = data.X_test, data.y_test
    opt = torch.optim.SGD(net.parameters(), lr=lr)
    # A generator of its own: the minibatch sequence never depends on global RNG state.
    g = torch.Generator().manual_seed(workshop.minibatch_seed)
    steps: list[int] = []
    losses: list[float] = []
    accs: list[float] = []
    net.train()
    for step in range(1, workshop.steps + 1):
        idx = torch.randint(0, workshop.n_train, (workshop.batch,), generator=g)
        loss = bce(net(X_train[idx]), y_train[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()

        if step % workshop.eval_every == 0 or step == 1:
            with torch.no_grad():
                net.eval()
                full_loss = bce(net(X_train), y_train).item()
                net.train()
            steps.append(step)
            losses.append(full_loss)
            accs.append(accuracy(net, X_test, y_test))
    return History(step=tuple(steps), loss=tuple(losses), test_acc=tuple(accs))
