"""The `figure` fixture: check the numbers a figure plots, then draw it, or reuse its drawing.

    points = series.two_moons(data)
    figure.check(points)                    # against their snapshot
    figure.draw("two_moons.png", points)    # bnvg.figures.draw.two_moons(points, folder)

Drawing is deterministic: the same numbers, drawn by the same code with the same matplotlib,
give the same PNG, byte for byte. So a drawing is kept in pytest's cache folder
(`.pytest_cache/d/bnvg-figures`) under a key that covers all of that, and a later session
that would draw the same figure from the same numbers copies it instead, without importing
matplotlib. `--recompute` draws every figure again.
"""

from __future__ import annotations

import platform
from collections.abc import Mapping
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bnvg.evidence.tables import Table
from bnvg.experiment.results import TrainedRun
from bnvg.files import replacing
from bnvg.plugin.numbers import NumberSnapshots
from bnvg.plugin.options import fragility, settings
from bnvg.plugin.runs import RUN_EVENTS
from bnvg.store import Damaged, Entry, Store, digest, source_digest

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
CACHE_FOLDER = "bnvg-figures"
DRAWING_CODE = Path(__file__).resolve().parent.parent / "figures" / "draw.py"
# What the figures are drawn with and on, beside the numbers and the code.
RENDERER = (metadata.version("matplotlib"), platform.python_version(), platform.machine())


def fingerprint(value: Any) -> list[bytes | str]:
    """What a figure's input is, as bytes: tables and arrays by content, networks by their
    weights, trained runs by their key in the run store (which names everything their weights
    depend on), containers by their items, anything else by its repr."""
    if isinstance(value, Table):
        parts: list[bytes | str] = [value.name, value.index_name, repr(value.index)]
        for column, values in value.columns.items():
            array = np.ascontiguousarray(values)
            parts += [column, str(array.dtype), array.tobytes()]
        return parts
    if isinstance(value, np.ndarray):
        return [str(value.dtype), repr(value.shape), np.ascontiguousarray(value).tobytes()]
    if isinstance(value, TrainedRun):  # the same run key, the same weights
        return ["run", value.key] if value.key else fingerprint(value.network())
    if hasattr(value, "state_dict"):  # a network: its weights and buffers decide what it draws
        return [
            part
            for name, tensor in sorted(value.state_dict().items())
            for part in (name, *fingerprint(tensor.detach().cpu().numpy()))
        ]
    if hasattr(value, "X") and hasattr(value, "y"):  # the data set
        return [*fingerprint(value.X), *fingerprint(value.y), repr(value.n_train)]
    if isinstance(value, Mapping):
        return [p for k, v in value.items() for p in (repr(k), *fingerprint(v))]
    if isinstance(value, list | tuple):
        return [p for item in value for p in ("[", *fingerprint(item), "]")]
    return [repr(value)]


class Figure:
    """Where a claim draws its figure, and the checks around drawing it: the numbers it
    plots against their snapshot before, a real PNG after."""

    def __init__(self, request: pytest.FixtureRequest, folder: Path, store: Store | None) -> None:
        self.folder = folder
        self._config = request.config
        self._store = store
        self._numbers = NumberSnapshots(
            request, settings(request.config), fragility(request.config)
        )

    def check(self, *tables: Table) -> None:
        """Compare the numbers the figure plots with their snapshot."""
        __tracebackhide__ = True
        for table in tables:
            self._numbers.check_table(table)

    def draw(self, name: str, *inputs: Any) -> Path:
        """Draw `name` with the function of `bnvg.figures.draw` named after it, given `inputs`
        and the folder; or copy the PNG the same code drew from the same inputs before."""
        __tracebackhide__ = True
        key = digest(name, source_digest([DRAWING_CODE]), *RENDERER, *fingerprint(inputs))
        path = self.folder / name
        found = (
            self._store.get(key) if self._store and not settings(self._config).recompute else None
        )
        events = self._config.stash[RUN_EVENTS]
        if isinstance(found, Entry):
            if not path.exists() or path.read_bytes() != found.content:
                with replacing(path) as tmp:
                    tmp.write_bytes(found.content)
            events.append(("figure reused", name, None))
            return self.saved(path)
        if isinstance(found, Damaged):
            events.append(("figure damaged", name, found.reason))
        import bnvg.figures.draw as draw

        drawn = getattr(draw, name.removesuffix(".png"))(*inputs, self.folder)
        if self._store is not None:
            when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
            self._store.put(key, drawn.read_bytes(), {"figure": name, "drawn at": when})
        return self.saved(drawn)

    def saved(self, path: Path) -> Path:
        """Check that the figure was written as a real, non-trivial PNG image."""
        __tracebackhide__ = True
        head = path.read_bytes()[:24]
        assert head.startswith(PNG_SIGNATURE), f"{path} is not a PNG file"
        width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
        assert width > 300 and height > 200, f"{path} is only {width}x{height} pixels"
        return path


@pytest.fixture(scope="session")
def diagrams_dir(pytestconfig: pytest.Config) -> Path:
    """The folder the claims draw their figures into."""
    path = settings(pytestconfig).diagrams
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def figure_store(pytestconfig: pytest.Config) -> Store | None:
    """Drawings kept in pytest's cache folder, or None under -p no:cacheprovider."""
    pytest_cache = getattr(pytestconfig, "cache", None)
    return Store(pytest_cache.mkdir(CACHE_FOLDER)) if pytest_cache is not None else None


@pytest.fixture
def figure(
    request: pytest.FixtureRequest, diagrams_dir: Path, figure_store: Store | None
) -> Figure:
    return Figure(request, diagrams_dir, figure_store)
