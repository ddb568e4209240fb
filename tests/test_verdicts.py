"""Comparing computed readings and tables with stored ones: by name, drift told from failure."""

import math

import numpy as np
import pytest

from bnvg.evidence.compare import compare_readings, compare_table
from bnvg.evidence.fragility import EMPTY, from_document
from bnvg.evidence.tables import ROUNDING, Table, Tolerance, history_table, slug
from bnvg.log.readings import LOSS, PERCENT, RATIO, STEP, STEP_SPEC, Quantity, Reading

LOSS_Q = Quantity("final train loss", LOSS, ".4f")
TIMES = Quantity("times smaller", RATIO, ".0f")


def reading(value, quantity=LOSS_Q, key="S6 batch norm"):
    return Reading(key, quantity, value)


def table(band=(0.0028, 0.0124), moved=True):
    entry = {
        "line": 66,
        "kind": "loss",
        "label": "final train loss",
        "spec": ".4f",
        "position": 0,
        "reference": {"value": 0.0079, "printed": "0.0079"},
        "platforms": {"published": {"value": 0.0053, "printed": "0.0053" if moved else "0.0079"}},
        "seeds": {},
        "bound": None,
        "band": list(band),
    }
    return from_document({"readings": {"S6 batch norm, final train loss": entry}})


LINES = {"S6 batch norm": 66, "S4 plain ratio": 40}


def test_a_fragile_number_inside_its_band_that_prints_differently_is_drift():
    [d] = compare_readings(
        [reading(0.00789)], {"S6 batch norm, final train loss": 0.0053}, LINES, table()
    )
    assert d.drift
    assert d.describe() == (
        "S6 batch norm, final train loss: snapshot 0.0053, here 0.0079 "
        "(log line 66, fragile, band 0.0028 to 0.0124)"
    )


def test_strict_numbers_turns_drift_into_failure():
    [d] = compare_readings(
        [reading(0.00789)], {"S6 batch norm, final train loss": 0.0053}, LINES, table(), strict=True
    )
    assert not d.drift


def test_a_fragile_number_outside_its_band_fails():
    [d] = compare_readings(
        [reading(0.05)], {"S6 batch norm, final train loss": 0.0053}, LINES, table()
    )
    assert not d.drift


def test_a_robust_number_that_moved_fails_naming_it_with_both_values():
    here = reading(3015.3, TIMES, "S4 plain ratio")
    [d] = compare_readings([here], {"S4 plain ratio, times smaller": 3016.2}, LINES, EMPTY)
    assert not d.drift
    assert (
        d.describe()
        == "S4 plain ratio, times smaller: snapshot 3016, here 3015 (log line 40, robust)"
    )


def test_rounding_below_the_printed_precision_is_no_difference_unless_strict():
    here = reading(3015.3044087271446, TIMES, "S4 plain ratio")
    stored = {"S4 plain ratio, times smaller": 3015.3044087271446 * (1 + 2e-7)}
    assert compare_readings([here], stored, LINES, EMPTY) == []
    [d] = compare_readings([here], stored, LINES, EMPTY, strict=True)
    assert "(both print 3015)" in d.describe()


def test_a_full_precision_move_beyond_rounding_fails_even_when_it_prints_the_same():
    here = reading(3015.30, TIMES, "S4 plain ratio")
    [d] = compare_readings([here], {"S4 plain ratio, times smaller": 3015.40}, LINES, EMPTY)
    assert not d.drift


def test_never_equals_never():
    first = Quantity("first step at the target", STEP, STEP_SPEC)
    assert (
        compare_readings(
            [reading(None, first)],
            {"S6 batch norm, first step at the target": math.nan},
            LINES,
            EMPTY,
        )
        == []
    )


def test_a_history_point_that_moved_names_the_run_the_step_and_the_quantity():
    from bnvg.experiment.train import History

    here = history_table("batch norm", History((1, 50, 100), (0.7, 0.4, 0.27), (0.5, 0.9, 0.94)))
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
    mine = Table(here.name, here.title, "step", ("1", "50", "100"), here.columns)
    [d] = compare_table(mine, stored, EMPTY)
    assert d.describe() == (
        "run 'batch norm', step 50, train loss: snapshot 0.41, here 0.4 (tolerance 1e-06 relative)"
    )
    other_rows = Table(
        here.name, here.title, "step", ("1", "50"), {k: v[:2] for k, v in stored.columns.items()}
    )
    assert "the snapshot has 2 rows (step 1 to 50), here 3 (1 to 100)" in compare_table(
        mine, other_rows, EMPTY
    )


def test_a_table_point_may_move_as_far_as_the_sweep_saw_there_and_never_less_than_rounding():
    fragility = from_document(
        {"readings": {}, "tables": {"runs/plain": {"train loss": {"1": 0.01}}}}
    )
    assert fragility.tolerances("runs/plain", "train loss", 2) == [
        ROUNDING,
        Tolerance(atol=0.01, rtol=1e-6),
    ]
    assert fragility.tolerances("runs/plain", "test accuracy %", 2) == [ROUNDING, ROUNDING]
    assert Tolerance(atol=0.01).admits(0.705, 0.7) and not Tolerance(atol=0.001).admits(0.705, 0.7)
    assert Tolerance().admits(math.nan, math.nan) and not Tolerance(atol=1).admits(math.nan, 0.0)


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


def test_a_percent_reading_compares_in_percent():
    acc = Quantity("test accuracy", PERCENT, ".1f")
    [d] = compare_readings(
        [reading(69.5, acc, "S4 plain ratio")],
        {"S4 plain ratio, test accuracy": 71.5},
        LINES,
        EMPTY,
    )
    assert "snapshot 71.5, here 69.5" in d.describe()
