"""Each training run trained at most once, and reused while nothing it depends on changes.

`RunCache` trains a `RunSpec` on first request and hands the frozen result to every later
caller, so claims that quote the same run share one training. Given a `Store`
(`bnvg.store`: in pytest's cache folder, or a folder the xdist workers of one session share),
a finished run is saved there under a key that covers everything its numbers depend on:

- the source of the experiment modules a run executes (a comment is enough to change it:
  hashing files is simple and never misses a change that matters);
- the run's spec and the workshop's recipe, seeds included;
- the torch and numpy versions, the CPU capability torch dispatches to, the torch thread
  count, and the Python version.

A run's history is kept in its entry's description and its weights in the content, loaded
when a claim first asks for the network: a session that reads only histories needs no torch.

Change any of them and no entry has the key: the run is trained again. A process that needs
a run another process is training waits for it and loads it; a damaged entry is reported and
trained again. Loading is exact: the saved tensors and floats are the trained ones, bit for bit.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import cache
from types import MappingProxyType
from typing import Any

from filelock import Timeout

from bnvg.experiment.config import WORKSHOP, Workshop
from bnvg.experiment.data import two_moons
from bnvg.experiment.platform import THREADS, Platform, torch_facts
from bnvg.experiment.results import History, TrainedRun
from bnvg.experiment.runs import RUNS, RunSpec, estimated_seconds, run_inputs, run_key, run_named
from bnvg.store import Damaged, Entry, Store


def session_threads() -> int:
    """The intra-op thread count this process computes with (`platform.use_threads`), read
    without importing torch where the session chose it."""
    chosen = os.environ.get(THREADS)
    if chosen:
        return int(chosen)
    from bnvg.experiment.runtime import torch

    return torch.get_num_threads()


@dataclass(frozen=True)
class Reused:
    """A run loaded from the store, and where and when it was trained."""

    name: str
    trained_at: str
    platform: Mapping[str, str]


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

    `store`: where finished runs are kept (None: in memory only). `session` names this
    session; with `recompute`, only entries written in this session are used, so every run
    is trained again once and shared between the session's processes. `on_event` is told
    ("trained" | "reused" | "damaged", name, detail) of every run this process trained,
    loaded, or found damaged.
    """

    def __init__(
        self,
        workshop: Workshop = WORKSHOP,
        store: Store | None = None,
        on_event: Callable[[str, str, Any], None] | None = None,
        session: str = "",
        recompute: bool = False,
        facts: Callable[[], Mapping[str, str]] | None = None,
    ) -> None:
        self.workshop = workshop
        self.store = store
        self.on_event = on_event or (lambda event, name, detail: None)
        self.session = session
        self.recompute = recompute
        self.trained: list[str] = []
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
            self._done[spec] = self._load_or_train(spec, name)
        return self._done[spec]

    def prefetch(self, names: Sequence[str]) -> None:
        """Train, longest first, every run of `names` that the store lacks and no process
        sharing it has started yet; skip those another process is training.

        Workers that all call this split the work between them as they go (whoever is free
        takes the next run), so they finish together even when one started late. The runs
        are not loaded here: `get` loads them when a claim asks.
        """
        if self.store is None:
            return
        for name in sorted(names, key=lambda n: -estimated_seconds(run_named(n), self.workshop)):
            spec = run_named(name)
            key = self.key(spec)
            try:
                with self.store.lock(key, timeout=0):
                    if self._usable(key, name) is None:
                        self._done[spec] = self._train_and_keep(spec, name, key)
            except Timeout:
                continue  # another process is training it

    def _usable(self, key: str, name: str) -> Entry | None:
        """The stored entry for `key` if this session may use it; a damaged one is reported."""
        assert self.store is not None
        found = self.store.get(key)
        if isinstance(found, Damaged):
            self.on_event("damaged", name, found.reason)
            return None
        if found is None or (self.recompute and found.about.get("session") != self.session):
            return None
        return found

    def _train_and_keep(self, spec: RunSpec, name: str, key: str) -> TrainedRun:
        from bnvg.experiment.train import train_run

        run = train_run(spec, two_moons(self.workshop), self.workshop)
        self.trained.append(name)
        self.on_event("trained", name, None)
        if self.store is not None:
            about = {
                "run": name,
                "inputs": run_inputs(spec, self.workshop, self.where),
                "trained at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
                "platform": self.where,
                "session": self.session,
                "history": _history_json(run.history),
            }
            self.store.put(key, _to_bytes(run), about)
        return replace(run, key=key)

    def _load_or_train(self, spec: RunSpec, name: str) -> TrainedRun:
        if self.store is None:
            return self._train_and_keep(spec, name, "")
        key = self.key(spec)
        # One process trains; the others block on the lock, then find the entry.
        with self.store.lock(key):
            entry = self._usable(key, name)
            if entry is None:
                return self._train_and_keep(spec, name, key)
        run = _from_entry(spec, entry, key)
        if entry.about.get("session") != self.session:
            detail = Reused(
                name, str(entry.about.get("trained at")), entry.about.get("platform", {})
            )
            self.on_event("reused", name, detail)
        return run


def _name_of(spec: RunSpec) -> str:
    return next((name for name, known in RUNS.items() if known == spec), str(spec))
