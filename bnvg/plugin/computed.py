"""Results computed once and reused: everything a claim reads that takes torch to compute.

    at_init = computed.get("S4 at-init measurements", lambda: {...})

The claims' inputs that are not trained runs (the sigmoid facts of S2, the starting weights
of S3, the measurements of S4, the at-init gradient ratios of S7 and S8, the eval-bug
demonstration of S9) are computed by fixtures through `Computed.get`. Each result is kept in
pytest's cache folder (`.pytest_cache/d/bnvg-results`) under a key of everything it depends
on: the source of `bnvg/experiment/` and of the figure tables (every line such a
computation can run: a comment is enough to change it), the recipe with its seeds, and the
platform as the runs' keys name it. A later session with the same key loads it instead, bit
for bit, without importing torch: the claims still check every number against the
snapshots, write the log and copy the figures. `--recompute` computes everything again.

What torch itself says of the platform (its version, the kernels ATen dispatches to) is kept
the same way (`bnvg.plugin.standing`), so a session that computes nothing never
imports torch.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest

from bnvg.plugin.options import settings
from bnvg.plugin.runs import RUN_EVENTS
from bnvg.store import Damaged, Entry, Store, digest, source_digest

T = TypeVar("T")
CACHE_FOLDER = "bnvg-results"
PACKAGE = Path(__file__).resolve().parent.parent
# Every line a computed result can execute: the experiment, and the figures' tables.
SOURCES = (*sorted((PACKAGE / "experiment").glob("*.py")), PACKAGE / "figures" / "series.py")


class Computed:
    """Results by name, each computed at most once per key and kept in `store` (None: in
    memory only). `inputs`: what every result depends on besides its name."""

    def __init__(
        self,
        store: Store | None,
        inputs: Mapping[str, str],
        recompute: bool,
        on_event: Callable[[str, str, Any], None],
    ) -> None:
        self.store = store
        self.inputs = dict(inputs)
        self.recompute = recompute
        self.on_event = on_event
        self._done: dict[str, Any] = {}

    def key(self, name: str) -> str:
        return digest(json.dumps({"result": name, **self.inputs}, sort_keys=True))

    def get(self, name: str, compute: Callable[[], T]) -> T:
        """The result `name`: kept from before, or computed now by `compute()` and kept."""
        if name in self._done:
            return self._done[name]  # type: ignore[no-any-return]
        value = self._load_or_compute(name, compute)
        self._done[name] = value
        return value

    def _load_or_compute(self, name: str, compute: Callable[[], T]) -> T:
        if self.store is None:
            return compute()
        key = self.key(name)
        with self.store.lock(key):
            found = None if self.recompute else self.store.get(key)
            if isinstance(found, Entry):
                try:
                    value: T = pickle.loads(found.content)
                except Exception as error:  # a class that moved or changed: compute anew
                    self.on_event("result damaged", name, f"{type(error).__name__}: {error}")
                else:
                    self.on_event("result reused", name, None)
                    return value
            elif isinstance(found, Damaged):
                self.on_event("result damaged", name, found.reason)
            value = compute()
            when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
            about = {"result": name, "computed at": when, "inputs": self.inputs}
            self.store.put(key, pickle.dumps(value, protocol=5), about)
            return value


@pytest.fixture(scope="session")
def computed(pytestconfig: pytest.Config, run_cache: Any) -> Computed:
    """This session's computed results (see the module's docstring)."""
    pytest_cache = getattr(pytestconfig, "cache", None)
    store = Store(pytest_cache.mkdir(CACHE_FOLDER)) if pytest_cache is not None else None
    events = pytestconfig.stash[RUN_EVENTS]
    inputs = {
        "source": source_digest(SOURCES),
        "workshop": repr(run_cache.workshop),
        **run_cache.where,
    }
    return Computed(
        store,
        inputs,
        settings(pytestconfig).recompute,
        lambda event, name, detail: events.append((event, name, detail)),
    )
