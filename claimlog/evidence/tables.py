"""Tables of numbers that are not single readings: training histories and the data of figures.

A run's history (train loss and test accuracy every 50 steps) is what five figures plot and
what its final readings summarise; a figure that plots anything else (a curve, the points of
the data set, one bar per variant) keeps its own table of exactly what it plots. Each table
is stored by pytest-regressions as a CSV file and compared point by point, exactly or as
drift, by where the run computes (`claimlog.evidence.verdicts`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

Column = npt.NDArray[Any]


@dataclass(frozen=True)
class Table:
    """Named columns of numbers over one index: `name` says where it is stored
    ("runs/batch-norm"), `title` how messages call it ("run 'batch norm'")."""

    name: str
    title: str
    index_name: str
    index: tuple[Any, ...]
    columns: Mapping[str, Column]

    def __post_init__(self) -> None:
        for column, values in self.columns.items():
            if len(values) != len(self.index):
                raise ValueError(
                    f"{self.title}: column {column!r} has {len(values)} values for "
                    f"{len(self.index)} rows"
                )

    def row_name(self, i: int) -> str:
        return f"{self.index_name} {self.index[i]}"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "index_name": self.index_name,
            "index": list(self.index),
            "columns": {k: [float(v) for v in values] for k, values in self.columns.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Table:
        return cls(
            data["name"],
            data["title"],
            data["index_name"],
            tuple(data["index"]),
            {k: np.asarray(v, dtype=float) for k, v in data["columns"].items()},
        )

    @classmethod
    def of_figure(
        cls, figure: str, index_name: str, index: Sequence[Any], columns: Mapping[str, Any]
    ) -> Table:
        """The numbers one figure plots, as arrays in the dtype it plots them in."""
        return cls(
            name=f"figures/{figure.removesuffix('.png')}",
            title=f"figure {figure}",
            index_name=index_name,
            index=tuple(index),
            columns={k: np.asarray(v) for k, v in columns.items()},
        )

    @classmethod
    def of_run(
        cls, run: str, index_name: str, index: Sequence[Any], columns: Mapping[str, Any]
    ) -> Table:
        """A trained run's numbers (its history), as floats: "runs/batch-norm", "run 'batch
        norm'"."""
        return cls(
            name=f"runs/{slug(run)}",
            title=f"run {run!r}",
            index_name=index_name,
            index=tuple(index),
            columns={k: np.asarray(v, dtype=float) for k, v in columns.items()},
        )


def slug(name: str) -> str:
    """A file-name form of a run's or figure's name: "depth 8 plain, lr = 0.5" ->
    "depth-8-plain-lr-0.5"."""
    kept = "".join(c if c.isalnum() or c in "._" else "-" for c in name)
    return "-".join(part for part in kept.split("-") if part)
