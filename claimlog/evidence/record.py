"""The record of one claims session: what a machine reads instead of the terminal.

`pytest claims/ --record PATH` writes it at the end of the session: every claim's outcome,
every reading computed (by name, at full precision, with the claim's bound), every stored
table (training histories, figure data), the runs trained and the platform that computed
them. The sweep merges records into its table, the benchmark and the project's tests read
them; nobody parses the terminal's text.

`ClaimOutcome` is the one type of a claim's outcome, from the reports the controller reads
(`claimlog.plugin.outcomes.take`) through this record to the sweep's fragments
(`claimlog.evidence.fragments`), which keep the part of it the evidence needs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from claimlog.evidence.tables import Table
from claimlog.evidence.verdicts import Moved
from claimlog.log.lines import LogLine
from claimlog.log.readings import Reading
from claimlog.store import COMPUTED, DAMAGED, REUSED, Event, atomic_write

FORMAT = 2
OUTCOMES = ("passed", "failed", "skipped", "not run")  # "not run": known only as deselected


@dataclass
class ClaimOutcome:
    """Everything known of one claim (or citation of the text): what its reports carried,
    gathered by the controller as they come, and what a record or a fragment kept of it."""

    owns: tuple[str, ...] = ()  # the log line keys it owns
    lines: dict[str, LogLine] = field(default_factory=dict)  # the lines it verified
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
    # A citation's, under an update, as the text feature sent them (`claimlog.text.rewrites`'
    # Rewrite and Left as JSON): its quotes rewritten, and those left, with why.
    rewrites: list[dict[str, Any]] = field(default_factory=list)
    left: list[dict[str, Any]] = field(default_factory=list)
    examined: list[str] = field(default_factory=list)  # what sets this machine apart, found
    sentence: str = ""  # what the claim verifies: its docstring's first paragraph
    why: str = ""  # a failure's reason, in one line: what pytest's report calls its crash
    failed: bool = False
    passed: bool = False
    skipped: bool = False
    ran: bool = False  # False for a claim only known as deselected
    citation: bool = False
    # Computed at other seeds than the workshop's own (--sampler-seed 3): the numbers that
    # moved from the snapshots (of the workshop's seeds) are another experiment's, judged
    # against that seed's evidence, not drift (a number that moved with the platform alone).
    another_experiment: bool = False

    @property
    def drifted(self) -> list[str]:
        """The numbers that drifted: those that moved, unless this is another experiment."""
        return [] if self.another_experiment else self.drift

    @property
    def status(self) -> str:
        """The outcome as people read it: "verified" or "drifted" where it passed."""
        if self.failed:
            return "failed"
        if self.passed:
            return "drifted" if self.drifted else "verified"
        return "skipped" if self.skipped else "not run"

    @property
    def outcome(self) -> str:
        """The outcome as the record and the evidence count it: one of `OUTCOMES`."""
        return {"verified": "passed", "drifted": "passed"}.get(self.status, self.status)

    def to_json(self) -> dict[str, Any]:
        """What a record keeps of it: its readings and tables by name (the record holds
        them once, for every claim)."""
        return {
            "outcome": self.outcome,
            "lines": list(self.owns),
            "readings": list(self.readings),
            "drift": list(self.drifted),
            "sentence": self.sentence,
            "tables": list(self.tables),
        }

    @classmethod
    def from_json(
        cls,
        data: Mapping[str, Any],
        readings: Mapping[str, Reading] | None = None,
        tables: Mapping[str, Table] | None = None,
    ) -> ClaimOutcome:
        """The outcome `to_json` wrote (or the part of it a fragment keeps), its readings and
        tables found by name in `readings` and `tables`, the record's."""
        outcome = data["outcome"]
        if outcome not in OUTCOMES:
            raise ValueError(f"a claim's outcome is one of {', '.join(OUTCOMES)}, not {outcome!r}")
        readings, tables = readings or {}, tables or {}
        return cls(
            owns=tuple(data.get("lines", ())),
            readings={n: readings[n] for n in data.get("readings", ()) if n in readings},
            tables={n: tables[n] for n in data.get("tables", ()) if n in tables},
            drift=list(data.get("drift", ())),
            sentence=str(data.get("sentence", "")),
            ran=outcome != "not run",
            passed=outcome == "passed",
            failed=outcome == "failed",
            skipped=outcome == "skipped",
        )


