"""Verdicts: what a number that differs from the stored one means, on the platform of this run.

A platform (`claimlog.platform`) decides the bits of every result, and its fingerprint says
which platform a machine is: the bits the workshop's own kernels give there. Three questions
are kept apart, each answered by its own key: whether the recipe or the code changed (the
claim's key, which the evidence carries: `claimlog.evidence.fragments`), which platform
computed (its identity, fingerprint included), and how a seed's luck goes (the evidence over
seeds, never a verdict). Where the numbers were computed decides how a difference from what
is stored is judged:

- on the **reference** platform (the snapshots' own, `snapshots/environment.json`), every
  number is compared with its snapshot, and any difference fails. Where the evidence's keys
  are this checkout's too, nothing the keys see changed: something they do not see did, or
  the computation is not deterministic, and the failure says so;
- on a platform the evidence **holds** (a committed fragment at these seeds), every number is
  compared with that platform's own value, and any difference fails;
- on a **new** platform (another fingerprint, another torch, another architecture), any
  number may move: its fingerprint says it computes otherwise. Every claim's sentence is
  asserted on what it computed (in the claim, before any comparison), so a red result means
  the text is wrong; a number that moved while the keys say the recipe and code are those of
  the record (the evidence's, or those the update that recorded the snapshots kept beside
  them, `snapshots/keys.json`, for a workshop no sweep measured) is drift, named with both
  values, and passes. A number whose claim's code changed since the record fails where it
  moved: an edit is never taken for drift;
- under `--strict-numbers`, on any platform, every number is compared with its snapshot and
  any difference fails.

Exact means exact: the same float, bit for bit. Other seeds say how general a sentence is,
never whether a print may move.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from claimlog.evidence.fragility import Fragility, ReadingEvidence
from claimlog.evidence.tables import Table
from claimlog.log.lines import LogLine
from claimlog.log.readings import Reading

REFERENCE, HELD, NEW = "reference", "held", "new"


@dataclass(frozen=True)
class Standing:
    """Where this run's platform stands with the evidence, and what it is compared with."""

    kind: str  # REFERENCE, HELD or NEW
    platform: str  # this platform's id (`claimlog.platform.Platform.id`)
    reference: str  # the reference platform's id
    strict: bool = False
    # A held platform's own values, from its fragment: readings by name, tables by name.
    readings: Mapping[str, float] = field(default_factory=dict)
    tables: Mapping[str, Mapping[str, Sequence[float]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in (REFERENCE, HELD, NEW):
            raise ValueError(f"unknown standing {self.kind!r}: one of {REFERENCE}, {HELD}, {NEW}")

    @property
    def against_own_evidence(self) -> bool:
        """Whether numbers are compared with this platform's own fragment (not the snapshot)."""
        return self.kind == HELD and not self.strict

    @property
    def exact(self) -> bool:
        return self.strict or self.kind in (REFERENCE, HELD)

    def expected_reading(self, name: str, stored: float) -> tuple[float, bool]:
        """(the value this run must compute, whether it must compute it exactly). A reading
        a held platform's fragment lacks (a claim newer than the evidence) is judged as on a
        new platform."""
        if self.against_own_evidence:
            if name in self.readings:
                return self.readings[name], True
            return stored, False
        return stored, self.exact

    def expected_table(self, stored: Table) -> tuple[Table, bool]:
        """(the table this run must compute, whether exactly); see `expected_reading`."""
        if self.against_own_evidence:
            own = self.tables.get(stored.name)
            if own is None or set(own) != set(stored.columns):
                return stored, False
            columns = {c: np.asarray(own[c], dtype=float) for c in stored.columns}
            if any(len(v) != len(stored.index) for v in columns.values()):
                return stored, False
            return Table(stored.name, stored.title, stored.index_name, stored.index, columns), True
        return stored, self.exact

    @property
    def compared_with(self) -> str:
        """What stored values are called in messages."""
        return "this platform's evidence" if self.against_own_evidence else "snapshot"


REFERENCE_STANDING = Standing(REFERENCE, "", "")


@dataclass(frozen=True)
class Difference:
    """One reading whose value here is not the one it is compared with."""

    here: Reading
    stored: Reading  # the same reading with the value it is compared with
    line: int
    evidence: ReadingEvidence | None
    drift: bool  # True: reported, not failed (a new platform); False: a failure
    compared_with: str = "snapshot"
    stale: bool = False  # its evidence is of other code: its claim changed since the sweep
    edited: bool = False  # its claim changed since the snapshots were recorded (keys.json)

    def describe(self) -> str:
        """'S4 plain ratio, times smaller: snapshot 3015, here 3017 (log line 40, robust)'."""
        if self.here.printed != self.stored.printed:
            values = f"{self.compared_with} {self.stored.printed}, here {self.here.printed}"
        else:
            values = (
                f"{self.compared_with} {self.stored.value!r}, here {self.here.value!r} "
                f"(both print {self.here.printed})"
            )
        status = status_of(self.evidence, self.stale, self.edited)
        return f"{self.here.name}: {values} (log line {self.line}, {status})"


NO_EVIDENCE = "no evidence of it yet"  # no sweep measured it
STALE = "its evidence is of other code: its claim changed since the sweep"  # an edit's
EDITED = "its claim changed since the snapshots were recorded"  # an edit, where no sweep ran
RECIPE = "a setting of the recipe"  # a moved reading the recipe fills: no platform computes it


def status_of(evidence: ReadingEvidence | None, stale: bool = False, edited: bool = False) -> str:
    """Its platform verdict, robust or fragile, as the evidence says; without evidence
    nothing is known of it, and it is judged as robust: say why, an edit (the evidence is of
    other code, `stale`; or, where no sweep ran, the claim's key is not the one the record
    kept, `edited`) or a reading no sweep measured yet."""
    if evidence is not None:
        return evidence.platform_verdict
    return STALE if stale else EDITED if edited else NO_EVIDENCE


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def judge_reading(
    here: Reading,
    compared: Reading,
    exact: bool,
    evidence: ReadingEvidence | None,
    edited: bool | None = None,
) -> bool | None:
    """None: nothing to say; False: a failure; True: drift (the rules of the module's
    docstring). On a platform judged inexactly, a moved reading is drift only while the keys
    say nothing was edited: it has fresh evidence (the evidence's key is the claim's in this
    checkout), or its claim is known not to be `edited` since the snapshots were recorded
    (None: not known)."""
    if _same(here.as_float(), compared.as_float()):
        return None
    if exact or edited is True:
        return False  # an edit moves a number whatever the platform: the snapshot is of old code
    if here.printed == compared.printed:
        return None  # below the printed precision: nothing the text quotes moved
    return evidence is not None or edited is False


def compare_readings(
    here: Sequence[Reading],
    stored: Mapping[str, float],
    line_of: Mapping[str, int],
    fragility: Fragility,
    standing: Standing = REFERENCE_STANDING,
    edited: bool | None = None,
) -> list[Difference]:
    """Every reading of `here` that differs from what it is compared with (by name, at full
    precision), its claim `edited` since the snapshots were recorded or not (None: not
    known, a record that kept no keys). Readings with no stored value are not differences:
    the caller reports them as missing."""
    out: list[Difference] = []
    for reading in here:
        if reading.name not in stored:
            continue
        value, exact = standing.expected_reading(reading.name, stored[reading.name])
        compared = reading.with_value(reading.value_from_float(value))
        evidence = fragility.reading(reading.name)
        drift = judge_reading(reading, compared, exact, evidence, edited)
        if drift is not None:
            line = line_of[reading.key]
            where = standing.compared_with if exact else "snapshot"
            stale = reading.name in fragility.stale
            out.append(
                Difference(reading, compared, line, evidence, drift, where, stale, edited is True)
            )
    return out


@dataclass(frozen=True)
class Moved:
    """A reading whose printed value is not the snapshot's: what a reader of the log would
    see change (`51.5 -> 48.5`), whatever it means on this platform."""

    reading: Reading  # as computed here
    before: float  # the snapshot's value, at full precision
    line: int
    status: str  # its platform verdict: robust, fragile, or no evidence

    @property
    def printed_before(self) -> str:
        return self.reading.with_value(self.reading.value_from_float(self.before)).printed

    def describe(self) -> str:
        """'line 65, S6 plain, final test accuracy: 51.5 -> 48.5 (robust)'."""
        return (
            f"line {self.line}, {self.reading.name}: {self.printed_before} -> "
            f"{self.reading.printed} ({self.status})"
        )

    def to_json(self) -> dict[str, object]:
        return {
            "reading": self.reading.to_json(),
            "before": self.before,
            "line": self.line,
            "status": self.status,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Moved:
        reading = Reading.from_json(data["reading"])
        return cls(reading, float(data["before"]), int(data["line"]), str(data["status"]))


def prints_as_stored(reading: Reading, stored: float) -> bool:
    """Whether `reading` prints as its snapshot's value (`stored`) prints: not moved."""
    return reading.with_value(reading.value_from_float(stored)).printed == reading.printed


def moved_readings(
    here: Sequence[Reading],
    stored: Mapping[str, float],
    line_of: Mapping[str, int],
    fragility: Fragility,
) -> list[Moved]:
    """The readings of `here` that print otherwise than their snapshot (`stored`, by name)."""
    out = []
    for reading in here:
        if reading.name not in stored:
            continue
        if not prints_as_stored(reading, stored[reading.name]):
            status = status_of(fragility.reading(reading.name), reading.name in fragility.stale)
            out.append(Moved(reading, stored[reading.name], line_of[reading.key], status))
    return out


def moved_in_the_recipe(recorded: Mapping[str, Reading], now: Mapping[int, LogLine]) -> list[Moved]:
    """The readings of the lines the layout fills from the recipe itself (a section's steps,
    learning rate and batch: no claim owns them, so no snapshot stores them) that print
    otherwise than the record printed them (`recorded`, read back as the published log is):
    settings, which no platform computes (`RECIPE`)."""
    out = []
    for number, line in now.items():
        for reading in line.readings:
            before = recorded.get(reading.name)
            if before is None or before.value is None or before.printed == reading.printed:
                continue
            out.append(Moved(reading, before.as_float(), number, RECIPE))
    return out


@dataclass(frozen=True)
class PointDifference:
    """One point of a stored table that is not the one computed here."""

    table: Table
    row: int
    column: str
    stored: float
    here: float
    compared_with: str = "snapshot"

    def describe(self) -> str:
        return (
            f"{self.table.title}, {self.table.row_name(self.row)}, {self.column}: "
            f"{self.compared_with} {self.stored!r}, here {self.here!r}"
        )


@dataclass(frozen=True)
class TableVerdict:
    """How a table computed here compares: its moved points, and whether they fail."""

    points: list[PointDifference]
    drift: bool  # True: the points moved on a new platform (reported, not failed)
    shape: str = ""  # the rows or columns differ: a failure whatever the platform

    @property
    def failed(self) -> bool:
        return bool(self.shape) or (bool(self.points) and not self.drift)

    def summary(self) -> str:
        """One line for the drift report: how many points moved, and the first of them."""
        if not self.points:
            return ""
        first = self.points[0]
        total = len(first.table.index) * len(first.table.columns)
        return (
            f"{first.table.title}: {len(self.points)} of {total} points moved, the first at "
            f"{first.table.row_name(first.row)}, {first.column}: {first.compared_with} "
            f"{first.stored!r}, here {first.here!r}"
        )


def compare_table(
    here: Table, stored: Table, standing: Standing = REFERENCE_STANDING
) -> TableVerdict:
    """Every point of `here` that is not the one it is compared with."""
    if here.index != stored.index:
        return TableVerdict(
            [],
            False,
            f"{here.title}: the snapshot has {len(stored.index)} rows "
            f"({stored.index_name} {_span(stored.index)}), here {len(here.index)} "
            f"({_span(here.index)})",
        )
    if set(here.columns) != set(stored.columns):
        return TableVerdict(
            [],
            False,
            f"{here.title}: the snapshot has the columns {sorted(stored.columns)}, "
            f"here {sorted(here.columns)}",
        )
    expected, exact = standing.expected_table(stored)
    where = standing.compared_with if exact else "snapshot"
    points = [
        PointDifference(here, row, column, float(b), float(a), where)
        for column, values in here.columns.items()
        for row, (a, b) in enumerate(zip(values, expected.columns[column], strict=True))
        if not _same(float(a), float(b))
    ]
    return TableVerdict(points, drift=not exact)


def _span(index: Sequence[object]) -> str:
    return f"{index[0]} to {index[-1]}" if index else "none"
