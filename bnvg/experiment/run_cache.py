"""Each training run trained at most once, and shared between the processes of one session.

`RunCache` trains a `RunSpec` on first request and hands out the frozen result to every later
caller, so claims that quote the same run share one training. Given a `store` folder that
several processes share (the pytest-xdist workers of one session), a finished run is saved
there and a process that needs a run another one is training waits for it and loads it. The
saved tensors and floats are the trained ones, bit for bit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from types import MappingProxyType

import torch
from filelock import FileLock, Timeout

from bnvg.experiment.config import WORKSHOP, Workshop
from bnvg.experiment.data import two_moons
from bnvg.experiment.runs import RUNS, RunSpec, TrainedRun, estimated_seconds, run_named, train_run
from bnvg.experiment.train import History
from bnvg.files import replacing


class RunCache:
    """Trains each `RunSpec` at most once, and hands out the frozen result to every caller.

    `store`: a folder shared with other processes (see the module docstring), or None.
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
