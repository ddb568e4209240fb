"""What the controller learns of each claim from its reports, and the log they verify.

**The channel**: a claim's evidence rides on its report as `report.claimlog`, a list of named
payloads (the names below) that xdist ships to the controller with the report's own fields;
each phase's report carries what that phase added, once (the plugin's
`pytest_runtest_makereport`). `user_properties`, which JUnit XML and other reports print, holds
only what a reader wants: the claim's sentence and the log lines it verified.

`take` gathers one claim's (or citation's) payloads, as every report carries them, into its
`ClaimOutcome` (`claimlog.evidence.record`: the one type of a claim's outcome, which knows no
pytest); `assemble_log` lays the verified lines out as the workshop script writes its log. The
controller (`claimlog.plugin.controller`) and the reports (`claimlog.plugin.reporting`) both
read them; neither is imported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from claimlog.evidence.record import ClaimOutcome
from claimlog.evidence.tables import Table
from claimlog.evidence.verdicts import Moved, prints_as_stored
from claimlog.log.lines import CitedLine, Log, LogLine
from claimlog.log.readings import Reading

# -- the channel: what a claim's report carries to the controller ---------------------------
CHANNEL = pytest.StashKey[list[tuple[str, Any]]]()
SENT = pytest.StashKey[int]()  # how many of the item's payloads earlier reports carried


def channel(item: pytest.Item) -> list[tuple[str, Any]]:
    """The payloads a claim (or a citation) sends to the controller with its reports."""
    return item.stash.setdefault(CHANNEL, [])


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
# Where the fingerprint is the reference's and a number moved: a kernel, heard here, that sets
# this machine apart from the record (`KernelRecording.examine`), for people.
EXAMINED = "claimlog examined"


# -- what the controller learns of each claim -----------------------------------------------
def take(claim: ClaimOutcome, report: pytest.TestReport) -> None:
    """One report of a claim (or citation), any phase, into what is known of it."""
    claim.ran = True
    for name, value in payloads(report):
        _take(claim, name, value)
    if report.failed:
        claim.failed = True
        claim.why = claim.why or _why(report)
    elif report.skipped:
        claim.skipped = True
    elif report.when == "call" and report.passed:
        claim.passed = True


def _take(claim: ClaimOutcome, name: str, value: Any) -> None:
    """One payload of a report (`channel`) into `claim`; a name this engine does not know
    is left."""
    if name == OWNS:
        claim.owns = tuple(value)
    elif name == SENTENCE:
        claim.sentence = str(value)
    elif name == LINE:
        line = LogLine.from_json(value)
        claim.lines[line.key] = line
    elif name in (READINGS, BOUNDED):
        into = claim.readings if name == READINGS else claim.bounded
        into.update((r.name, r) for r in map(Reading.from_json, value))
    elif name == MOVED:
        claim.moved.update((m.reading.name, m) for m in map(Moved.from_json, value))
    elif name == STORED:
        claim.stored.update(value)
    elif name == TABLE:
        table = Table.from_json(value)
        claim.tables[table.name] = table
    elif name == NUMBERS_FILE:
        claim.numbers_files.add(str(value))
    elif name == CITED:
        claim.cited = tuple(int(n) for n in value)
    elif name == CITATION:
        claim.citation = True
    elif name in (DRIFT, NOTE, EXAMINED):
        _once({DRIFT: claim.drift, NOTE: claim.notes, EXAMINED: claim.examined}[name], str(value))
    elif name in (TITLE, REWRITE, LEFT):
        _once({TITLE: claim.titles, REWRITE: claim.rewrites, LEFT: claim.left}[name], dict(value))


def _why(report: pytest.TestReport) -> str:
    """Why a report failed, in one line: its crash's message (an assertion's own message,
    without pytest's rewriting of it), or the first line of what it says."""
    crash = getattr(report.longrepr, "reprcrash", None)
    said = str(getattr(crash, "message", "") or report.longreprtext or "failed")
    lines = [line.strip() for line in said.splitlines() if line.strip()]
    return lines[0].removeprefix("AssertionError: ") if lines else "failed"


def _once(items: list[Any], item: object) -> None:
    """Keep `item` once: a claim may send the same one twice (a figure's title, say)."""
    if item not in items:
        items.append(item)


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


def standing_readings(claim: ClaimOutcome, key: str) -> tuple[Reading, ...]:
    """The readings a failed claim computed for its line `key` that print as its snapshot
    stores them: what failed was not them, and the text may go on quoting them."""
    standing = []
    for reading in claim.readings.values():
        stored = claim.stored.get(reading.name)
        if reading.key != key or stored is None or reading.value is None:
            continue
        if prints_as_stored(reading, stored):
            standing.append(reading)
    return tuple(standing)


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
            standing = standing_readings(claims[failed_by[key]], key)
            out[n] = CitedLine(n, text, verified=False, standing=standing)
            counts["failed"] += 1
        else:
            out[n] = CitedLine(n, f"  {NOT_VERIFIED}: {key} -- no claim ran]", verified=False)
            counts["missing"] += 1
    text = "".join(f"{line.text}\n" for line in out.values())
    return LogAssembly(text=text, lines=out, **counts)
