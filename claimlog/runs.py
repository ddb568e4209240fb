"""A workshop's trained runs: each trained at most once, kept in pytest's cache, and those of
one shape trained together (`claimlog.declaration.Together`) where that gives the same bits.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, nullcontext
from typing import TYPE_CHECKING, Any

from filelock import Timeout

from claimlog.store import APART, COMPUTED, MISSING, Entry, Event, Memo, Store, digest, read_json

if TYPE_CHECKING:
    from claimlog.declaration import Together, Training


def known_run(training: Training, name: str) -> str:
    """`name`, if `training` has a run of that name; else a ValueError listing the valid names."""
    names = training.names()
    if name not in names:
        raise ValueError(
            f"unknown run {name!r}: valid names are " + ", ".join(repr(n) for n in names)
        )
    return name


class TrainedRuns:
    """A workshop's trained runs (`claimlog.declaration.Training`), each trained at most once
    and handed to every caller, so claims that quote the same run share one training.

    Given a `Store`, a finished run is kept there, through a `Memo` of kind "run", under a key
    of everything its numbers depend on: the run's `Training.inputs` (its code, its settings,
    the recipe) and `where` (`claimlog.platform.Platform.cache_fields`: torch, the kernels,
    the threads, the CPU). Change any of them and no entry has the key: the run is trained
    again. The entry's description holds the run's own (`Training.describe`: its history)
    beside those inputs, so that `kept_names` tells which runs are there without torch.
    `session` and `recompute` are the `Memo`'s; `prepare` runs before the first training (the
    engine imports torch with the session's thread count there); `hear` surrounds each run
    trained alone (the engine hears its kernels there, as it computes them).

    Given the workshop's `together` (`claimlog.declaration.Together`, asked for only once a
    run is missing: it may import torch), `prefetch` trains the runs of one shape at once
    (`train_together`), where a canary says together gives the bits one at a time gives on
    this platform; `checked` keeps each shape's answer.
    """

    def __init__(
        self,
        training: Training,
        recipe: Any,
        where: Callable[[], Mapping[str, str]],
        store: Store | None = None,
        *,
        on_event: Callable[[Event], None] | None = None,
        session: str = "",
        recompute: bool = False,
        prepare: Callable[[], object] = lambda: None,
        together: Callable[[], Together] | None = None,
        hear: Callable[[str], AbstractContextManager[object]] = lambda name: nullcontext(),
    ) -> None:
        self.training = training
        self.hear = hear
        self.recipe = recipe
        self._make_together = together
        self._together: Together | None = None
        self.checked: dict[str, bool] = {}  # per shape: whether together gives the same bits
        self.trained: list[str] = []  # by this process, in order
        told = on_event or (lambda event: None)

        def note(event: Event) -> None:
            if event.what == COMPUTED:
                self.trained.append(event.name)
            told(event)

        self.memo = Memo(store, "run", recompute=recompute, session=session, on_event=note)
        self._where_of = where
        self._where: dict[str, str] | None = None
        self._prepare = prepare
        self._done: dict[str, Any] = {}

    @property
    def together(self) -> Together | None:
        """The workshop's way of training runs together, made when first asked."""
        if self._together is None and self._make_together is not None:
            self._together = self._make_together()
        return self._together

    @property
    def where(self) -> dict[str, str]:
        """The platform, as the runs' keys name it (asked once)."""
        if self._where is None:
            self._where = dict(self._where_of())
        return self._where

    def inputs(self, name: str) -> dict[str, dict[str, str]]:
        """Everything the run's numbers depend on: the workshop's inputs and the platform,
        apart (a workshop's input may share a name with a platform field)."""
        return {"run": dict(self.training.inputs(name, self.recipe)), "platform": self.where}

    def key(self, name: str) -> str:
        """The key of the run's entry: a digest of everything its numbers depend on."""
        return digest(json.dumps(self.inputs(name), sort_keys=True))

    def kept_key(self, name: str) -> str:
        """The key a run is trained and kept under (`Training.train`'s `key`): none without
        a store, where nothing is kept and no figure can be known by it."""
        return self.key(name) if self.memo.store is not None else ""

    def keep_also_as(self, other: TrainedRuns, names: Iterable[str]) -> list[str]:
        """The runs `names` this store holds for these inputs, kept also under `other`'s (the
        same runs, their platform described anew: a full update has recorded its
        fingerprint). The names `other` finds kept now."""
        store = self.memo.store
        if store is None:
            return []
        return [
            name
            for name in names
            if store.keep_as(
                self.key(name),
                other.key(name),
                {"inputs": other.inputs(name), "platform": other.where},
            )
        ]

    def kept_names(self) -> set[str]:
        """The names of the runs whose entries the store holds for these inputs: a cheap look,
        without torch, at what a session would reuse (reading one checks its whole entry)."""
        if self.memo.store is None:
            return set()
        wanted = {name: self.inputs(name) for name in self.training.names()}
        found = set()
        for about_path in self.memo.store.folder.glob("*.json"):
            about = read_json(about_path)
            inputs = about.get("inputs") if isinstance(about, dict) else None
            found |= {name for name, w in wanted.items() if inputs == w}
        return found

    def get(self, name: str) -> Any:
        """The run `name`: kept from before, or trained now (waiting for a process that is
        training it)."""
        if known_run(self.training, name) not in self._done:
            self._done[name] = self._load_or_train(name)
        return self._done[name]

    def prefetch(self, names: Sequence[str]) -> None:
        """Train, longest first, every run of `names` that the store lacks and no process
        sharing it has started yet; skip those another process is training. Runs of one
        shape train together (`train_together`), as one unit of the work.

        Processes that all call this split the work between them as they go (whoever is free
        takes the next run), so they finish together even when one started late. A run found
        kept is only described (a workshop may load its weights when they are asked for).
        """
        if self.memo.store is None and self._make_together is None:
            return
        # Read without torch (a warm session imports none); under --recompute only this
        # session's entries count, and they are found as the groups are trained.
        kept = set() if self.memo.recompute else self.kept_names()
        for name in (known_run(self.training, n) for n in names):
            if name in kept and name not in self._done:
                try:
                    self._load_kept(name)
                except Exception:
                    continue  # read again, or trained, when a claim asks for it
        missing = [n for n in names if known_run(self.training, n) not in self._done]
        if missing:
            self._prepare()  # torch, as the engine imports it, before the workshop's code does
        for group in self.groups(missing) if missing else []:
            try:
                train_together([(self, name) for name in group], wait=False)
            except Exception:
                # A run that cannot be trained fails the claims that read it, when they ask
                # for it, exactly as in one process: never the session fixture that
                # prefetches, which would fail every claim of this process.
                continue

    def _load_kept(self, name: str) -> None:
        """The kept run `name`, read (never trained: one that cannot be read is missing)."""
        assert self.memo.store is not None
        with self.memo.store.lock(self.key(name)):
            found = self.found(name)
        if found is not MISSING:
            self._done[name] = found

    def groups(self, names: Sequence[str]) -> list[list[str]]:
        """`names` in the units they train in, longest first: those of one shape together
        (each alone without the workshop's `together`)."""
        by_shape: dict[object, list[str]] = {}
        for name in dict.fromkeys(known_run(self.training, n) for n in names):
            shape = self.together.shape(name, self.recipe) if self.together else None
            by_shape.setdefault(shape if shape is not None else ("alone", name), []).append(name)
        cost = self.training.cost
        return sorted(by_shape.values(), key=lambda g: -sum(cost(n, self.recipe) for n in g))

    def found(self, name: str) -> Any:
        """The kept run, or MISSING (the caller holds its lock)."""
        key = self.key(name)
        return self.memo.found(name, key, lambda entry: self._decode(name, entry, key))

    def keep(self, name: str, run: Any, seconds: float, detail: Mapping[str, Any]) -> None:
        """Keep `run`, trained in `seconds` (the caller holds its lock)."""
        key = self.kept_key(name)
        self.memo.keep(name, key, run, self.training.encode, self._about(name), seconds, detail)
        self._done[name] = run

    def _decode(self, name: str, entry: Entry, key: str) -> Any:
        return self.training.decode(name, entry.content, entry.about["run"], key)

    def _about(self, name: str) -> Callable[[Any], Mapping[str, Any]]:
        return lambda run: {
            "inputs": self.inputs(name),
            "platform": self.where,  # for the summary: where a reused run was trained
            "run": dict(self.training.describe(run)),
        }

    def _load_or_train(self, name: str) -> Any:
        key = self.kept_key(name)

        def train() -> Any:
            self._prepare()
            with self.hear(name):
                return self.training.train(name, self.recipe, key)

        return self.memo.get(
            name,
            key,
            train,
            encode=self.training.encode,
            decode=lambda entry: self._decode(name, entry, key),
            about=self._about(name),
        )