@dataclass(frozen=True)
class Record:
    exitstatus: int
    claims: Mapping[str, ClaimOutcome]
    readings: Mapping[str, Reading]
    tables: Mapping[str, Table]
    # What the session did with each result kept in pytest's cache, in any process: one list.
    events: tuple[Event, ...] = ()
    platform: Mapping[str, str] = field(default_factory=dict)
    # Where the platform stands with the evidence: kind ("reference", "held", "new"), this
    # platform's id and the reference's (`claimlog.evidence.verdicts`).
    standing: Mapping[str, str] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    log: Mapping[str, Any] = field(default_factory=dict)
    citations: Mapping[str, ClaimOutcome] = field(default_factory=dict)  # --workshop's checks
    # Which code computed it: each claim's key (`claimlog.evidence.keys.claim_keys`) as this
    # session found it in the code it imported, and that code's digest and folder.
    keys: Mapping[str, str] = field(default_factory=dict)
    code: Mapping[str, str] = field(default_factory=dict)

    def _names(self, what: str, kind: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(e.name for e in self.events if (e.what, e.kind) == (what, kind)))

    @property
    def trained(self) -> tuple[str, ...]:
        """The runs trained this session (once each, across processes)."""
        return tuple(e.name for e in self.events if (e.what, e.kind) == (COMPUTED, "run"))

    # The session's other views of its events, each name once.
    reused = property(lambda self: self._names(REUSED, "run"))  # loaded, not trained
    damaged = property(lambda self: self._names(DAMAGED, "run"))  # found damaged, trained again
    figures_reused = property(lambda self: self._names(REUSED, "figure"))
    results_reused = property(lambda self: self._names(REUSED, "result"))

    def outcome(self, nodeid: str) -> str:
        return self.claims[nodeid].outcome if nodeid in self.claims else "not run"

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "exitstatus": self.exitstatus,
            "platform": dict(self.platform),
            "standing": dict(self.standing),
            "options": dict(self.options),
            "log": dict(self.log),
            "events": [[e.what, e.kind, e.name, None, e.seconds] for e in self.events],
            "claims": {nodeid: c.to_json() for nodeid, c in self.claims.items()},
            "citations": {nodeid: c.to_json() for nodeid, c in self.citations.items()},
            "readings": {name: r.to_json() for name, r in self.readings.items()},
            "tables": {name: t.to_json() for name, t in self.tables.items()},
            "keys": dict(self.keys),
            "code": dict(self.code),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Record:
        if data.get("format") != FORMAT:
            raise ValueError(f"a session record of format {data.get('format')!r}, not {FORMAT}")
        readings = {name: Reading.from_json(r) for name, r in data["readings"].items()}
        tables = {name: Table.from_json(t) for name, t in data["tables"].items()}

        def outcomes(of: str) -> dict[str, ClaimOutcome]:
            return {n: ClaimOutcome.from_json(c, readings, tables) for n, c in data[of].items()}

        return cls(
            exitstatus=int(data["exitstatus"]),
            claims=outcomes("claims"),
            citations=outcomes("citations"),
            readings=readings,
            tables=tables,
            events=tuple(Event(*e) for e in data["events"]),
            platform=data["platform"],
            standing=data.get("standing", {}),
            options=data["options"],
            log=data["log"],
            keys=data.get("keys", {}),
            code=data.get("code", {}),
        )

    def save(self, path: Path) -> None:
        atomic_write(path, json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n")

    @classmethod
    def load(cls, path: Path) -> Record:
        try:
            return cls.from_json(json.loads(path.read_text()))
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise ValueError(f"cannot read the session record {path}: {error}") from None
