"""Readings: a named, typed number, printed as the log prints it, and a claim's bound on it."""

import math
import re
from pathlib import Path

import pytest

from claimlog.log.readings import (
    COUNT,
    FLAG,
    PERCENT,
    RATIO,
    SETTING,
    STEP,
    STEP_SPEC,
    Bound,
    Kind,
    Quantity,
    Reading,
    about,
    at_least,
    at_most,
    kind_named,
    significant_figures,
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
        Reading("S4 plain ratio", Quantity("times smaller", RATIO, ".0f"), 3015.3, about(3000)),
    ],
)
def test_a_reading_travels_as_json_unchanged(reading):
    assert Reading.from_json(reading.to_json()) == reading


def test_the_published_log_is_parsed_back_as_the_quantity_prints_it():
    assert FIRST.parse("step 1050") == 1050 and FIRST.parse("never") is None
    assert Quantity("seed", SETTING).parse("0") == 0
    assert Quantity("lr", SETTING).parse("5.0") == 5.0
    assert Quantity("same", FLAG).parse("True") is True


# -- about: a number a sentence rounds, bounded by the sentence's rounding ------------------


@pytest.mark.parametrize(
    ("value", "holds"),
    [(2499.9, False), (2500, True), (3015.3, True), (3499.9, True), (3500, False), (None, False)],
)
def test_about_3000_is_what_rounds_to_3000_at_one_figure(value, holds):
    assert about(3000).holds(value) is holds


def test_about_counts_the_figures_the_threshold_is_written_with():
    figures = {x: significant_figures(x) for x in (3000, 0.25, 8, 0.1, 700, 3015, 1e-06)}
    assert figures == {3000: 1, 0.25: 2, 8: 1, 0.1: 1, 700: 1, 3015: 4, 1e-06: 1}
    # about(0.25): two figures, 0.245 to below 0.255; about(8): one, 7.5 to below 8.5.
    assert [about(0.25).holds(v) for v in (0.2449, 0.2451, 0.2549, 0.2551)] == [0, 1, 1, 0]
    assert [about(8).holds(v) for v in (7.4999, 7.5, 8.33, 8.4999, 8.5)] == [0, 1, 1, 1, 0]


def test_about_rounds_the_value_at_its_own_leading_figure():
    # "about 1000": 950 is 1000 to one figure, 949 is 900; 1499 is 1000, 1500 is 2000.
    assert [about(1000).holds(v) for v in (949, 950, 1499, 1500)] == [False, True, True, False]
    # "about 0.1 per layer": the plain net's backward shrink factors, 0.096 to 0.120.
    assert all(about(0.1).holds(f) for f in (0.095944707461311202, 0.10423566729916094, 0.1196))
    assert not about(0.1).holds(0.0949) and not about(0.1).holds(0.1501)
    assert about(-3000).holds(-2500) and not about(3000).holds(-3000)
    assert about(0).holds(0.0) and not about(0).holds(1e-300)


def test_about_says_what_it_asserts_fails_where_no_number_is_and_travels_as_a_pair():
    assert str(about(3000)) == "about 3000" and str(about(0.25)) == "about 0.25"
    assert not about(3000).holds(math.inf) and not about(3000).holds(math.nan)
    # The sweep's fragments store a bound as [op, threshold] and read it with Bound(*pair).
    assert Bound(*["~", 3000]) == about(3000) and Bound(*["<", 1.0]) == Bound("<", 1.0)
    with pytest.raises(ValueError, match="'about' needs a finite number"):
        about(math.inf)


def test_a_step_counts_from_0_as_a_pytorch_loop_does():

    assert Reading("loop", Quantity("first step", Kind.STEP, "step"), 0).printed == "step 0"


def test_a_value_outside_its_kind_names_the_reading_the_kind_and_the_value_at_the_callers_line():
    from claimlog.log.lines import Line, Template

    line = Line.by_claim(Template("n = {n}", {"n": Quantity("names", Kind.COUNT)}), "data")
    with pytest.raises(ValueError) as caught:
        line.fill(n=-3)
    said = str(caught.value)
    assert "'data, names' = -3 is not a count: Kind.COUNT admits whole numbers from 0 up" in said
    # pytest shows it where the author called fill, not inside claimlog.
    shown = [str(entry.path) for entry in caught.traceback.filter(caught)]
    assert str(Path(__file__)) in shown
    assert not [path for path in shown if "/claimlog/" in path], shown


def test_a_label_that_contradicts_its_kind_is_named():
    from claimlog.log.lines import Line, Log, Template

    wrong = Template("loss = {loss}", {"loss": Quantity("final loss", Kind.PERCENT, ".4f")})
    right = Template("loss = {loss}", {"loss": Quantity("final loss", Kind.LOSS, ".4f")})
    [doubt] = Log((Line.by_claim(wrong, "fit"),)).kind_doubts()
    assert doubt.startswith("log line 1 ('fit'): its label 'final loss' says 'loss'")
    assert "declared Kind.PERCENT: declare it Kind.LOSS" in doubt
    assert Log((Line.by_claim(right, "fit"),)).kind_doubts() == []


def test_the_kinds_are_documented_with_their_domains():
    """docs/engine.md lists every kind with the domain `Kind.domain` says."""
    from claimlog.log.readings import KINDS, declared_as

    page = (Path(__file__).resolve().parent.parent / "docs" / "engine.md").read_text()
    rows = re.findall(r"^\| `(Kind\.\w+)` \| ([^|]+) \|", page, re.M)
    assert dict(rows) == {declared_as(k): k.domain() for k in KINDS.values()}
