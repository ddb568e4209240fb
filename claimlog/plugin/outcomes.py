"""What the controller learns of each claim from its reports, and the log they verify.

`ClaimOutcome` gathers one claim's (or citation's) payloads, as every report carries them
over the channel (`claimlog.plugin.options.payloads`); `assemble_log` lays the verified lines
out as the workshop script writes its log. The session (`claimlog.plugin.session`) and the
reports (`claimlog.plugin.reports`) both read them; neither is imported here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from claimlog.evidence.tables import Table
from claimlog.evidence.verdicts import Moved
from claimlog.log.lines import LogLine, fixed_lines, layout
from claimlog.log.readings import Reading
from claimlog.plugin.options import (
    BOUNDED,
    CITATION,
    CITED,
    DRIFT,
    LEFT,
    LINE,
    MOVED,
    NOTE,
    NUMBERS_FILE,
    OWNS,
    READINGS,
    REWRITE,
    SENTENCE,
    STORED,
    TABLE,
    TITLE,
    payloads,
)
from claimlog.text.citations import CitedLine
from claimlog.text.rewrites import Left, Rewrite


# -- what the controller learns of each claim -----------------------------------------------
@dataclass
class ClaimOutcome:
    """Everything the controller knows about one claim (or citation)."""

    owns: tuple[str, ...] = ()
    lines: dict[str, LogLine] = field(default_factory=dict)
    readings: dict[str, Reading] = field(default_factory=dict)
    # Readings of lines another claim owns, bounded by this one: shown with the claim, but
    # the record keeps each reading as its owner computed and bounded it.
    bounded: dict[str, Reading] = field(default_factory=dict)
    stored: dict[str, float] = field(default_factory=dict)
    tables: dict[str, Table] = field(default_factory=dict)
    numbers_files: set[str] = field(default_factory=set)
    drift: list[str] = field(default_factory=list)
    moved: dict[str, Moved] = field(default_factory=dict)  # by reading name
    notes: list[str] = field(default_factory=list)
    titles: list[dict[str, Any]] = field(default_factory=list)  # what its figures' titles state
    cited: tuple[int, ...] = ()  # a citation's: the log lines it names
    rewrites: list[Rewrite] = field(default_factory=list)  # a citation's, under an update
    left: list[Left] = field(default_factory=list)  # its quotes an update left, and why
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
        for name, value in payloads(report):
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


def _moved(claim: ClaimOutcome, value: object) -> None:
    for data in cast("Iterable[Mapping[str, Any]]", value):
        moved = Moved.from_json(data)
        claim.moved[moved.reading.name] = moved


def _bounded(claim: ClaimOutcome, value: object) -> None:
    for data in cast("Iterable[Mapping[str, Any]]", value):
        reading = Reading.from_json(data)
        claim.bounded[reading.name] = reading


def _cited(claim: ClaimOutcome, value: object) -> None:
    claim.cited = tuple(int(n) for n in cast("Iterable[int]", value))


def _rewrite(claim: ClaimOutcome, value: object) -> None:
    rewrite = Rewrite.from_json(cast("Mapping[str, Any]", value))
    if rewrite not in claim.rewrites:
        claim.rewrites.append(rewrite)


def _left(claim: ClaimOutcome, value: object) -> None:
    left = Left.from_json(cast("Mapping[str, Any]", value))
    if left not in claim.left:
        claim.left.append(left)


def _title(claim: ClaimOutcome, value: object) -> None:
    title = dict(cast("Mapping[str, Any]", value))
    if title not in claim.titles:  # a claim may state one figure's title twice
        claim.titles.append(title)


_ADD = {
    BOUNDED: _bounded,
    CITED: _cited,
    TITLE: _title,
    MOVED: _moved,
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
    REWRITE: _rewrite,
    LEFT: _left,
}


# -- results.log ----------------------------------------------------------------------------
NOT_VERIFIED = "[not verified"


@dataclass(frozen=True)
class LogAssembly:
    """The lines of one session's log, what each says, and how complete they are."""

    text: str
    lines: Mapping[int, CitedLine]
    verified: int
    failed: int
    missing: int

    @property
    def complete(self) -> bool:
        return self.failed == 0 and self.missing == 0

    @property
    def n_lines(self) -> int:
        return len(self.lines)


def assemble_log(claims: Mapping[str, ClaimOutcome]) -> LogAssembly:
    verified = {key: line for c in claims.values() if c.passed for key, line in c.lines.items()}
    failed_by = {key: nodeid for nodeid, c in claims.items() if c.failed for key in c.owns}
    fixed = fixed_lines()
    out: dict[int, CitedLine] = {}
    counts = {"verified": 0, "failed": 0, "missing": 0}
    for n, line in enumerate(layout(), start=1):
        if n in fixed:
            f = fixed[n]
            out[n] = CitedLine(n, f.text, f.readings, f.names)
            continue
        key = str(line.key)
        if key in verified:
            v = verified[key]
            out[n] = CitedLine(n, v.text, v.readings, v.names)
            counts["verified"] += 1
        elif key in failed_by:
            text = f"  {NOT_VERIFIED}: {key} -- {failed_by[key]} failed]"
            out[n] = CitedLine(n, text, verified=False)
            counts["failed"] += 1
        else:
            out[n] = CitedLine(n, f"  {NOT_VERIFIED}: {key} -- no claim ran]", verified=False)
            counts["missing"] += 1
    text = "".join(f"{line.text}\n" for line in out.values())
    return LogAssembly(text=text, lines=out, **counts)
