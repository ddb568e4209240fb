"""How long the sweep has left, from what its tasks measured as they went.

A batch of seeds (`claimlog.sweep.job.run_batch`) spends most of its time in one phase, the
together training, and finishes nothing until its end: counting finished jobs says nothing
for most of the sweep. So a batch tells the sweep's client what it measured as it goes
(`Phases`, a Dask event): how long collecting its claims and a session of those that read
no run took, then the together training's fraction done and its seconds (the batch trains
together first, so this comes early), then what its first seed cost alone, then its other
seeds'. `batch_seconds` makes a batch's whole time of them, and `time_left`
hands the tasks still waiting to the workers as they come free, as Dask does, to say when
the last one ends. A job on its own (a platform's) tells nothing: until one ends, it is taken
to cost what a seed costs alone.
"""

from __future__ import annotations

import contextlib
import heapq
import time
from collections.abc import Mapping, Sequence
from typing import Any

# The Dask event topic on which a batch tells the sweep's client what it measured so far.
PROGRESS = "claimlog-sweep-progress"

# What a job alone costs like: its threads, and whether it runs in a process of its own.
Kind = tuple[int, bool]


class Phases:
    """What a batch has measured, told to the sweep's client as it goes (a Dask event on
    `PROGRESS`; off a worker, only kept): its seeds; how long collecting its claims took,
    and a session of those that read no run; the together training's fraction done and its
    seconds so far; the workshop's own rough estimate of one seed's training
    (`Training.cost`), then what its first seed cost alone; the mean of its other seeds;
    whether its seeds train one at a time (`apart`)."""

    def __init__(self, seeds: int) -> None:
        self.facts: dict[str, Any] = {"seeds": seeds}
        self.started = time.perf_counter()
        self._told = -1.0
        try:
            from distributed import get_worker

            self._worker: Any = get_worker()
            self.facts["task"] = str(self._worker.get_current_task())
        except ValueError:  # not in a worker's task
            self._worker = None

    def note(self, every: float = 0.0, **facts: Any) -> None:
        """Add `facts`; tell them, unless the last were told less than `every` seconds ago."""
        self.facts.update(facts)
        now = time.perf_counter()
        if self._worker is not None and now - self._told >= every:
            self._told = now
            # If it cannot be told, the estimate goes without it; the batch's seeds go on.
            with contextlib.suppress(Exception):
                self._worker.log_event(PROGRESS, {**self.facts, "elapsed": now - self.started})


def _session(facts: Mapping[str, Any]) -> float:
    """A later seed's session, until one is measured: as long as the session of the claims
    that read no run took, or, without one, as long as collecting the claims took."""
    return float(facts.get("session") or facts.get("collect", 0.0))


def _alone(facts: Mapping[str, Any]) -> float:
    """The first seed's session, its runs trained alone: measured, or, until it is, the
    workshop's estimate of its training and a session."""
    first = facts.get("first")
    if first is not None:
        return float(first)
    return float(facts.get("alone_prior", 0.0)) + _session(facts)


def batch_seconds(facts: Mapping[str, Any]) -> float | None:
    """A batch's whole time, from what it told (`Phases`), or None before the together
    training has said how fast it goes (`_session` and `_alone` stand for what is not
    measured yet)."""
    before = float(facts.get("collect", 0.0)) + float(facts.get("session") or 0.0)  # spent
    together = float(facts.get("together_seconds", 0.0))
    if facts.get("apart"):
        # Its seeds train one at a time (or train nothing): each later one costs what the
        # first did, until the later ones have measured themselves.
        later = float(facts.get("seed_seconds") or _alone(facts))
        return before + together + _alone(facts) + (int(facts["seeds"]) - 1) * later
    done = float(facts.get("together_done", 0.0))
    if done < 0.01:
        return None
    seed = float(facts.get("seed_seconds") or _session(facts))
    return before + together / done + _alone(facts) + (int(facts["seeds"]) - 1) * seed


def time_left(
    workers: int, running: Sequence[float | None], waiting: Sequence[float | None]
) -> float | None:
    """When the last task ends, in seconds from now, or None while a task's time is unknown.
    `running`: what each running task has left; `waiting`: each waiting task's whole time, in
    the order they were submitted, each taken by the worker that comes free first."""
    if any(seconds is None for seconds in (*running, *waiting)):
        return None
    free = sorted([float(s or 0.0) for s in running] + [0.0] * max(0, workers - len(running)))
    for seconds in waiting:
        heapq.heappush(free, heapq.heappop(free) + float(seconds or 0.0))
    return max(free, default=0.0)


class Estimate:
    """The sweep's estimate of its time left: what its batches told (`Phases`), what its
    single jobs took, by their kind (`Kind`: on a shared machine a job of two threads takes
    longer than one of one, and one in a process of its own pays its start and its own
    training), and when each running single job was first seen running."""

    def __init__(self) -> None:
        self.told: dict[str, tuple[float, Mapping[str, Any]]] = {}  # task key: (when, facts)
        self.took: dict[Kind, list[float]] = {}  # single jobs' seconds, by their kind
        self.began: dict[str, float] = {}  # running single job's key: when first seen

    def hear(self, events: Sequence[tuple[float, Mapping[str, Any]]]) -> None:
        """The batches' events, as `Client.get_events(PROGRESS)` gives them (in order)."""
        for when, facts in events:
            self.told[str(facts.get("task"))] = (when, facts)

    def _seed_alone(self) -> float | None:
        """One seed's session, its runs trained alone (`_alone`): measured by any batch, or
        else estimated."""
        told = [facts for _, facts in self.told.values()]
        measured = [facts for facts in told if facts.get("first") is not None]
        estimated = [facts for facts in told if "alone_prior" in facts]
        return next((_alone(facts) for facts in [*measured, *estimated]), None)

    def _single(self, kind: Kind) -> float | None:
        """A single job's whole time: the mean of those of its kind that ended; else of
        those that ran where it runs (in a process of its own or not), whatever their
        threads; or, before any has, what one seed costs alone."""
        took = self.took.get(kind) or [
            t for (_, own), times in self.took.items() if own == kind[1] for t in times
        ]
        return sum(took) / len(took) if took else self._seed_alone()

    def _per_seed(self) -> float | None:
        """A batch's time per seed, from any batch whose whole time is known."""
        for _, facts in self.told.values():
            total = batch_seconds(facts)
            if total is not None:
                return total / int(facts["seeds"])
        return None

    def left(
        self,
        workers: int,
        running: Mapping[str, tuple[int, Kind]],
        waiting: Sequence[tuple[int, Kind]],
        now: float | None = None,
    ) -> float | None:
        """Seconds until the sweep ends. `running`: each running task's key, its seeds (1: a
        single job) and its kind; `waiting`: each waiting task's, in submission order."""
        now = time.time() if now is None else now
        per_seed = self._per_seed()
        left: list[float | None] = []
        for key, (seeds, kind) in running.items():
            if seeds == 1:
                began = self.began.setdefault(key, now)
                single = self._single(kind)
                left.append(None if single is None else max(0.0, single - (now - began)))
                continue
            when, facts = self.told.get(key, (now, {}))
            total = batch_seconds(facts) if facts else None
            elapsed = float(facts.get("elapsed", 0.0)) + (now - when)
            left.append(None if total is None else max(0.0, total - elapsed))
        whole = [
            self._single(kind) if seeds == 1 else None if per_seed is None else per_seed * seeds
            for seeds, kind in waiting
        ]
        return time_left(workers, left, whole)
