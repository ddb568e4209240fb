"""The workshop's training runs, each trained at most once per process.

A `RunSpec` says everything that decides a run's numbers: the network, the learning rate and
whether the at-init gradient ratio was measured on the very network before it trained (that
one train-mode pass nudges batch norm's running statistics, and so the early history).
`RUNS` names the twelve distinct runs the log needs; `RunCache` trains each on first request
and hands out frozen results, so claims that quote the same run share one training.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import torch
from filelock import FileLock, Timeout

from bnvg.atomic import replacing
from bnvg.config import PLAIN, WORKSHOP, NetSpec, Workshop
from bnvg.data import TwoMoons, two_moons
from bnvg.measure import init_grad_ratio
from bnvg.model import TinyNet, build_network
from bnvg.train import History, train


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


DEEP = NetSpec(depth=8)

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


class RunCache:
    """Trains each `RunSpec` at most once, and hands out the frozen result to every caller.

    With `store` set (a folder that several processes share, such as pytest-xdist workers of
    one session), a finished run is also saved there, and a process that needs a run another
    process is training waits for it and loads it instead of training it again. Loading is
    exact: the saved tensors and floats are the trained ones, bit for bit.

    `on_train` is called with the name (or spec) of every run this process actually trained.
    """

    def __init__(
        self,
        workshop: Workshop = WORKSHOP,
        store: Path | None = None,
        on_train: Callable[[str], None] | None = None,
    ) -> None:
        self.workshop = workshop
        self.store = store
        self.on_train = on_train
        self.trained: list[str] = []
        self._done: dict[RunSpec, TrainedRun] = {}

    def get(self, spec: RunSpec | str) -> TrainedRun:
        name = spec if isinstance(spec, str) else _name_of(spec)
        if isinstance(spec, str):
            spec = run_named(spec)
        if spec not in self._done:
            self._done[spec] = self._load_or_train(spec, name)
        return self._done[spec]

    def prefetch(self, names: Sequence[str]) -> None:
        """Train, longest first, every run of `names` that no process sharing the store has
        started yet; skip those another process is training or has trained.

        Workers that all call this split the work between them as they go (whoever is free
        takes the next run), so they finish together even when one started late. The runs
        are not loaded here: `get` loads them when a claim asks.
        """
        if self.store is None:
            return
        self.store.mkdir(parents=True, exist_ok=True)
        for name in sorted(names, key=lambda n: -estimated_seconds(run_named(n), self.workshop)):
            spec = run_named(name)
            path = self._path(spec)
            try:
                with FileLock(str(path) + ".lock", timeout=0):
                    if not path.exists():
                        self._done[spec] = self._train(spec, name)
                        _save(self._done[spec], path)
            except Timeout:
                continue  # another worker is training it

    def _path(self, spec: RunSpec) -> Path:
        assert self.store is not None
        return self.store / f"run-{_fingerprint(spec, self.workshop)}.pt"

    def _train(self, spec: RunSpec, name: str) -> TrainedRun:
        run = train_run(spec, two_moons(self.workshop), self.workshop)
        self.trained.append(name)
        if self.on_train is not None:
            self.on_train(name)
        return run

    def _load_or_train(self, spec: RunSpec, name: str) -> TrainedRun:
        if self.store is None:
            return self._train(spec, name)
        self.store.mkdir(parents=True, exist_ok=True)
        path = self._path(spec)
        # One process trains; the others block on the lock, then find the file.
        with FileLock(str(path) + ".lock"):
            if path.exists():
                return _load(spec, path)
            run = self._train(spec, name)
            _save(run, path)
            return run


def _name_of(spec: RunSpec) -> str:
    return next((name for name, known in RUNS.items() if known == spec), str(spec))


def _fingerprint(spec: RunSpec, workshop: Workshop) -> str:
    return hashlib.sha256(repr((spec, workshop)).encode()).hexdigest()[:16]


def _save(run: TrainedRun, path: Path) -> None:
    h = run.history
    payload = {"history": [list(h.step), list(h.loss), list(h.test_acc)], "state": dict(run._state)}
    with replacing(path) as tmp:
        torch.save(payload, tmp)


def _load(spec: RunSpec, path: Path) -> TrainedRun:
    payload = torch.load(path, weights_only=True)
    step, loss, acc = payload["history"]
    history = History(step=tuple(step), loss=tuple(loss), test_acc=tuple(acc))
    return TrainedRun(spec=spec, history=history, _state=MappingProxyType(payload["state"]))
