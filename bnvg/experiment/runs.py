"""The workshop's training runs: what decides each, and each trained at most once.

A `RunSpec` (`bnvg.experiment.config`) says what decides a run beside the recipe: the
network, the learning rate and whether the at-init gradient ratio was measured on the very
network before it trained (that one train-mode pass nudges batch norm's running statistics,
and so the early history).
`RUNS` names the twelve distinct runs the log needs; `bnvg.experiment.train.train_run`
trains one.

`RunCache` trains a `RunSpec` on first request and hands the frozen result to every later
caller, so claims that quote the same run share one training. Given a `Store` (`bnvg.store`:
in pytest's cache folder, or a folder the xdist workers of one session share), a finished run
is kept there under `run_key`, a digest of everything its numbers depend on:

- the source of the experiment modules a run executes (`RUN_SOURCES`; a comment is enough to
  change it: hashing files is simple and never misses a change that matters);
- the run's spec and the workshop's recipe, seeds included;
- the platform (`bnvg.experiment.platform.Platform.cache_fields`): torch and numpy, the
  kernels they dispatch to, the thread count, the CPU and the Python.

Change any of them and no entry has the key: the run is trained again. A run's history is
kept in its entry's description and its weights in the content, loaded when a claim first
asks for the network, so a session that reads only histories needs no torch. A process that
needs a run another process is training waits for it and loads it; a damaged entry is
reported and trained again. Loading is exact: the saved tensors and floats are the trained
ones, bit for bit.

No torch at import: the keys are read by processes that never train (pytest-xdist's
controller).
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from bnvg.experiment.config import DEEP_DEPTH, WORKSHOP, NetSpec, RunSpec, Workshop
from bnvg.experiment.data import two_moons
from bnvg.experiment.platform import THREADS, Platform, torch_facts
from bnvg.experiment.results import History, TrainedRun
from bnvg.store import COMPUTED, Entry, Event, Memo, Store, digest, source_digest

EXPERIMENT = Path(__file__).resolve().parent
# The modules a training run executes; editing any other (the eval bug, the figures' data)
# retrains nothing.
RUN_SOURCES = (
    "config.py",
    "data.py",
    "model.py",
    "measure.py",
    "train.py",
    "runs.py",
    "results.py",  # what a run returns
    "runtime.py",  # torch, with the session's thread count
)


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


def run_inputs(spec: RunSpec, workshop: Workshop, where: Mapping[str, str]) -> dict[str, str]:
    """Everything a run's numbers depend on; `where` is the platform's
    (`bnvg.experiment.platform.Platform.cache_fields`)."""
    return {
        "source": source_digest(EXPERIMENT / name for name in RUN_SOURCES),
        "spec": repr(spec),
        "workshop": repr(workshop),
        **where,
    }


def run_key(spec: RunSpec, workshop: Workshop, where: Mapping[str, str]) -> str:
    """The key of a run's entry: a digest of everything its numbers depend on."""
    return digest(json.dumps(run_inputs(spec, workshop, where), sort_keys=True))


def stored_runs(folder: Path, workshop: Workshop, where: Mapping[str, str]) -> set[str]:
    """The names of the runs of `RUNS` whose entries in `folder` were made for `where`: a
    cheap look, without torch, at what a session would reuse (the session itself checks the
    whole key, and trains what does not match)."""
    found = set()
    for about_path in folder.glob("*.json"):
        try:
            inputs = json.loads(about_path.read_text()).get("inputs", {})
        except (OSError, ValueError, AttributeError):
            continue
        for name, spec in RUNS.items():
            wanted = run_inputs(spec, workshop, where)
            if all(inputs.get(k) == v for k, v in wanted.items()):
                found.add(name)
    return found


# -- RunCache: each run trained at most once, and reused from a store -----------------------
def session_threads() -> int:
    """The intra-op thread count this process computes with (`platform.use_threads`), read
    without importing torch where the session chose it."""
    chosen = os.environ.get(THREADS)
    if chosen:
        return int(chosen)
    from bnvg.experiment.runtime import torch

    return torch.get_num_threads()


def _to_bytes(run: TrainedRun) -> bytes:
    """The entry's content: the final weights (the history goes into its description, where
    a session reads it without torch)."""
    from bnvg.experiment.runtime import torch

    buffer = io.BytesIO()
    torch.save({"state": dict(run.state())}, buffer)
    return buffer.getvalue()


def _history_json(h: History) -> list[list[float]]:
    return [list(h.step), list(h.loss), list(h.test_acc)]


