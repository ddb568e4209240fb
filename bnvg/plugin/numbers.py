"""pytest-regressions' half of the snapshots: every number at full precision, by name.

One CSV file per claim holds the readings it quotes (one row per reading: its name and its
value), one per training run its whole history, one per figure the numbers it plots
(`bnvg.places`). pytest-regressions writes them (`--snapshot-update` turns on its
`--regen-all`) and, on the reference platform, compares what this run computed with them,
exactly. This module first reads the stored numbers itself, so that a difference is told by
name, and judged by where this run computes (`bnvg.evidence.verdicts`): on a platform the
evidence holds it fails, on a new one it is drift. Off the reference, pytest-regressions is
not asked: its files hold the reference's numbers, which another platform need not compute.

A normal run never writes a snapshot: a missing file fails its claim with the update command
instead of being created. Files are replaced atomically, so an interrupted update leaves
every file whole.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pytest_regressions.num_regression import NumericRegressionFixture

from bnvg.evidence.fragility import Fragility
from bnvg.evidence.tables import Table, slug
from bnvg.evidence.verdicts import REFERENCE, Standing, compare_table
from bnvg.files import relative, replacing
from bnvg.log.readings import Reading
from bnvg.plugin.options import UPDATE_COMMAND, Settings
from bnvg.plugin.outcomes import DRIFT, NUMBERS_FILE, TABLE
from bnvg.plugin.standing import standing

SHOWN_POINTS = 8  # a history that moved everywhere is summarised after this many points


class NumbersSnapshotError(Exception):
    """A stored numbers file that is missing (`missing`) or cannot be read."""

    def __init__(self, message: str, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing


class _AtomicNumericRegression(NumericRegressionFixture):
    """num_regression, with its files replaced in one rename (it writes them in place)."""

    def _dump_fn(self, data_object: Any, filename: Path) -> None:
        with replacing(Path(filename)) as tmp:
            super()._dump_fn(data_object, tmp)


def _float(cell: str) -> float:
    return math.nan if cell == "" else float(cell)


def read_csv(path: Path, index_name: str) -> tuple[list[str], list[str], dict[str, list[float]]]:
    """(index, column names, columns) of a stored file whose first column is `index_name`."""
    if not path.exists():
        raise NumbersSnapshotError(f"{path} is missing", missing=True)
    try:
        with path.open(newline="") as f:
            rows = list(csv.reader(f))
        header, body = rows[0], rows[1:]
        if not header or header[0] != index_name or any(len(r) != len(header) for r in body):
            raise ValueError(f"expected a header starting with {index_name!r} and full rows")
        columns = {name: [_float(r[i]) for r in body] for i, name in enumerate(header[1:], 1)}
    except (OSError, UnicodeDecodeError, ValueError, IndexError) as error:
        raise NumbersSnapshotError(f"{path} is damaged ({error})") from None
    return [r[0] for r in body], header[1:], columns


class NumberSnapshots:
    """The numbers snapshots one claim reads and writes."""

    def __init__(
        self, request: pytest.FixtureRequest, settings: Settings, fragility: Fragility
    ) -> None:
        self._request = request
        self._item = request.node
        self._settings = settings
        self._fragility = fragility

    @property
    def readings_name(self) -> str:
        """ "claims/<module>/<claim>": where this claim's readings are stored."""
        return f"claims/{Path(self._item.path).stem}/{slug(self._item.name)}"

    def path(self, name: str) -> Path:
        return self._settings.places.numbers_file(name)

    def shown(self, name: str) -> str:
        return relative(self.path(name), self._settings.places.root)

    # -- readings ---------------------------------------------------------------------------
    def stored_readings(self) -> dict[str, float]:
        """This claim's stored readings by name (raises NumbersSnapshotError)."""
        index, _, columns = read_csv(self.path(self.readings_name), "reading")
        if "value" not in columns:
            raise NumbersSnapshotError(f"{self.shown(self.readings_name)} has no 'value' column")
        return dict(zip(index, columns["value"], strict=True))

    @property
    def standing(self) -> Standing:
        return standing(self._request.config)

    def _checked_by_regressions(self) -> bool:
        """Whether pytest-regressions compares this run's numbers with its files: under
        --snapshot-update (it writes them), and where its files are this platform's own."""
        s = self._settings
        return s.update or s.strict or self.standing.kind == REFERENCE

    def store_readings(self, readings: Sequence[Reading]) -> None:
        """Hand the readings computed here to pytest-regressions: written under
        --snapshot-update, compared exactly on the reference platform."""
        self._regression(
            self.readings_name,
            "reading",
            [r.name for r in readings],
            {"value": [r.as_float() for r in readings]},
        )

    # -- tables -----------------------------------------------------------------------------
    def check_table(self, table: Table) -> None:
        """Compare a table with what it is compared with on this platform, point by point
        (or record it when updating)."""
        __tracebackhide__ = True
        self._item.user_properties.append((TABLE, table.to_json()))
        if not self._settings.update:
            try:
                index, names, columns = read_csv(self.path(table.name), table.index_name)
            except NumbersSnapshotError as error:
                pytest.fail(self._missing(table.title, str(error)), pytrace=False)
            stored = Table(
                table.name,
                table.title,
                table.index_name,
                tuple(index),
                {n: np.asarray(columns[n]) for n in names},
            )
            here = Table(
                table.name,
                table.title,
                table.index_name,
                tuple(str(i) for i in table.index),
                table.columns,
            )
            verdict = compare_table(here, stored, self.standing)
            if verdict.shape:
                pytest.fail(self._differs(table, [verdict.shape]), pytrace=False)
            if verdict.failed:
                found = verdict.points
                shown = [d.describe() for d in found[:SHOWN_POINTS]]
                if len(found) > SHOWN_POINTS:
                    shown.append(f"... and {len(found) - SHOWN_POINTS} more points")
                pytest.fail(self._differs(table, shown), pytrace=False)
            if verdict.points:
                self._item.user_properties.append((DRIFT, verdict.summary()))
        self._regression(table.name, table.index_name, table.index, table.columns)

    # -- messages ---------------------------------------------------------------------------
    def update_hint(self) -> str:
        return (
            f"If the new values are right, accept them: {UPDATE_COMMAND} -k "
            f"'{self._item.name}' (then update the text that quotes them)"
        )

    def _missing(self, what: str, problem: str) -> str:
        return (
            f"{self._item.nodeid}: no stored numbers for {what}: {problem}. Restore it from git, "
            f"or record the numbers computed here: {UPDATE_COMMAND} -k '{self._item.name}'"
        )

    def _differs(self, table: Table, lines: Sequence[str]) -> str:
        body = "\n".join(f"  {line}" for line in lines)
        return (
            f"{self._item.nodeid}: {table.title} differs from its snapshot "
            f"({self.shown(table.name)})\n{body}\n{self.update_hint()}"
        )

    # -- pytest-regressions -----------------------------------------------------------------
    def _regression(
        self,
        name: str,
        index_name: str,
        index: Sequence[Any],
        columns: Mapping[str, Any],
    ) -> None:
        """pytest-regressions' own check of what this run computed, exact; off the reference
        the file is only noted as read (its numbers were compared above, by name)."""
        __tracebackhide__ = True
        self._item.user_properties.append((NUMBERS_FILE, self.shown(name)))
        if not self._checked_by_regressions():
            return
        import pandas as pd

        request = self._request
        fixture = _AtomicNumericRegression(
            request.getfixturevalue("lazy_datadir"),
            request.getfixturevalue("original_datadir"),
            request,
        )
        fixture.check(
            dict(columns),
            fullpath=self.path(name),
            data_index=pd.Index(list(index), name=index_name),
            default_tolerance={"atol": 0.0, "rtol": 0.0},
        )
