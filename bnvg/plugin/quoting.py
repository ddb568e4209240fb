"""The `quoted` fixture: a claim's lines, checked and handed to the log.

    summary = fill.run_summary("S6 batch norm", h)
    quoted.lines(summary, holds={"first step at the target": at_most(100)})

In one call it

1. asserts the claim's bounds on the readings it quotes (`holds`), naming each reading;
2. compares every reading with its stored full-precision value, by name (pytest-regressions'
   files), judged by where this run computes (`bnvg.evidence.verdicts`): exactly on the
   reference and on the platforms the evidence holds; on a new platform a robust reading
   must print the same and anything else that moved is drift;
3. compares the lines, as the text quotes them, with syrupy's snapshot; and
4. hands the verified lines to results.log.

Bounds that hold only for some minibatch orders are declared with `sometimes`: they are not
asserted on this run, the sweep measures how often they hold.

A claim calls it before its plain `assert`s (the statements no printed number states, such as
"the maximum over the whole history is below 90%"): the readings are recorded first thing, so
a run in which the claim fails still counts, with its numbers, in the sweep's evidence.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import pytest
from syrupy.exceptions import SnapshotDoesNotExist

from bnvg.evidence.fragility import Fragility
from bnvg.evidence.verdicts import Difference, compare_readings
from bnvg.log.layout import LogLine, line_named, line_number
from bnvg.log.readings import Bound
from bnvg.plugin.numbers import NumberSnapshots, NumbersSnapshotError
from bnvg.plugin.options import UPDATE_COMMAND, Settings
from bnvg.plugin.outcomes import DRIFT, LINE, READINGS, STORED, owned_keys


class Quoted:
    """Checks a claim's readings and lines against the snapshots, then writes them."""

    def __init__(
        self, request: pytest.FixtureRequest, settings: Settings, fragility: Fragility
    ) -> None:
        self._item = request.node
        self._snapshot = request.getfixturevalue("snapshot")
        self._settings = settings
        self._fragility = fragility
        self._numbers = NumberSnapshots(request, settings, fragility)
        self._owns = owned_keys(self._item)

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
        self._item.user_properties.append((READINGS, [r.to_json() for r in readings]))
        broken = [
            f"  {r.name}: {r.printed}, but the claim says {r.bound} (log line {line_number(r.key)})"
            for r in readings
            if r.bound is not None and not r.sometimes and not r.bound.holds(r.value)
        ]
        if broken:
            message = f"{self._item.nodeid}: the claim does not hold\n" + "\n".join(broken)
            pytest.fail(message, pytrace=False)
        if self._settings.update:
            if readings:  # a line that prints no number (a figure's) has no numbers to store
                self._numbers.store_readings(readings)
            assert self._snapshot == _texts(flat)
            self._hand_over(flat, [])
            return
        stored = self._stored(flat)
        self._item.user_properties.append((STORED, stored))
        differences = compare_readings(
            readings,
            stored,
            {line.key: line_number(line.key) for line in flat},
            self._fragility,
            self._numbers.standing,
        )
        # The wording, checked apart from the numbers: the lines rendered from the stored
        # readings must be the text syrupy stores. Compared once, before anything fails, so
        # syrupy knows this claim used its snapshot.
        as_stored = [
            line_named(line.key).refill(
                line, {r.name: r.value_from_float(stored[r.name]) for r in line.readings}
            )
            for line in flat
        ]
        text_matches = self._snapshot == _texts(as_stored)
        failures = [d for d in differences if not d.drift]
        if failures:
            pytest.fail(self._differs(failures), pytrace=False)
        if not text_matches:
            diff = "\n".join(self._snapshot.get_assert_diff())
            pytest.fail(
                f"{self._item.nodeid}: the lines differ from their text snapshot\n{diff}\n"
                f"{self._numbers.update_hint()}",
                pytrace=False,
            )
        if readings:
            self._numbers.store_readings(readings)
        self._hand_over(flat, [d for d in differences if d.drift])

    # -- steps -------------------------------------------------------------------------------
    def _bounded(
        self,
        lines: list[LogLine],
        holds: Mapping[str, Bound],
        sometimes: Mapping[str, Bound],
    ) -> list[LogLine]:
        for line in lines:
            if line.key not in self._owns:
                raise pytest.UsageError(
                    f"{self._item.nodeid} quotes log line {line.key!r} but its log_lines "
                    f"mark declares only {list(self._owns)}"
                )
        labels = {r.label for line in lines for r in line.readings} | {
            r.name for line in lines for r in line.readings
        }
        unknown = [label for label in [*holds, *sometimes] if label not in labels]
        if unknown:
            raise pytest.UsageError(
                f"{self._item.nodeid} bounds {unknown}, which its lines do not print; they "
                "print " + ", ".join(sorted(repr(label) for label in labels))
            )
        return [line.bounded(holds).bounded(sometimes, sometimes=True) for line in lines]

    def _stored(self, lines: list[LogLine]) -> dict[str, float]:
        """The stored readings of this claim; fails once, naming what is missing, if there
        is no snapshot for it yet."""
        __tracebackhide__ = True
        missing: list[str] = []
        damaged: list[str] = []
        s = self._snapshot
        try:
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

    def _differs(self, failures: list[Difference]) -> str:
        numbers = "\n".join(f"  {d.describe()}" for d in failures)
        return (
            f"{self._item.nodeid}: the numbers differ from the snapshot\n{numbers}\n"
            f"{self._numbers.update_hint()}"
        )

    def _hand_over(self, lines: Iterable[LogLine], drift: list[Difference]) -> None:
        for d in drift:
            self._item.user_properties.append((DRIFT, d.describe()))
        for line in lines:
            self._item.user_properties.append((LINE, line.to_json()))


def _flatten(lines: Iterable[LogLine | Sequence[LogLine]]) -> list[LogLine]:
    out: list[LogLine] = []
    for item in lines:
        out.extend([item] if isinstance(item, LogLine) else item)
    return out


def _texts(lines: Iterable[LogLine]) -> dict[str, str]:
    return {line.key: line.text for line in lines}
