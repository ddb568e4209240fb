"""The two-moons dataset (section S1), hand-rolled so no sklearn is needed.

Two interleaved half circles that no straight line separates: a small task a network must
bend its decision boundary for. The random calls are the script's, in the script's order,
so the points are the workshop's points bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from bnvg.experiment.config import WORKSHOP, Workshop

if TYPE_CHECKING:
    import torch

FloatArray = npt.NDArray[np.float32]


def _tensor(array: FloatArray) -> torch.Tensor:
    """A fresh tensor of a copy of `array` (the points are numpy's: drawing them, and the
    claims that only count or measure them, need no torch)."""
    from bnvg.experiment.runtime import torch

    return torch.from_numpy(array.copy())


@dataclass(frozen=True)
class TwoMoons:
    """The shuffled dataset; the first `n_train` points train, the rest test.

    The arrays are read-only. The tensor properties hand out fresh tensors, so no caller can
    change the points another caller sees.
    """

    X: FloatArray  # (n_samples, 2) features
    y: FloatArray  # (n_samples,) labels: 0 = upper moon, 1 = lower moon
    n_train: int

    @property
    def X_train(self) -> torch.Tensor:
        return _tensor(self.X[: self.n_train])

    @property
    def y_train(self) -> torch.Tensor:
        return _tensor(self.y[: self.n_train])

    @property
    def X_test(self) -> torch.Tensor:
        return _tensor(self.X[self.n_train :])

    @property
    def y_test(self) -> torch.Tensor:
        return _tensor(self.y[self.n_train :])

    @property
    def n_test(self) -> int:
        """The points after the first `n_train`: never trained on."""
        return len(self.X[self.n_train :])

    def feature_std(self) -> tuple[float, float]:
        """Standard deviation of x1 and x2 over all points (float32, as numpy computes it)."""
        return float(self.X[:, 0].std()), float(self.X[:, 1].std())


@cache
def two_moons(workshop: Workshop = WORKSHOP) -> TwoMoons:
    """Draw the workshop's two moons: noisy, shuffled, and split as the script does."""
    rng = np.random.default_rng(workshop.seed)
    n_half = workshop.n_samples // 2

    # Upper moon: half circle of radius 1 centred at the origin.
    t = rng.uniform(0.0, np.pi, size=n_half)
    upper = np.stack([np.cos(t), np.sin(t)], axis=1)

    # Lower moon: mirrored half circle, shifted to interleave with the upper one.
    t = rng.uniform(0.0, np.pi, size=n_half)
    lower = np.stack([1.0 - np.cos(t), 0.5 - np.sin(t)], axis=1)

    X = np.concatenate([upper, lower]).astype(np.float32)
    X += rng.normal(0.0, workshop.noise, size=X.shape).astype(np.float32)
    y = np.concatenate([np.zeros(n_half), np.ones(n_half)]).astype(np.float32)

    # Shuffle once; the split below keeps the last points as the held-out test set.
    perm = rng.permutation(workshop.n_samples)
    X, y = X[perm], y[perm]
    X.flags.writeable = False
    y.flags.writeable = False
    return TwoMoons(X=X, y=y, n_train=workshop.n_train)


# -- why no straight line separates the moons ------------------------------------------------


def convex_hull(points: npt.NDArray[np.floating]) -> npt.NDArray[np.float64]:
    """The vertices of the points' convex hull, counter-clockwise (Andrew's monotone chain)."""
    pts = sorted({(float(x), float(y)) for x, y in points})

    def cross(o: tuple[float, float], a: tuple[float, float], b: tuple[float, float]) -> float:
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower: list[tuple[float, float]] = []
    upper: list[tuple[float, float]] = []
    for p in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    for p in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    return np.asarray(lower[:-1] + upper[:-1], dtype=np.float64).reshape(-1, 2)


def inside_hull(
    hull: npt.NDArray[np.float64], points: npt.NDArray[np.floating]
) -> npt.NDArray[np.bool_]:
    """Which points lie strictly inside a convex hull given counter-clockwise: left of every
    edge (a hull of fewer than three corners has no inside)."""
    if len(hull) < 3:
        return np.zeros(len(points), dtype=bool)
    edge = np.roll(hull, -1, axis=0) - hull  # each edge, from its corner in `hull`
    p = np.asarray(points, dtype=np.float64)[:, None, :] - hull  # (n, corners, 2)
    cross = edge[:, 0] * p[..., 1] - edge[:, 1] * p[..., 0]
    return np.asarray((cross > 0).all(axis=1))


def points_inside_the_other_class(data: TwoMoons) -> tuple[int, int]:
    """(points of class 0 inside the convex hull of class 1, and the other way round). A
    straight line that separated the classes would leave each class's hull wholly on its own
    side, so one such point is a certificate that no straight line separates them."""
    X, y = data.X, data.y
    zero, one = X[y == 0], X[y == 1]
    return (
        int(inside_hull(convex_hull(one), zero).sum()),
        int(inside_hull(convex_hull(zero), one).sum()),
    )
