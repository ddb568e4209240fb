"""What the controller learns about each claim, from the test reports alone.

A claim's evidence rides on its report (`user_properties`), which pytest-xdist ships from the
worker that ran it to the controller, the only process that writes files. These are the
names it travels under, and `ClaimOutcome`, what the controller makes of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from bnvg.evidence.tables import Table
from bnvg.log.layout import LogLine
from bnvg.log.readings import Reading

# user_properties names
OWNS = "bnvg owns"  # the log line keys a claim owns (set at setup)
SENTENCE = "bnvg sentence"  # what the claim verifies: its docstring's first paragraph
LINE = "bnvg line"  # one verified log line (LogLine as JSON)
READINGS = "bnvg readings"  # readings computed, verified or not (for the record)
STORED = "bnvg stored"  # the stored values of a claim's readings, by name
TABLE = "bnvg table"  # a stored table this claim checked (Table as JSON)
NUMBERS_FILE = "bnvg numbers file"  # a numbers snapshot file the claim read or wrote
DRIFT = "bnvg drift"  # one drifted number, described for people
NOTE = "bnvg note"  # how a cited lesson holds over other seeds (a citation's, never a failure)
CITATION = "bnvg citation"  # set by a citation of the workshop's Markdown, not a claim


@dataclass
class ClaimOutcome:
    """Everything the controller knows about one claim (or citation)."""

    owns: tuple[str, ...] = ()
    lines: dict[str, LogLine] = field(default_factory=dict)
    readings: dict[str, Reading] = field(default_factory=dict)
    stored: dict[str, float] = field(default_factory=dict)
    tables: dict[str, Table] = field(default_factory=dict)
    numbers_files: set[str] = field(default_factory=set)
    drift: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    sentence: str = ""
    failed: bool = False
    passed: bool = False
    skipped: bool = False
    ran: bool = False  # False for a claim only known as deselected
    citation: bool = False

    @property
    def status(self) -> str:
        if self.failed:
            return "failed"
        if self.passed:
            return "drifted" if self.drift else "verified"
        return "skipped" if self.skipped else "not run"

    @property
    def outcome(self) -> str:
        """The outcome as the session record states it."""
        return {"verified": "passed", "drifted": "passed"}.get(self.status, self.status)

    def add(self, report: pytest.TestReport) -> None:
        self.ran = True
        for name, value in report.user_properties:
            _ADD.get(name, _ignore)(self, value)
        if report.failed:
            self.failed = True
        elif report.skipped:
            self.skipped = True
        elif report.when == "call" and report.passed:
            self.passed = True


def _ignore(claim: ClaimOutcome, value: object) -> None:
    pass


def _owns(claim: ClaimOutcome, value: object) -> None:
    claim.owns = tuple(cast("Iterable[str]", value))


def _sentence(claim: ClaimOutcome, value: object) -> None:
    claim.sentence = str(value)


def _line(claim: ClaimOutcome, value: object) -> None:
    line = LogLine.from_json(cast("Mapping[str, Any]", value))
    claim.lines[line.key] = line


def _readings(claim: ClaimOutcome, value: object) -> None:
    for data in cast("Iterable[Mapping[str, Any]]", value):
        reading = Reading.from_json(data)
        claim.readings[reading.name] = reading


def _stored(claim: ClaimOutcome, value: object) -> None:
    claim.stored.update(cast("Mapping[str, float]", value))


def _table(claim: ClaimOutcome, value: object) -> None:
    table = Table.from_json(cast("Mapping[str, Any]", value))
    claim.tables[table.name] = table


def _numbers_file(claim: ClaimOutcome, value: object) -> None:
    claim.numbers_files.add(str(value))


def _citation(claim: ClaimOutcome, value: object) -> None:
    claim.citation = True


def _drift(claim: ClaimOutcome, value: object) -> None:
    if str(value) not in claim.drift:
        claim.drift.append(str(value))


def _note(claim: ClaimOutcome, value: object) -> None:
    if str(value) not in claim.notes:
        claim.notes.append(str(value))


_ADD = {
    NOTE: _note,
    OWNS: _owns,
    SENTENCE: _sentence,
    LINE: _line,
    READINGS: _readings,
    STORED: _stored,
    TABLE: _table,
    NUMBERS_FILE: _numbers_file,
    DRIFT: _drift,
    CITATION: _citation,
}


def owned_keys(item: pytest.Item) -> tuple[str, ...]:
    return tuple(key for mark in item.iter_markers("log_lines") for key in mark.args)


def sentence_of(item: pytest.Item) -> str:
    doc = getattr(getattr(item, "function", None), "__doc__", None) or ""
    return " ".join(doc.strip().split("\n\n")[0].split())
