"""Quoting: a claim's readings and lines, checked against the two snapshot libraries.

    summary = fill.run_summary("S6 batch norm", h)
    quoted.lines(summary, holds={"first step at the target": at_most(100)})

`Quoted.lines` asserts the claim's bounds, compares every reading with its stored value by
name, compares the lines with their text, and hands the verified lines to the log. The two
libraries each keep their own folder:

- **syrupy** (`snapshots/text/`, Amber files, one per claims module): each claim's log lines
  as the text quotes them; syrupy claims every file it finds there. A changed line reads as
  a one-line diff in review.
- **pytest-regressions** (`snapshots/numbers/`, CSV files): every reading at full precision,
  one file per claim, per training run and per figure, read and judged by name
  (`claimlog.plugin.numbers`).

A normal run never writes a snapshot: a missing file fails its claim with the update command.
Files are replaced atomically, so an interrupted update leaves every file whole. Bounds that
hold only for some minibatch orders are declared with `sometimes`: measured by the sweep, not
asserted. A claim calls `quoted.lines` before its plain `assert`s, so that a run in which it
fails still records its numbers for the sweep.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from syrupy.exceptions import SnapshotDoesNotExist
from syrupy.extensions.amber import AmberSnapshotExtension

from claimlog.evidence.verdicts import (
    REFERENCE,
    Difference,
    compare_readings,
    moved_readings,
)
from claimlog.log.lines import Log, LogLine
from claimlog.log.readings import Bound, Reading
from claimlog.places import Places
from claimlog.plugin.numbers import NumberSnapshots, NumbersSnapshotError, raise_pending, taken
from claimlog.plugin.options import UPDATE_COMMAND, owned_keys
from claimlog.plugin.outcomes import (
    BOUNDED,
    DRIFT,
    LINE,
    MOVED,
    READINGS,
    STORED,
    channel,
)
from claimlog.plugin.session import ClaimSession

if TYPE_CHECKING:
    from syrupy.location import PyTestLocation


# -- syrupy: the text -----------------------------------------------------------------------
@cache
def extension_for(places: Places) -> type[AmberSnapshotExtension]:
    """An Amber extension that keeps its files in `places.text_snapshots` (one class per
    project root, so syrupy sees the same extension in every claim)."""

    class WorkshopText(AmberSnapshotExtension):
        @classmethod
        def dirname(cls, *, test_location: PyTestLocation) -> str:
            return str(places.text_snapshots)

    return WorkshopText


def damage(path: Path) -> str | None:
    """Why `path` is not a readable Amber snapshot file, or None if it is.

    syrupy reads a damaged file as "needs to be regenerated ... due to a major Syrupy update",
    which sends an author looking in the wrong place; this names the file and the damage.
    """
    if not path.exists():
        return f"the snapshot file {path} is missing"
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as error:
        return f"the snapshot file {path} cannot be read ({error})"
    if not lines or not lines[0].startswith("# serializer version:"):
        return (
            f"the snapshot file {path} is damaged: it does not start with '# serializer version:'"
        )
    opened = 0
    for number, line in enumerate(lines[1:], start=2):
        if line.startswith("# name: "):
            if opened:
                return (
                    f"the snapshot file {path} is damaged: line {number} starts a snapshot "
                    "before the last one ended"
                )
            opened = number
        elif line == "# ---":
            opened = 0
        elif not opened or not line.startswith("  "):
            return f"the snapshot file {path} is damaged at line {number}: {line[:60]!r}"
    if opened:
        return f"the snapshot file {path} is damaged: the snapshot from line {opened} never ends"
    return None


def send_line(item: pytest.Item, line: LogLine, log: Log) -> None:
    """One verified log line: to the controller on the channel, and, as the text it prints,
    to whoever reads the test reports (JUnit XML's properties, `log line 40`)."""
    channel(item).append((LINE, line.to_json()))
    item.user_properties.append((f"log line {log.line_number(line.key)}", line.text.strip()))


# -- `quoted` -------------------------------------------------------------------------------
# Why a number moved on the reference while the keys say nothing was edited, and every kernel
# its computations call, heard here, gives the record's bits: something else changed.
UNSEEN_BY_THE_KEYS = (
    "This platform is the reference (its kernels give the reference's bits: each one its "
    "computations call, heard here to the last, is the record's) and the keys say the claim's "
    "code and recipe are the record's: something the keys do not see changed (code outside "
    "what the workshop declares, an installed package), or the computation is not "
    "deterministic."
)


class Quoted:
    """Checks a claim's readings and lines against the snapshots, then writes them."""

    def __init__(self, request: pytest.FixtureRequest, session: ClaimSession) -> None:
        self._item = request.node
        self._request = request
        self._owns = owned_keys(self._item)
        # A claim that quotes lines asks for syrupy's snapshot now, at setup: a missing or
        # damaged text snapshot fails it before any work. One that only bounds others' lines
        # has no text of its own.
        self._text = request.getfixturevalue("snapshot") if self._owns else None
        self._settings = session.settings
        self._fragility = session.evidence.fragility()
        self._log = session.log
        self._numbers = NumberSnapshots(request, session)
        self._edited = session.evidence.edited_since_recorded(self._item.nodeid)

    @property
    def _snapshot(self) -> Any:
        """syrupy's snapshot of this claim."""
        if self._text is None:
            self._text = self._request.getfixturevalue("snapshot")
        return self._text

    def bound(
        self,
        *lines: LogLine | Sequence[LogLine],
        holds: Mapping[str, Bound] | None = None,
        sometimes: Mapping[str, Bound] | None = None,
    ) -> None:
        """Assert `holds` of readings of lines another claim owns (and quotes): a new
        sentence about numbers the log already prints. The readings are recorded and
        checked against this claim's own numbers snapshot, as any claim's are, so the sweep
        counts it; the lines stay their owner's, in the text and in the log."""
        __tracebackhide__ = True
        flat = self._bounded(_flatten(lines), holds or {}, sometimes or {}, own=False)
        readings = [r for line in flat for r in line.readings]
        channel(self._item).append((BOUNDED, [r.to_json() for r in readings]))
        self._assert_bounds(readings)
        if self._settings.update:
            self._say_moved(readings, _line_numbers(flat, self._log), self._stored_if_any())
            self._numbers.store_readings(readings)
            return
        differences = self._compared(readings, flat, self._stored(flat, text=False))
        self._fail_on(differences)
        self._numbers.store_readings(readings)
        for d in differences:
            channel(self._item).append((DRIFT, d.describe()))
        raise_pending(self._item)  # what its checks found before it quoted

    def lines(
        self,
        *lines: LogLine | Sequence[LogLine],
        holds: Mapping[str, Bound] | None = None,
        sometimes: Mapping[str, Bound] | None = None,
    ) -> None:
        """Verify `lines` (asserting `holds`, declaring `sometimes`) and write them."""
        __tracebackhide__ = True
        flat = self._bounded(_flatten(lines), holds or {}, sometimes or {})
        readings = [r for line in flat for r in line.readings]
        # Recorded before any check: the sweep needs the values of a claim that fails too.
        channel(self._item).append((READINGS, [r.to_json() for r in readings]))
        self._assert_bounds(readings)
        if self._settings.update:
            if readings:  # a line that prints no number (a figure's) has no numbers to store
                self._say_moved(readings, _line_numbers(flat, self._log), self._stored_if_any())
                self._numbers.store_readings(readings)
            assert self._snapshot == _texts(flat)
            self._hand_over(flat, [])
            return
        stored = self._stored(flat)
        differences = self._compared(readings, flat, stored)
        # The wording, checked apart from the numbers: the lines rendered from the stored
        # readings must be the text syrupy stores. Compared once, before anything fails, so
        # syrupy knows this claim used its snapshot.
        as_stored = [
            self._log.line_named(line.key).refill(
                line, {r.name: r.value_from_float(stored[r.name]) for r in line.readings}
            )
            for line in flat
        ]
        text_matches = self._snapshot == _texts(as_stored)
        self._fail_on(differences)
        raise_pending(self._item)  # what its checks found before it quoted
        if not text_matches:
            diff = "\n".join(self._snapshot.get_assert_diff())
            pytest.fail(
                f"{self._item.nodeid}: the lines differ from their text snapshot\n{diff}\n"
                f"{self._numbers.advice()}",
                pytrace=False,
            )
        if readings:
            self._numbers.store_readings(readings)
        self._hand_over(flat, [d for d in differences if d.drift])

    # -- steps -------------------------------------------------------------------------------
    def _assert_bounds(self, readings: Sequence[Reading]) -> None:
        """Fail naming every reading whose bound (not a `sometimes` one) does not hold."""
        __tracebackhide__ = True
        line = self._log.line_number
        broken = [
            f"  {r.name}: {r.printed}, but the claim says {r.bound} (log line {line(r.key)})"
            for r in readings
            if r.bound is not None and not r.sometimes and not r.bound.holds(r.value)
        ]
        if broken:
            # What is stored, and what moved from it: the summary lists a number that moved
            # and broke its bound with the others that moved, and the citations let the
            # readings that print as recorded stand.
            stored = self._stored_if_any()
            channel(self._item).append((STORED, stored))
            self._say_moved(readings, {r.key: line(r.key) for r in readings}, stored)
            message = f"{self._item.nodeid}: the claim does not hold\n" + "\n".join(broken)
            pytest.fail(message, pytrace=False)

    def _bounded(
        self,
        lines: list[LogLine],
        holds: Mapping[str, Bound],
        sometimes: Mapping[str, Bound],
        own: bool = True,
    ) -> list[LogLine]:
        for line in lines:
            if own and line.key not in self._owns:
                raise pytest.UsageError(
                    f"{self._item.nodeid} quotes log line {line.key!r} but its log_lines "
                    f"mark declares only {list(self._owns)}"
                )
        labels = {said for line in lines for r in line.readings for said in (r.label, r.name)}
        unknown = [label for label in [*holds, *sometimes] if label not in labels]
        if unknown:
            raise pytest.UsageError(
                f"{self._item.nodeid} bounds {unknown}, which its lines do not print; they "
                "print " + ", ".join(sorted(repr(label) for label in labels))
            )
        return [line.bounded(holds).bounded(sometimes, sometimes=True) for line in lines]

    def _stored(self, lines: list[LogLine], text: bool = True) -> dict[str, float]:
        """The stored readings of this claim (and, with `text`, its text snapshot); fails
        once, naming what is missing, if there is no snapshot for it yet."""
        __tracebackhide__ = True
        missing: list[str] = []
        damaged: list[str] = []
        s = self._snapshot if text else None
        try:
            if s is not None:
                s.session.recall_snapshot(s.extension, s.test_location, s.index)
        except SnapshotDoesNotExist:
            shown = self._settings.places.text_snapshot(self._item.path)
            missing.append(f"{shown.relative_to(self._settings.places.root)} has no entry for it")
        stored: dict[str, float] = {}
        try:
            if any(line.readings for line in lines):
                stored = self._numbers.stored_readings()
        except NumbersSnapshotError as error:
            problem = str(error).replace(str(self._settings.places.root) + "/", "")
            (missing if error.missing else damaged).append(problem)
        if missing or damaged:
            lead = (
                "a snapshot of this claim cannot be read"
                if damaged
                else ("no snapshot is stored for this claim")
            )
            pytest.fail(
                f"{self._item.nodeid}: {lead}: "
                + "; ".join(damaged + missing)
                + f". Record it: {UPDATE_COMMAND} -k '{self._item.name}'",
                pytrace=False,
            )
        names = {r.name for line in lines for r in line.readings}
        unknown, absent = sorted(set(stored) - names), sorted(names - set(stored))
        if unknown or absent:
            said = [f"stores readings this claim no longer prints: {unknown}"] if unknown else []
            said += [f"has no value for {absent}"] if absent else []
            pytest.fail(
                f"{self._item.nodeid}: {self._numbers.shown(self._numbers.readings_name)} "
                + " and ".join(said)
                + f". Record what it prints now: {UPDATE_COMMAND} -k '{self._item.name}'",
                pytrace=False,
            )
        return stored

    def _stored_if_any(self) -> dict[str, float]:
        """This claim's stored readings, or none (a claim recorded for the first time)."""
        try:
            return self._numbers.stored_readings()
        except NumbersSnapshotError:
            return {}

    def _say_moved(
        self, readings: Sequence[Reading], line_of: Mapping[str, int], stored: Mapping[str, float]
    ) -> None:
        """Record the readings that print otherwise than their snapshot: what a reader of
        the log would see change, said by the session whatever it means here."""
        moved = moved_readings(readings, stored, line_of, self._fragility)
        if moved:
            channel(self._item).append((MOVED, [m.to_json() for m in moved]))

    def _compared(
        self, readings: Sequence[Reading], lines: list[LogLine], stored: Mapping[str, float]
    ) -> list[Difference]:
        """Every reading that differs from what it is compared with on this platform, the
        stored values and what moved recorded first."""
        channel(self._item).append((STORED, dict(stored)))
        line_of = _line_numbers(lines, self._log)
        self._say_moved(readings, line_of, stored)
        standing = self._numbers.standing
        found = compare_readings(readings, stored, line_of, self._fragility, standing, self._edited)
        failures = [d for d in found if not d.drift]
        # Examined before it fails: this machine may compute otherwise than the record
        # knows (a kernel the record never heard). Then it is another platform's number.
        if failures and self._unseen_by_the_keys(failures) and self._numbers.examined():
            return [replace(d, drift=True) for d in found]
        return found

    def _unseen_by_the_keys(self, failures: Sequence[Difference]) -> bool:
        """Whether `failures`, numbers that moved, moved on the reference while the keys say
        nothing was edited: those the record kept (`snapshots/keys.json`), or, where it kept
        none, the evidence's, fresh for every one of them."""
        unedited = self._edited is False or (
            self._edited is None and all(d.evidence is not None for d in failures)
        )
        return self._numbers.standing.kind == REFERENCE and unedited

    def _fail_on(self, differences: Sequence[Difference]) -> None:
        """Fail naming every difference that is no drift."""
        __tracebackhide__ = True
        failures = [d for d in differences if not d.drift]
        if failures:
            pytest.fail(self._differs(failures), pytrace=False)

    def _differs(self, failures: Sequence[Difference]) -> str:
        numbers = "\n".join(f"  {d.describe()}" for d in failures)
        unseen = self._unseen_by_the_keys(failures)
        return "\n".join(
            [
                f"{self._item.nodeid}: the numbers differ from the snapshot\n{numbers}",
                *taken(self._item),
                *([UNSEEN_BY_THE_KEYS] if unseen else []),
                self._numbers.advice(),
            ]
        )

    def _hand_over(self, lines: Iterable[LogLine], drift: list[Difference]) -> None:
        for d in drift:
            channel(self._item).append((DRIFT, d.describe()))
        for line in lines:
            send_line(self._item, line, self._log)


def _flatten(lines: Iterable[LogLine | Sequence[LogLine]]) -> list[LogLine]:
    return [line for item in lines for line in ([item] if isinstance(item, LogLine) else item)]


def _line_numbers(lines: Iterable[LogLine], log: Log) -> dict[str, int]:
    return {line.key: log.line_number(line.key) for line in lines}


def _texts(lines: Iterable[LogLine]) -> dict[str, str]:
    return {line.key: line.text for line in lines}
