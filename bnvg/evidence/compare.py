"""Comparing what a claim computed with what its snapshot stores, number by named number.

A stored reading is a full-precision value under its name. Comparing by name says which
number changed, from what to what, and whether it is one that moves between machines:

- equal at full precision, or within float32 rounding (or the range the sweep saw) and
  printed the same: nothing to say;
- printed differently, a fragile number inside its band: **drift** (reported, not failed);
- anything else is a **failure**: a robust number that changed, a fragile one outside its
  band, or any change at all under --strict-numbers.

Tables (training histories, figure data) are compared point by point with the tolerance the
sweep measured at that point; a difference names the table, the row and the column.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bnvg.evidence.fragility import Fragility, ReadingEvidence
from bnvg.evidence.tables import EXACT, ROUNDING, Table, Tolerance
from bnvg.log.readings import Reading


@dataclass(frozen=True)
class Difference:
    """One reading whose value here is not the one its snapshot stores."""

    here: Reading
    stored: Reading  # the same reading with the stored value
    line: int
    evidence: ReadingEvidence | None
    drift: bool  # True: a fragile number within its band; False: a failure

    def describe(self) -> str:
        """'S4 plain ratio, times smaller: snapshot 3016, here 3015 (log line 40, robust)'."""
        if self.here.printed != self.stored.printed:
            values = f"snapshot {self.stored.printed}, here {self.here.printed}"
        else:
            values = (
                f"snapshot {self.stored.value!r}, here {self.here.value!r} "
                f"(both print {self.here.printed})"
            )
        return f"{self.here.name}: {values} (log line {self.line}, {self._kind()})"

    def _kind(self) -> str:
        e = self.evidence
        if e is None or e.band is None:
            return "robust" if e is None or not e.moved_in_print else e.status
        return f"{e.status}, band {e.band[0]:.4g} to {e.band[1]:.4g}"


def _same(a: Reading, b: Reading) -> bool:
    x, y = a.as_float(), b.as_float()
    return (math.isnan(x) and math.isnan(y)) or x == y


def compare_readings(
    here: Sequence[Reading],
    stored: Mapping[str, float],
    line_of: Mapping[str, int],
    fragility: Fragility,
    strict: bool = False,
) -> list[Difference]:
    """Every reading of `here` that differs from `stored` (by name, full-precision floats).
    Readings with no stored value are not differences: the caller reports them as missing."""
    out: list[Difference] = []
    for reading in here:
        if reading.name not in stored:
            continue
        before = reading.with_value(reading.value_from_float(stored[reading.name]))
        if _same(reading, before):
            continue
        evidence = fragility.reading(reading.name)
        printed_same = reading.printed == before.printed
        close = ROUNDING.admits(reading.as_float(), before.as_float()) or (
            evidence is not None and evidence.in_band(reading.value)
        )
        if strict or not close:
            drift = False
        elif printed_same:
            continue  # rounding below the printed precision: what the text quotes is the same
        else:
            drift = evidence is not None and evidence.moved_in_print
        out.append(Difference(reading, before, line_of[reading.key], evidence, drift))
    return out


@dataclass(frozen=True)
class PointDifference:
    """One point of a stored table that moved beyond its column's tolerance."""

    table: Table
    row: int
    column: str
    stored: float
    here: float
    tolerance: Tolerance

    def describe(self) -> str:
        return (
            f"{self.table.title}, {self.table.row_name(self.row)}, {self.column}: "
            f"snapshot {self.stored!r}, here {self.here!r} ({self.tolerance})"
        )


def compare_table(
    here: Table,
    stored: Table,
    fragility: Fragility,
    strict: bool = False,
) -> list[PointDifference] | str:
    """Every point of `here` outside its tolerance from `stored`; or, if the two tables do not
    have the same rows and columns, a sentence saying how they differ."""
    if here.index != stored.index:
        return (
            f"{here.title}: the snapshot has {len(stored.index)} rows "
            f"({stored.index_name} {_span(stored.index)}), here {len(here.index)} "
            f"({_span(here.index)})"
        )
    if set(here.columns) != set(stored.columns):
        return (
            f"{here.title}: the snapshot has the columns {sorted(stored.columns)}, "
            f"here {sorted(here.columns)}"
        )
    out: list[PointDifference] = []
    for column, values in here.columns.items():
        tolerances = (
            [EXACT] * len(values)
            if strict
            else fragility.tolerances(here.name, column, len(values))
        )
        rows = zip(values, stored.columns[column], tolerances, strict=True)
        for row, (a, b, tolerance) in enumerate(rows):
            if not tolerance.admits(float(a), float(b)):
                out.append(PointDifference(here, row, column, float(b), float(a), tolerance))
    return out


def _span(index: Sequence[object]) -> str:
    return f"{index[0]} to {index[-1]}" if index else "none"