def _weights(content: bytes) -> Callable[[], Mapping[str, Any]]:
    """The weights of an entry, loaded (with torch) when first asked for."""

    @cache
    def load() -> Mapping[str, Any]:
        from bnvg.experiment.runtime import torch

        payload = torch.load(io.BytesIO(content), weights_only=True)
        return MappingProxyType(payload["state"])

    return load


def _from_entry(spec: RunSpec, entry: Entry, key: str) -> TrainedRun:
    step, loss, acc = entry.about["history"]
    history = History(step=tuple(step), loss=tuple(loss), test_acc=tuple(acc))
    return TrainedRun(spec=spec, history=history, _state=_weights(entry.content), key=key)


class RunCache:
    """Trains each `RunSpec` at most once, and hands out the frozen result to every caller.

    `store`: where finished runs are kept (None: in memory only), through a `Memo` of kind
    "run": `session` names this session, and with `recompute` only entries written in this
    session are used, so every run is trained again once and shared between the session's
    processes. `on_event` is told of every run this process trained ("computed"), loaded
    ("reused", with the entry's description: when and on what it was trained) or found
    damaged.
    """

    def __init__(
        self,
        workshop: Workshop = WORKSHOP,
        store: Store | None = None,
        on_event: Callable[[Event], None] | None = None,
        session: str = "",
        recompute: bool = False,
        facts: Callable[[], Mapping[str, str]] | None = None,
    ) -> None:
        self.workshop = workshop
        self.trained: list[str] = []
        told = on_event or (lambda event: None)

        def note(event: Event) -> None:
            if event.what == COMPUTED:
                self.trained.append(event.name)
            told(event)

        self.memo = Memo(store, "run", recompute=recompute, session=session, on_event=note)
        self._done: dict[RunSpec, TrainedRun] = {}
        self._facts = facts or torch_facts
        self._where: dict[str, str] | None = None

    @property
    def where(self) -> dict[str, str]:
        """This process's platform, as the runs' keys name it."""
        if self._where is None:
            here = Platform.here(session_threads(), self._facts())
            self._where = here.cache_fields()
        return self._where

    def key(self, spec: RunSpec) -> str:
        return run_key(spec, self.workshop, self.where)

    def get(self, spec: RunSpec | str) -> TrainedRun:
        name = spec if isinstance(spec, str) else _name_of(spec)
        if isinstance(spec, str):
            spec = run_named(spec)
        if spec not in self._done:
            run = self._kept(spec, name, wait=True)
            assert run is not None  # waiting for the lock always gives a run
            self._done[spec] = run
        return self._done[spec]

    def prefetch(self, names: Sequence[str]) -> None:
        """Train, longest first, every run of `names` that the store lacks and no process
        sharing it has started yet; skip those another process is training.

        Workers that all call this split the work between them as they go (whoever is free
        takes the next run), so they finish together even when one started late. A run
        found kept is only described (its weights load when a claim asks for the network).
        """
        if self.memo.store is None:
            return
        for name in sorted(names, key=lambda n: -estimated_seconds(run_named(n), self.workshop)):
            spec = run_named(name)
            try:
                run = self._kept(spec, name, wait=False)  # None: another process is training it
            except Exception:
                # A run that cannot be trained (a ReLU net whose every unit starts dead has no
                # output gradient to divide by, as under --init-seed 27) fails the claims that
                # read it, when they ask for it, exactly as in one process: never the session
                # fixture that prefetches, which would fail every claim of this worker.
                continue
            if run is not None:
                self._done[spec] = run

    def _kept(self, spec: RunSpec, name: str, wait: bool) -> TrainedRun | None:
        """The run, loaded from the store or trained now and kept there."""
        key = self.key(spec) if self.memo.store is not None else ""

        def train() -> TrainedRun:
            from bnvg.experiment.train import train_run

            return replace(train_run(spec, two_moons(self.workshop), self.workshop), key=key)

        def about(run: TrainedRun) -> dict[str, Any]:
            return {
                "inputs": run_inputs(spec, self.workshop, self.where),
                "platform": self.where,
                "history": _history_json(run.history),
            }

        return self.memo.get(
            name,
            key,
            train,
            encode=_to_bytes,
            decode=lambda entry: _from_entry(spec, entry, key),
            about=about,
            wait=wait,
        )


def _name_of(spec: RunSpec) -> str:
    return next((name for name, known in RUNS.items() if known == spec), str(spec))
