"""Verdicts by platform: exact on the reference and on held platforms, drift on a new one."""

import math

import numpy as np
import pytest

from bnvg.experiment.runs import history_table
from claimlog.evidence.fragility import EMPTY, from_document
from claimlog.evidence.tables import Table, slug
from claimlog.evidence.verdicts import (
    HELD,
    NEW,
    REFERENCE,
    Moved,
    Standing,
    compare_readings,
    compare_table,
    moved_readings,
)
from claimlog.log.readings import LOSS, PERCENT, RATIO, STEP, STEP_SPEC, Quantity, Reading

LOSS_Q = Quantity("final train loss", LOSS, ".4f")
TIMES = Quantity("times smaller", RATIO, ".0f")
BN_LOSS = "S6 batch norm, final train loss"
RATIO_NAME = "S4 plain ratio, times smaller"
LINES = {"S6 batch norm": 66, "S4 plain ratio": 40}

ON_REFERENCE = Standing(REFERENCE, "ref", "ref")
ON_NEW = Standing(NEW, "laptop", "ref")
STRICT_ON_NEW = Standing(NEW, "laptop", "ref", strict=True)


def reading(value, quantity=LOSS_Q, key="S6 batch norm"):
    return Reading(key, quantity, value)


def fragile_loss():
    """The batch-norm net's final loss: printed 0.0053 by the published log, so fragile."""
    entry = {
        "line": 66,
        "kind": "loss",
        "label": "final train loss",
        "spec": ".4f",
        "position": 0,
        "reference": {"value": 0.0079, "printed": "0.0079"},
        "platforms": {"published": {"value": 0.0053, "printed": "0.0053"}},
        "seeds": {},
        "bound": None,
        "band": None,
    }
    return from_document({"readings": {BN_LOSS: entry}})


def test_on_the_reference_any_difference_fails_naming_the_reading_with_both_values():
    [d] = compare_readings(
        [reading(0.00789)], {BN_LOSS: 0.0053}, LINES, fragile_loss(), ON_REFERENCE
    )
    assert not d.drift
    assert d.describe() == f"{BN_LOSS}: snapshot 0.0053, here 0.0079 (log line 66, fragile)"


def test_on_the_reference_a_move_below_the_printed_precision_fails_too():
    here = reading(3015.3044087271446, TIMES, "S4 plain ratio")
    stored = {RATIO_NAME: 3015.3044087271446 * (1 + 2e-7)}
    [d] = compare_readings([here], stored, LINES, EMPTY, ON_REFERENCE)
    assert not d.drift and "(both print 3015)" in d.describe()


def test_on_a_new_platform_a_fragile_reading_that_moved_is_drift():
    [d] = compare_readings([reading(0.00789)], {BN_LOSS: 0.0053}, LINES, fragile_loss(), ON_NEW)
    assert d.drift


def test_on_a_new_platform_a_reading_without_fresh_evidence_that_moved_fails():
    """Without evidence of this checkout's key nothing says the claim was not edited: an edit
    is never taken for drift."""
    here = reading(3015.3, TIMES, "S4 plain ratio")
    [d] = compare_readings([here], {RATIO_NAME: 3016.2}, LINES, EMPTY, ON_NEW)
    assert not d.drift
    assert (
        d.describe()
        == f"{RATIO_NAME}: snapshot 3016, here 3015 (log line 40, no evidence of it yet)"
    )


def test_on_a_new_platform_a_claim_the_record_says_is_unedited_drifts_without_any_sweep():
    """A workshop no sweep measured: the update that recorded its snapshots kept each claim's
    key beside them (snapshots/keys.json). Where the claim's key is still that one, its code
    and recipe are the record's, and a number that moved with the platform is drift; where
    it is not (an edit), it fails, and on the reference any move fails all the same."""
    here = reading(3015.3, TIMES, "S4 plain ratio")
    stored = {RATIO_NAME: 3016.2}
    [d] = compare_readings([here], stored, LINES, EMPTY, ON_NEW, edited=False)
    assert d.drift
    [d] = compare_readings([here], stored, LINES, EMPTY, ON_NEW, edited=True)
    assert not d.drift
    [d] = compare_readings([here], stored, LINES, EMPTY, ON_REFERENCE, edited=False)
    assert not d.drift
    # An edit fails even below the printed precision, where a platform's move is nothing.
    below = {RATIO_NAME: 3015.31}
    assert compare_readings([here], below, LINES, EMPTY, ON_NEW, edited=False) == []
    [d] = compare_readings([here], below, LINES, EMPTY, ON_NEW, edited=True)
    assert not d.drift and d.describe().endswith(
        "its claim changed since the snapshots were recorded)"
    )


