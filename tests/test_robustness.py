"""Truth over seeds: Wilson intervals, the robustness table, and docs/sweep.md's findings."""

import json
from pathlib import Path

import pytest

from bnvg.workshop import DECLARATION
from claimlog.evidence.fragility import Rate, wilson
from claimlog.places import Places
from claimlog.sweep import report
from claimlog.sweep.merge import (
    FINDINGS_BEGIN,
    FINDINGS_END,
    SWEEP_PAGE,
    build_robustness,
    with_findings,
)

PLACES = Places(Path(__file__).resolve().parent.parent)


@pytest.mark.parametrize(
    ("k", "n", "lo", "hi"),
    [(0, 10, 0.0, 0.2775), (5, 10, 0.2366, 0.7634), (10, 10, 0.7225, 1.0), (3, 8, 0.1368, 0.6943)],
)
def test_wilsons_interval_stays_in_0_1_and_is_honest_at_the_edges(k, n, lo, hi):
    assert wilson(k, n) == pytest.approx((lo, hi), abs=1e-4)


def test_a_rate_says_k_of_n_with_its_interval():
    assert str(Rate(3, 8)) == "3 of 8 (95% interval 0.14 to 0.69)"
    assert Rate(33, 33).always and not Rate(32, 33).always


OUTCOMES = {
    "sampler": {
        "seed-0": {"c::a": "passed", "c::b": "passed"},
        "sampler-seed-1": {"c::a": "passed", "c::b": "failed"},
        "sampler-seed-2": {"c::a": "passed", "c::b": "skipped"},
    }
}


def test_each_claim_holds_in_k_of_the_runs_that_judged_it():
    doc = build_robustness(
        "here", OUTCOMES, {"sampler": {"seed-0": {"r": 1.0}, "sampler-seed-1": {"r": 3.0}}}, {}
    )
    assert report.rates(doc, "c::a")["sampler"] == Rate(3, 3)
    assert report.rates(doc, "c::b")["sampler"] == Rate(1, 2)  # a skipped run is no verdict
    assert doc["readings"]["r"]["sampler"] == {"min": 1.0, "median": 2.0, "max": 3.0, "of": 2}


def test_the_changes_of_verdict_since_the_last_table_are_said():
    before = build_robustness("here", OUTCOMES, {}, {})
    after_outcomes = {
        "sampler": {**OUTCOMES["sampler"], "sampler-seed-3": {"c::a": "failed", "c::b": "passed"}}
    }
    after = build_robustness("here", after_outcomes, {}, {})
    assert report.changed(before, after, DECLARATION) == [
        "c::a: minibatch orders: 3 of 3 -> 3 of 4",
        "c::b: minibatch orders: 1 of 2 -> 2 of 3",
    ]


def test_the_findings_are_replaced_between_their_markers_only():
    page = f"intro\n{FINDINGS_BEGIN}\nold\n{FINDINGS_END}\nrest\n"
    assert with_findings(page, "new\n") == f"intro\n{FINDINGS_BEGIN}\nnew\n{FINDINGS_END}\nrest\n"
    with pytest.raises(ValueError, match="lacks the markers"):
        with_findings("no markers", "new\n")


def test_the_committed_findings_say_what_the_committed_table_says():
    document = json.loads(PLACES.robustness_json.read_text())
    page = (PLACES.root / SWEEP_PAGE).read_text()
    assert with_findings(page, report.findings(document, DECLARATION)) == page, (
        f"{SWEEP_PAGE}'s findings are not the table's: run `python -m bnvg.sweep --merge-only`"
    )


def test_every_claim_but_those_reading_the_sweep_has_a_row_in_the_committed_table():
    document = json.loads(PLACES.robustness_json.read_text())
    claims = {
        f"claims/{p.name}::{name}"
        for p in (PLACES.root / "claims").glob("test_*.py")
        for name in [
            line.split("(")[0][4:]
            for line in p.read_text().splitlines()
            if line.startswith("def test_")
        ]
    }
    rows = {c.split("[")[0] for c in document["claims"]}
    evidence = {c for c in claims if "about_half_the_time" in c}  # marked evidence
    assert claims - evidence <= rows
    assert set(document["axes"]) == {"sampler", "init"}
    assert all(len(runs) == 33 for runs in document["axes"].values())