CANARY = 8  # runs a canary trains together at the most


def train_together(members: Sequence[tuple[TrainedRuns, str]], *, wait: bool = True) -> None:
    """Train the runs `members` name (each of its `TrainedRuns`: its recipe, store and
    platform; all of one workshop and one shape), those their stores lack, at once
    (`Together.train`), and keep each as its single training would be kept. Each run's lock
    is held meanwhile (`wait=False`: a run another process holds is left to it), taken in
    the order of their keys, so that processes taking several never wait on each other.

    Together only where the workshop's canary (`Together.same_bits`, on the runs themselves,
    or on `CANARY` of a larger group, a run of each name first) says it gives the bits one
    at a time gives on this platform; otherwise one at a time, and an `APART` event says so."""
    with ExitStack() as held:
        todo: list[tuple[TrainedRuns, str]] = []
        for runs, name in sorted(members, key=lambda m: m[0].key(m[1])):
            if name in runs._done:
                continue
            if runs.memo.store is not None:
                lock = runs.memo.store.lock(runs.key(name), timeout=-1 if wait else 0)
                try:
                    lock.acquire()
                except Timeout:
                    continue  # another process is training it
                kept = runs.found(name)
                if kept is not MISSING:
                    lock.release()  # nothing to train: the others need not wait for us
                    runs._done[name] = kept
                    continue
                held.callback(lock.release)
            todo.append((runs, name))
        if not todo:
            return
        first = todo[0][0]
        together = first.together
        first._prepare()
        if together is None or len(todo) == 1 or not _agree(todo):
            if together is not None and len(todo) > 1:
                names = ", ".join(dict.fromkeys(name for _, name in todo))
                first.memo.on_event(Event(APART, "run", names, len(todo)))
            for runs, name in todo:
                started = time.perf_counter()
                with runs.hear(name):
                    run = runs.training.train(name, runs.recipe, runs.kept_key(name))
                runs.keep(name, run, time.perf_counter() - started, {})
            return
        started = time.perf_counter()
        trained = together.train(
            [(name, runs.recipe) for runs, name in todo],
            [runs.kept_key(name) for runs, name in todo],
        )
        share = (time.perf_counter() - started) / len(todo)
        for (runs, name), run in zip(todo, trained, strict=True):
            if not isinstance(run, Exception):  # one that failed fails alone, when read
                runs.keep(name, run, share, {"together": len(todo)})


def _agree(todo: Sequence[tuple[TrainedRuns, str]]) -> bool:
    """The canary's answer for the shape of `todo`, asked once per `TrainedRuns`."""
    first = todo[0][0]
    assert first.together is not None
    shape = first.together.shape(todo[0][1], first.recipe) or ""
    if shape not in first.checked:
        # The canary is the group itself, or, for a larger one, a run of each name first.
        order = list(range(len(todo)))
        if len(todo) > CANARY:
            firsts = {todo[i][1]: i for i in reversed(range(len(todo)))}
            order = sorted(firsts.values()) + [i for i in order if i not in firsts.values()]
        canary = [(todo[i][1], todo[i][0].recipe) for i in order[:CANARY]]
        first.checked[shape] = first.together.same_bits(canary)
    return first.checked[shape]
