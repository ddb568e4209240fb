"""The session record: what the sweep, the benchmark and the tests read instead of the terminal."""

import numpy as np
import pytest

from claimlog.evidence.record import ClaimOutcome, Record
from claimlog.evidence.tables import Table
from claimlog.log.readings import PERCENT, Quantity, Reading, at_least
from claimlog.store import COMPUTED, DAMAGED, REUSED, Event


def test_a_record_round_trips_through_its_file(tmp_path):
    r = Reading("S8 ReLU", Quantity("final test accuracy", PERCENT, ".1f"), 93.0, at_least(90))
    table = Table("runs/ReLU", "run 'ReLU'", "step", (1, 50), {"train loss": np.array([0.7, 0.6])})
    record = Record(
        exitstatus=0,
        claims={
            "claims/test_s8.py::test_fix[ReLU]": ClaimOutcome(
                owns=("S8 ReLU",), readings={r.name: r}, sentence="It heals.", ran=True, passed=True
            )
        },
        readings={r.name: r},
        tables={table.name: table},
        events=(
            Event(COMPUTED, "run", "ReLU"),
            Event(REUSED, "run", "plain", {"trained at": "2026-12-01 09:25 UTC"}),
            Event(REUSED, "run", "plain"),  # a second worker loaded it too
            Event(REUSED, "figure", "two_moons.png"),
            Event(DAMAGED, "result", "S9 eval bug", "truncated"),
        ),
        platform={"torch": "2.13.0+cpu"},
    )
    record.save(tmp_path / "record.json")
    again = Record.load(tmp_path / "record.json")
    assert again.readings == record.readings and again.trained == ("ReLU",)
    assert (again.reused, again.figures_reused, again.results_reused) == (
        ("plain",),
        ("two_moons.png",),
        (),
    )
    assert [(e.what, e.kind, e.name) for e in again.events][-1] == (
        DAMAGED,
        "result",
        "S9 eval bug",
    )
    assert again.outcome("claims/test_s8.py::test_fix[ReLU]") == "passed"
    assert again.claims == record.claims  # the one outcome type, its readings found by name
    assert again.outcome("claims/test_s8.py::test_other") == "not run"
    assert list(again.tables["runs/ReLU"].columns["train loss"]) == [0.7, 0.6]


def test_an_unreadable_record_is_named(tmp_path):
    (tmp_path / "record.json").write_text('{"format": 99}')
    with pytest.raises(ValueError, match=r"record\.json: a session record of format 99, not 2"):
        Record.load(tmp_path / "record.json")


def test_a_claims_outcome_read_back_is_one_the_record_knows():
    with pytest.raises(ValueError) as refused:
        ClaimOutcome.from_json({"outcome": "verified"})
    assert str(refused.value) == (
        "a claim's outcome is one of passed, failed, skipped, not run, not 'verified'"
    )