def test_on_a_new_platform_a_move_below_the_printed_precision_is_nothing_to_report():
    here = reading(3015.30, TIMES, "S4 plain ratio")
    assert compare_readings([here], {RATIO_NAME: 3015.40}, LINES, EMPTY, ON_NEW) == []


def test_strict_numbers_fails_any_difference_on_any_platform():
    [d] = compare_readings(
        [reading(0.00789)], {BN_LOSS: 0.0053}, LINES, fragile_loss(), STRICT_ON_NEW
    )
    assert not d.drift


def test_a_held_platform_is_compared_exactly_with_its_own_evidence_not_the_snapshot():
    held = Standing(HELD, "scalar", "ref", readings={BN_LOSS: 0.0081})
    snapshot = {BN_LOSS: 0.0079}
    assert compare_readings([reading(0.0081)], snapshot, LINES, fragile_loss(), held) == []
    [d] = compare_readings([reading(0.0082)], snapshot, LINES, fragile_loss(), held)
    assert not d.drift
    assert "this platform's evidence 0.0081, here 0.0082" in d.describe()


def test_a_reading_the_held_platforms_evidence_lacks_is_judged_as_on_a_new_platform():
    held = Standing(HELD, "scalar", "ref", readings={})
    [d] = compare_readings([reading(0.00789)], {BN_LOSS: 0.0053}, LINES, fragile_loss(), held)
    assert d.drift


def test_never_equals_never():
    first = Quantity("first step at the target", STEP, STEP_SPEC)
    never = [reading(None, first)]
    stored = {"S6 batch norm, first step at the target": math.nan}
    assert compare_readings(never, stored, LINES, EMPTY, ON_REFERENCE) == []


def test_a_percent_reading_compares_in_percent():
    acc = Quantity("test accuracy", PERCENT, ".1f")
    [d] = compare_readings(
        [reading(69.5, acc, "S4 plain ratio")],
        {"S4 plain ratio, test accuracy": 71.5},
        LINES,
        EMPTY,
        ON_REFERENCE,
    )
    assert "snapshot 71.5, here 69.5" in d.describe()


def batch_norm_history():
    from bnvg.experiment.results import History

    here = history_table("batch norm", History((1, 50, 100), (0.7, 0.4, 0.27), (0.5, 0.9, 0.94)))
    mine = Table(here.name, here.title, "step", ("1", "50", "100"), here.columns)
    stored = Table(
        here.name,
        here.title,
        "step",
        ("1", "50", "100"),
        {
            "train loss": np.array([0.7, 0.41, 0.27]),
            "test accuracy %": here.columns["test accuracy %"],
        },
    )
    return mine, stored


def test_a_history_point_that_moved_fails_on_the_reference_naming_run_step_and_quantity():
    mine, stored = batch_norm_history()
    verdict = compare_table(mine, stored, ON_REFERENCE)
    assert verdict.failed
    [d] = verdict.points
    assert d.describe() == "run 'batch norm', step 50, train loss: snapshot 0.41, here 0.4"


def test_a_history_that_moved_on_a_new_platform_is_drift_summarised_in_one_line():
    mine, stored = batch_norm_history()
    verdict = compare_table(mine, stored, ON_NEW)
    assert not verdict.failed and verdict.drift
    assert verdict.summary() == (
        "run 'batch norm': 1 of 6 points moved, the first at step 50, train loss: "
        "snapshot 0.41, here 0.4"
    )


def test_a_held_platforms_history_is_its_own():
    mine, stored = batch_norm_history()
    own = {name: list(values) for name, values in mine.columns.items()}
    held = Standing(HELD, "scalar", "ref", tables={mine.name: own})
    assert compare_table(mine, stored, held).points == []
    moved = {**own, "train loss": [0.7, 0.4, 0.28]}
    verdict = compare_table(
        mine, stored, Standing(HELD, "scalar", "ref", tables={mine.name: moved})
    )
    assert verdict.failed
    assert "this platform's evidence 0.28, here 0.27" in verdict.points[0].describe()


