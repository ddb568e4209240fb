"""Fixtures shared by the claims: the workshop recipe, its data, its networks and runs.

Everything expensive is computed once per session and handed out frozen: results are frozen
dataclasses of floats, and a trained network is only ever given out as a fresh copy
(`TrainedRun.network()`), so no claim can change what another reads. Training happens on
first request, so `pytest -k eval_bug` trains the one network the eval-bug claims need.
"""

from __future__ import annotations

from types import ModuleType

import pytest
from syrupy.assertion import SnapshotAssertion

from bnvg.config import WORKSHOP, NetSpec, Workshop
from bnvg.data import TwoMoons, two_moons
from bnvg.measure import AtInit, measure_at_init
from bnvg.model import build_network
from bnvg.runs import RunCache
from bnvg.snapshot_store import WorkshopSnapshots


@pytest.fixture(scope="session")
def workshop() -> Workshop:
    return WORKSHOP


@pytest.fixture(scope="session")
def data(workshop: Workshop) -> TwoMoons:
    return two_moons(workshop)


@pytest.fixture(scope="session")
def runs(workshop: Workshop) -> RunCache:
    """Every training run of the log, trained on first request and at most once."""
    return RunCache(workshop)


@pytest.fixture(scope="session")
def at_init(data: TwoMoons) -> dict[str, AtInit]:
    """The S4 measurements of a fresh plain net and a fresh batch-norm net."""
    nets = {"plain": NetSpec(), "batch": NetSpec(norm="batch")}
    return {
        name: measure_at_init(build_network(spec), data.X_train, data.y_train)
        for name, spec in nets.items()
    }


@pytest.fixture
def figures() -> ModuleType:
    """bnvg.figures, imported on first use so claims that draw nothing never load matplotlib."""
    import bnvg.figures

    return bnvg.figures


@pytest.fixture
def snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    """syrupy's snapshot, stored under snapshots/ as Amber text."""
    return snapshot.use_extension(WorkshopSnapshots)


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def png():
    """Checks that a figure was written as a real, non-trivial PNG image."""

    def check(path):
        __tracebackhide__ = True
        head = path.read_bytes()[:24]
        assert head.startswith(PNG_SIGNATURE), f"{path} is not a PNG file"
        width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
        assert width > 300 and height > 200, f"{path} is only {width}x{height} pixels"

    return check
