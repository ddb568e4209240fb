"""The numbers a claim reads and writes, through pytest-regressions (`snapshots/numbers/`).

Every reading at full precision, one CSV file per claim, per training run and per figure.
This module reads the stored numbers itself, so a difference is told by name and judged by
where this run computes (`claimlog.evidence.verdicts`): exactly on the reference and on a
platform the evidence holds; on a new one the claim's sentence decides, and what moved is
drift while the evidence's keys say nothing was edited. pytest-regressions writes its files
(`--snapshot-update`) and compares them a second time under `--strict-numbers`; a normal
run is judged by this module's comparison alone. Files are replaced atomically, so an
interrupted update leaves every file whole.

A failure found before the claim quoted (a moved training history) waits until it has
(`raise_pending`): the claim's readings are recorded all the same, for the sweep.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pytest_regressions.num_regression import NumericRegressionFixture

from claimlog.evidence.tables import Table, slug
from claimlog.evidence.verdicts import REFERENCE, Standing, compare_table
from claimlog.log.readings import Reading
from claimlog.plugin.options import UPDATE_COMMAND
from claimlog.plugin.outcomes import DRIFT, EXAMINED, NUMBERS_FILE, TABLE, channel
from claimlog.plugin.session import ClaimSession
from claimlog.store import relative, replacing

# -- pytest-regressions: the numbers --------------------------------------------------------
SHOWN_POINTS = 8  # a history that moved everywhere is summarised after this many points


# Failures a claim's checks found before it quoted (a moved training history), raised once it
# has quoted, with its own, or at the end of its call (`pytest_runtest_call`); and what the
# author can do of them, said once at the end.
PENDING = pytest.StashKey[list[str]]()
ADVICE = pytest.StashKey[str]()


def taken(item: pytest.Item) -> list[str]:
    """The failures deferred for `item`, taken (each is raised once)."""
    found = item.stash.get(PENDING, [])
    item.stash[PENDING] = []
    return found


def raise_pending(item: pytest.Item) -> None:
    """Fail with the failures deferred for `item`, taken, then what the author can do of
    them; nothing where none waits."""
    __tracebackhide__ = True
    found = taken(item)
    if found:
        pytest.fail("\n".join([*found, item.stash.get(ADVICE, "")]), pytrace=False)


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

    def __init__(self, request: pytest.FixtureRequest, session: ClaimSession) -> None:
        self._request = request
        self._item = request.node
        self._session = session
        self._settings = session.settings
        self._fragility = session.evidence.fragility()

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
        return self._session.evidence.standing

    def _checked_by_regressions(self) -> bool:
        """Whether pytest-regressions is handed this run's numbers: under --snapshot-update
        (it writes its files) and under --strict-numbers (it compares them too). Otherwise
        claimlog's own comparison, by name and exact on the reference, has already judged every
        number against the same files; a second, pandas-based pass would only cost a warm
        run half its time."""
        s = self._settings
        return s.update or s.strict

    def store_readings(self, readings: Sequence[Reading]) -> None:
        """Hand the readings computed here to pytest-regressions: written under
        --snapshot-update, compared again under --strict-numbers."""
        self._regression(
            self.readings_name,
            "reading",
            [r.name for r in readings],
            {"value": [r.as_float() for r in readings]},
        )

    # -- tables -----------------------------------------------------------------------------
    def check_table(self, table: Table, defer: bool = False) -> None:
        """Compare a table with what it is compared with on this platform, point by point
        (or record it when updating). With `defer`, a difference fails the claim only once it
        has quoted its readings (`PENDING`): a moved training history still lets the claim
        say which quoted numbers moved with it."""
        __tracebackhide__ = True
        channel(self._item).append((TABLE, table.to_json()))
        if not self._settings.update:
            try:
                index, names, stored_columns = read_csv(self.path(table.name), table.index_name)
            except NumbersSnapshotError as error:
                pytest.fail(self._missing(table.title, str(error)), pytrace=False)
            columns = {n: np.asarray(stored_columns[n]) for n in names}
            stored = replace(table, index=tuple(index), columns=columns)
            here = replace(table, index=tuple(str(i) for i in table.index))
            verdict = compare_table(here, stored, self.standing)
            if verdict.shape:
                self._fail(self._differs(table, [verdict.shape]), defer)
            elif verdict.failed and not self._apart():
                found = verdict.points
                shown = [d.describe() for d in found[:SHOWN_POINTS]]
                if len(found) > SHOWN_POINTS:
                    shown.append(f"... and {len(found) - SHOWN_POINTS} more points")
                self._fail(self._differs(table, shown), defer)
            elif verdict.points:  # moved on another platform: drift, said, not failed
                channel(self._item).append((DRIFT, verdict.summary()))
        self._regression(table.name, table.index_name, table.index, table.columns)

    def _fail(self, message: str, defer: bool) -> None:
        __tracebackhide__ = True
        if not defer:
            pytest.fail(f"{message}\n{self.advice()}", pytrace=False)
        self._item.stash.setdefault(PENDING, []).append(message)
        self._item.stash[ADVICE] = self.advice()

    def _apart(self) -> bool:
        """Whether a table that moved on the reference, its claim unedited, moved because
        this machine computes otherwise than the record knows (`examined`)."""
        edited = self._session.evidence.edited_since_recorded(self._item.nodeid)
        return self.standing.kind == REFERENCE and edited is False and self.examined()

    def examined(self) -> bool:
        """Where this run's fingerprint is the reference's and a number moved, its claim
        unedited: whether the computations this process asked for, heard here to their last
        kernel, call one the record never heard or one that gives other bits here
        (`KernelRecording.examine`); each such kernel goes to the controller, which says this
        machine is another platform."""
        apart = self._session.recording.examine()
        for said in apart:
            channel(self._item).append((EXAMINED, said))
        return bool(apart)

    # -- messages ---------------------------------------------------------------------------
    def advice(self) -> str:
        """What the author can do of numbers that moved: on the reference, record them, with
        all that follows from them; elsewhere an update would make this machine's numbers the
        reference, so none is advised."""
        if self.standing.kind != REFERENCE:
            return (
                "This run is not on the reference platform: its numbers are not the record's "
                "to replace (an update here would make them the reference)"
            )
        return (
            f"If the new values are right, bring the record up to them: {UPDATE_COMMAND} "
            "(with --workshop DIR it rewrites the text that quotes them too)"
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
            f"({self.shown(table.name)})\n{body}"
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
        channel(self._item).append((NUMBERS_FILE, self.shown(name)))
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
