"""The training loop every variant goes through (sections S6 to S8), and a finished run.

Plain minibatch SGD with a seeded sampler: the same minibatches, in the same order, for every
network. Every `eval_every` steps (and after step 1) it records the full training-set loss
and the held-out test accuracy, both in eval mode.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import torch

from bnvg.experiment.config import TARGET_ACCURACY, WORKSHOP, Workshop
from bnvg.experiment.data import TwoMoons
from bnvg.experiment.measure import init_grad_ratio
from bnvg.experiment.metrics import accuracy, bce
from bnvg.experiment.model import TinyNet, build_network
from bnvg.experiment.runs import RunSpec


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


@dataclass(frozen=True)
class TrainedRun:
    """A finished run: its history, and its final weights kept out of anyone's reach."""

    spec: RunSpec
    history: History
    _state: Mapping[str, torch.Tensor] = field(repr=False)

    def network(self, workshop: Workshop = WORKSHOP) -> TinyNet:
        """A fresh copy of the trained network, in eval mode; changing it changes nothing
        any other caller sees."""
        net = build_network(self.spec.net, workshop)
        net.load_state_dict({k: v.clone() for k, v in self._state.items()})
        net.eval()
        return net


def train_run(spec: RunSpec, data: TwoMoons, workshop: Workshop = WORKSHOP) -> TrainedRun:
    """Build, optionally probe, and train one run from scratch."""
    net = build_network(spec.net, workshop)
    if spec.probed:
        init_grad_ratio(net, data.X_train, data.y_train)
    history = train(net, data, spec.lr, workshop)
    state = MappingProxyType({k: v.detach().clone() for k, v in net.state_dict().items()})
    return TrainedRun(spec=spec, history=history, _state=state)
