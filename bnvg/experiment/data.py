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
