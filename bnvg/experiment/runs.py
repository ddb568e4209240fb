"""The workshop's training runs: what decides each one's numbers, and how one is trained.

A `RunSpec` says everything that decides a run's numbers: the network, the learning rate and
whether the at-init gradient ratio was measured on the very network before it trained (that
one train-mode pass nudges batch norm's running statistics, and so the early history).
`RUNS` names the twelve distinct runs the log needs; `train_run` trains one from scratch
(`bnvg.experiment.run_cache` trains each at most once and shares it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import torch

from bnvg.experiment.config import DEEP_DEPTH, PLAIN, WORKSHOP, NetSpec, Workshop
from bnvg.experiment.data import TwoMoons
from bnvg.experiment.measure import init_grad_ratio
from bnvg.experiment.model import TinyNet, build_network
from bnvg.experiment.train import History, train


@dataclass(frozen=True)
class RunSpec:
    """One training run: which network, which learning rate, and how it was prepared."""

    net: NetSpec = PLAIN
    lr: float = WORKSHOP.lr
    probed: bool = False  # True: init_grad_ratio ran on this network before training

    def __post_init__(self) -> None:
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr!r}")

    def __str__(self) -> str:
        return f"{self.net}, lr={self.lr}" + (", probed" if self.probed else "")


DEEP = NetSpec(depth=DEEP_DEPTH)

# The distinct runs of the log. The S8 rows "plain sigmoid" and "batch norm" are the S6 runs:
# S8 probes them first, which changes nothing the log prints (the plain net has no running
# statistics; batch norm's converge to the same values and its parameters end bit-identical).
RUNS: Mapping[str, RunSpec] = MappingProxyType(
    {
        "plain": RunSpec(),
        "batch norm": RunSpec(NetSpec(norm="batch")),
        "plain, lr = 5.0": RunSpec(lr=5.0),
        "plain, lr = 50.0": RunSpec(lr=50.0),
        "depth 8 plain, lr = 0.5": RunSpec(DEEP, lr=0.5),
        "depth 8 plain, lr = 5.0": RunSpec(DEEP, lr=5.0),
        "depth 8 plain, lr = 50.0": RunSpec(DEEP, lr=50.0),
        "depth 8 batch norm, lr = 0.5": RunSpec(DEEP.replace(norm="batch"), probed=True),
        "ReLU": RunSpec(NetSpec(act="relu"), probed=True),
        "Xavier init": RunSpec(NetSpec(init="xavier"), probed=True),
        "residual": RunSpec(NetSpec(residual=True), probed=True),
        "layer norm": RunSpec(NetSpec(norm="layer"), probed=True),
    }
)


def estimated_seconds(spec: RunSpec, workshop: Workshop = WORKSHOP) -> float:
    """A rough training time on one core, measured on the reference machine: a fixed cost
    per step plus a cost per hidden layer that batch norm roughly triples. It only has to
    rank runs well enough to split them evenly between processes."""
    per_layer = {"batch": 0.45, "layer": 0.25}.get(spec.net.norm, 0.15)
    return (1.1 + spec.net.depth * per_layer) * workshop.steps / 4000


def run_named(name: str) -> RunSpec:
    """The `RUNS` entry called `name`, or a ValueError listing the valid names."""
    try:
        return RUNS[name]
    except KeyError:
        raise ValueError(
            f"unknown run {name!r}: valid names are " + ", ".join(repr(n) for n in RUNS)
        ) from None


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