def test_a_table_with_other_rows_fails_on_every_platform():
    mine, stored = batch_norm_history()
    other_rows = Table(
        mine.name, mine.title, "step", ("1", "50"), {k: v[:2] for k, v in stored.columns.items()}
    )
    for standing in (ON_REFERENCE, ON_NEW):
        verdict = compare_table(mine, other_rows, standing)
        assert verdict.failed
        assert "the snapshot has 2 rows (step 1 to 50), here 3 (1 to 100)" in verdict.shape


def test_an_unknown_standing_is_refused_naming_the_valid_ones():
    with pytest.raises(ValueError, match="unknown standing 'laptop': one of reference, held, new"):
        Standing("laptop", "x", "y")


@pytest.mark.parametrize(
    ("name", "slugged"),
    [
        ("depth 8 plain, lr = 0.5", "depth-8-plain-lr-0.5"),
        ("Xavier init", "Xavier-init"),
        ("test_fix[batch norm]", "test_fix-batch-norm"),
    ],
)
def test_file_names_are_slugs_of_what_they_store(name, slugged):
    assert slug(name) == slugged


def test_what_moved_is_every_reading_printed_otherwise_than_its_snapshot_whatever_the_platform():
    """What a reader of the log would see change: 0.0053 -> 0.0079 moved; a difference below
    the printed precision did not; a reading with no snapshot yet is no move."""
    here = [reading(0.00789), reading(3015.3, TIMES, "S4 plain ratio"), reading(0.5, key="S6 x")]
    stored = {BN_LOSS: 0.0053, RATIO_NAME: 3015.2}
    [moved] = moved_readings(here, stored, {**LINES, "S6 x": 67}, fragile_loss())
    assert moved.describe() == f"line 66, {BN_LOSS}: 0.0053 -> 0.0079 (fragile)"
    assert Moved.from_json(moved.to_json()) == moved


def seed_unstable_ratio():
    """The headline ratio as the evidence holds it: printed 3015 by every platform, while
    other starting weights carry it across its claim's bound (a question of generality)."""
    entry = {
        "line": 40,
        "kind": "ratio",
        "label": "times smaller",
        "spec": ".0f",
        "position": 1,
        "reference": {"value": 3015.3, "printed": "3015", "holds": True},
        "platforms": {"amd/native": {"value": 3015.2, "printed": "3015", "holds": True}},
        "seeds": {
            "init-seed-1": {"value": 180.0, "printed": "180", "holds": False, "axis": "init"}
        },
        "bound": [">", 1000],
        "band": None,
    }
    return from_document({"readings": {RATIO_NAME: entry}, "reference": "ref/workshop"})


def test_on_a_new_platform_a_reading_every_known_platform_prints_alike_drifts_all_the_same():
    """Issue 49: a platform whose fingerprint the evidence does not hold is known to compute
    otherwise, so any reading may move there; with fresh evidence (the keys say nothing was
    edited) the move is drift, and the claim's sentence decides. Seeds never enter a verdict
    (issue 30): the ratio, robust over platforms and broken by other starting weights, is
    judged the same whatever they do."""
    evidence = seed_unstable_ratio()
    assert not evidence.readings[RATIO_NAME].general
    here = reading(3016.7, TIMES, "S4 plain ratio")
    [d] = compare_readings([here], {RATIO_NAME: 3015.3}, LINES, evidence, ON_NEW)
    assert d.drift
    assert d.describe() == f"{RATIO_NAME}: snapshot 3015, here 3017 (log line 40, robust)"
    [d] = compare_readings([here], {RATIO_NAME: 3015.3}, LINES, evidence, ON_REFERENCE)
    assert not d.drift


def test_on_a_new_platform_a_reading_some_platform_prints_otherwise_is_drift():
    [d] = compare_readings([reading(0.0081)], {BN_LOSS: 0.0079}, LINES, fragile_loss(), ON_NEW)
    assert d.drift and d.describe().endswith("(log line 66, fragile)")
