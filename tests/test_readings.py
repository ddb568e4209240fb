"""Readings: a named, typed number, printed as the log prints it, and a claim's bound on it."""

import math

import pytest

from bnvg.log.readings import (
    COUNT,
    FLAG,
    PERCENT,
    RATIO,
    SETTING,
    STEP,
    STEP_SPEC,
    Bound,
    Quantity,
    Reading,
    at_least,
    at_most,
    kind_named,
)

ACCURACY = Quantity("final test accuracy", PERCENT, ".1f")
FIRST = Quantity("first step at the target", STEP, STEP_SPEC)


def test_a_reading_is_named_by_its_line_and_its_label_and_prints_at_the_logs_precision():
    r = Reading("S9 train mode, batches of 2", Quantity("test accuracy", PERCENT, ".1f"), 69.4999)
    assert r.name == "S9 train mode, batches of 2, test accuracy"
    assert r.printed == "69.5"
    assert r.number == "69.5"


def test_a_step_prints_as_the_log_prints_it_and_never_is_a_reading_too():
    assert Reading("S6 batch norm", FIRST, 100).printed == "step 100"
    assert Reading("S6 batch norm", FIRST, 100).number == "100"
    never = Reading("S6 plain", FIRST, None)
    assert (never.printed, never.number) == ("never", None)
    assert math.isnan(never.as_float()) and never.value_from_float(math.nan) is None


@pytest.mark.parametrize(
    ("quantity", "value"),
    [
        (ACCURACY, 100.5),
        (ACCURACY, -1.0),
        (Quantity("n", COUNT), 2.5),
        (Quantity("r", RATIO), -0.1),
    ],
)
def test_a_value_outside_its_kinds_domain_is_refused_naming_the_reading(quantity, value):
    with pytest.raises(ValueError, match=r"S1 split, .* is not a"):
        Reading("S1 split", quantity, value)


def test_kinds_clip_bands_to_their_domain():
    assert PERCENT.clip(27.25, 124.25) == (27.25, 100)
    assert kind_named("loss").clip(-0.5, 2.0) == (0, 2.0)
    with pytest.raises(ValueError, match="unknown kind 'speed': valid kinds are 'count'"):
        kind_named("speed")


def test_a_bound_says_what_it_asserts_and_a_step_that_never_came_is_later_than_any():
    assert str(at_least(90)) == "at least 90" and at_least(90).holds(90.0)
    assert not at_most(100).holds(None)
    with pytest.raises(ValueError, match="unknown bound '=>'"):
        Bound("=>", 1)


@pytest.mark.parametrize(
    "reading",
    [
        Reading("S6 batch norm", FIRST, None, at_most(100)),
        Reading("S3 identical weights", Quantity("checksums equal", FLAG), True),
        Reading("versions", Quantity("seed", SETTING), 0),
        Reading("S8 layer norm", ACCURACY, 51.5, at_least(90), sometimes=True),
    ],
)
def test_a_reading_travels_as_json_unchanged(reading):
    assert Reading.from_json(reading.to_json()) == reading


def test_the_published_log_is_parsed_back_as_the_quantity_prints_it():
    assert FIRST.parse("step 1050") == 1050 and FIRST.parse("never") is None
    assert Quantity("seed", SETTING).parse("0") == 0
    assert Quantity("lr", SETTING).parse("5.0") == 5.0
    assert Quantity("same", FLAG).parse("True") is True
