"""The record of one claims session: what a machine reads instead of the terminal.

`pytest claims/ --record PATH` writes it at the end of the session: every claim's outcome,
every reading computed (by name, at full precision, with the claim's bound), every stored
table (training histories, figure data), the runs trained and the platform that computed
them. The sweep merges records into its table, the benchmark and the project's tests read
them; nobody parses the terminal's text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from claimlog.evidence.tables import Table
from claimlog.log.readings import Reading
from claimlog.store import COMPUTED, DAMAGED, REUSED, Event, atomic_write

FORMAT = 2


@dataclass(frozen=True)
class ClaimResult:
    """One claim's outcome: "passed", "failed", "skipped" or "not run" (deselected)."""

    outcome: str
    lines: tuple[str, ...] = ()  # the log lines it owns
    readings: tuple[str, ...] = ()  # the names of the readings it quoted
    drift: tuple[str, ...] = ()
    sentence: str = ""  # what the claim verifies: its docstring's first paragraph
    tables: tuple[str, ...] = ()  # the stored tables it checked (histories, figure data)


@dataclass(frozen=True)
class Record:
    exitstatus: int
    claims: Mapping[str, ClaimResult]
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
    citations: Mapping[str, ClaimResult] = field(default_factory=dict)  # --workshop's checks
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
            "claims": {nodeid: asdict(c) for nodeid, c in self.claims.items()},
            "citations": {nodeid: asdict(c) for nodeid, c in self.citations.items()},
            "readings": {name: r.to_json() for name, r in self.readings.items()},
            "tables": {name: t.to_json() for name, t in self.tables.items()},
            "keys": dict(self.keys),
            "code": dict(self.code),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Record:
        if data.get("format") != FORMAT:
            raise ValueError(f"a session record of format {data.get('format')!r}, not {FORMAT}")
        return cls(
            exitstatus=int(data["exitstatus"]),
            claims={nodeid: _result(c) for nodeid, c in data["claims"].items()},
            citations={nodeid: _result(c) for nodeid, c in data["citations"].items()},
            readings={name: Reading.from_json(r) for name, r in data["readings"].items()},
            tables={name: Table.from_json(t) for name, t in data["tables"].items()},
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


def _result(data: Mapping[str, Any]) -> ClaimResult:
    return ClaimResult(
        data["outcome"],
        tuple(data["lines"]),
        tuple(data["readings"]),
        tuple(data["drift"]),
        data.get("sentence", ""),
        tuple(data.get("tables", ())),
    )
