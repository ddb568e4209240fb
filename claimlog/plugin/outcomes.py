"""What the controller learns of each claim from its reports, and the log they verify.

**The channel**: a claim's evidence rides on its report as `report.claimlog`, a list of named
payloads (the names below) that xdist ships to the controller with the report's own fields;
each phase's report carries what that phase added, once (the plugin's
`pytest_runtest_makereport`). `user_properties`, which JUnit XML and other reports print, holds
only what a reader wants: the claim's sentence and the log lines it verified.

`ClaimOutcome` gathers one claim's (or citation's) payloads, as every report carries them;
`assemble_log` lays the verified lines out as the workshop script writes its log. The
controller (`claimlog.plugin.controller`) and the reports (`claimlog.plugin.reports`) both read
them; neither is imported here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from claimlog.evidence.tables import Table
from claimlog.evidence.verdicts import Moved
from claimlog.log.lines import Log, LogLine
from claimlog.log.readings import Reading
from claimlog.text.checks import CitedLine
from claimlog.text.rewrites import Left, Rewrite

# -- the channel: what a claim's report carries to the controller ---------------------------
CHANNEL = pytest.StashKey[list[tuple[str, Any]]]()
SENT = pytest.StashKey[int]()  # how many of the item's payloads earlier reports carried


def channel(item: pytest.Item) -> list[tuple[str, Any]]:
    """The payloads a claim (or a citation) sends to the controller with its reports."""
    if CHANNEL not in item.stash:
        item.stash[CHANNEL] = []
    return item.stash[CHANNEL]


def payloads(report: pytest.TestReport) -> list[tuple[str, Any]]:
    """What one report carries on the channel (nothing for a report of another plugin's
    test, or one made without claimlog's hook)."""
    return list(getattr(report, "claimlog", None) or ())


# payload names
OWNS = "claimlog owns"  # the log line keys a claim owns (set at setup)
SENTENCE = "claimlog sentence"  # what the claim verifies: its docstring's first paragraph
LINE = "claimlog line"  # one verified log line (LogLine as JSON)
BOUNDED = "claimlog bounded"  # readings of lines another claim owns, bounded by this one
READINGS = "claimlog readings"  # readings computed, verified or not (for the record)
STORED = "claimlog stored"  # the stored values of a claim's readings, by name
TABLE = "claimlog table"  # a stored table this claim checked (Table as JSON)
NUMBERS_FILE = "claimlog numbers file"  # a numbers snapshot file the claim read or wrote
DRIFT = "claimlog drift"  # one drifted number, described for people
TITLE = "claimlog title"  # what a figure's title states, and which parts hold only sometimes
MOVED = "claimlog moved"  # readings printed otherwise than their snapshot (Moved as JSON)
NOTE = "claimlog note"  # how a cited lesson holds over other seeds (a citation's, never a failure)
CITED = "claimlog cited"  # the log lines a citation names
CITATION = "claimlog citation"  # set by a citation of the workshop's text, not a claim
REWRITE = "claimlog rewrite"  # under an update: a quote of the text rewritten (Rewrite as JSON)
# Under an update: a quote not rewritten, and why: on purpose, or no longer true (Left as JSON).
LEFT = "claimlog left"


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


def assemble_log(claims: Mapping[str, ClaimOutcome], log: Log) -> LogAssembly:
    verified = {key: line for c in claims.values() if c.passed for key, line in c.lines.items()}
    failed_by = {key: nodeid for nodeid, c in claims.items() if c.failed for key in c.owns}
    fixed = log.fixed_lines()
    out: dict[int, CitedLine] = {}
    counts = {"verified": 0, "failed": 0, "missing": 0}
    for n, line in enumerate(log.lines, start=1):
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
