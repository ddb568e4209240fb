"""The training loop every variant goes through (sections S6 to S8), and a finished run.

Plain minibatch SGD with a seeded sampler: the same minibatches, in the same order, for every
network. Every `eval_every` steps (and after step 1) it records the full training-set loss
and the held-out test accuracy, both in eval mode.
"""

from __future__ import annotations

from types import MappingProxyType

from bnvg.experiment.config import WORKSHOP, RunSpec, Workshop
from bnvg.experiment.data import TwoMoons
from bnvg.experiment.measure import init_grad_ratio
from bnvg.experiment.model import TinyNet, accuracy, bce, build_network
from bnvg.experiment.results import History, TrainedRun
from bnvg.experiment.runtime import torch


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


def train_run(spec: RunSpec, data: TwoMoons, workshop: Workshop = WORKSHOP) -> TrainedRun:
    """Build, optionally probe, and train one run from scratch."""
    net = build_network(spec.net, workshop)
    if spec.probed:
        init_grad_ratio(net, data.X_train, data.y_train)
    history = train(net, data, spec.lr, workshop)
    state = MappingProxyType({k: v.detach().clone() for k, v in net.state_dict().items()})
    return TrainedRun(spec=spec, history=history, _state=lambda: state)
