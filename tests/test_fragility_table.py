"""The committed sweep table: one row per reading, by name, about the numbers committed here."""

import csv
import json
from pathlib import Path

import pytest

from bnvg.log.layout import log as bnvg_log
from claimlog.evidence.fragility import load
from claimlog.places import Places

LOG = bnvg_log()  # the workshop's log, as claimlog reads it

PLACES = Places(Path(__file__).resolve().parent.parent)
TABLE = load(PLACES.fragility_json)


def committed_readings():
    """Every reading the committed numbers snapshots hold, by name."""
    values = {}
    for path in (PLACES.numbers / "claims").rglob("*.csv"):
        with path.open(newline="") as f:
            values.update({row["reading"]: row["value"] for row in csv.DictReader(f)})
    return values


def test_every_reading_the_claims_quote_has_a_row_named_by_its_line_and_label():
    assert TABLE.readings, (
        "snapshots/evidence/fragility.json is missing: run `python -m bnvg.sweep`"
    )
    claimed = {
        f"{line.key}, {q.label}"
        for line in LOG.lines
        if line.claimed
        for _, q in line.template.quantities()
        if line.key != "versions"  # the header names the platform: not a snapshot
    }
    assert set(TABLE.readings) == claimed
    # No positional label ("number 7"), and a name's digit (x1, layer-2, L1) is no reading.
    assert not any(e.label.startswith("number ") for e in TABLE.readings.values())
    assert not any(name.endswith((", x", ", layer", ", L")) for name in TABLE.readings)


def test_the_table_describes_the_numbers_committed_here():
    stored = committed_readings()
    for name, evidence in TABLE.readings.items():
        here = evidence.reference.value
        assert float(stored[name] or "nan") == (float("nan") if here is None else float(here)) or (
            here is None and stored[name] == ""
        ), name


def test_a_reading_is_fragile_exactly_when_some_platform_printed_it_differently():
    for name, e in TABLE.readings.items():
        moved = {s.printed for s in e.platforms.values()} != {e.reference.printed}
        assert e.moved_in_print == moved, name
        assert (e.band is not None) >= moved, name
        if e.band is not None:  # the platforms' range, widened; the published log not in it
            lo, hi = e.band
            assert all(
                lo <= float(s.value) <= hi for s in e.platforms.values() if s.value is not None
            )


def test_every_number_the_published_log_prints_differently_is_shown_beside_it():
    published = LOG.read_published(PLACES.published_log)
    differ = {
        name
        for name, r in published.items()
        if name in TABLE.readings and r.printed != TABLE.readings[name].reference.printed
    }
    assert {TABLE.readings[n].line for n in differ} == {66, 74, 84, 96, 103, 104, 105}
    for name in differ:
        e = TABLE.readings[name]
        assert e.published is not None and e.published.printed == published[name].printed
        assert "published" not in e.platforms  # an observation, never a platform


def test_every_reading_counts_every_seed_of_the_sweep_its_failures_included():
    """No survivorship: a run whose claim failed still recorded its readings."""
    sweep = {axis: len(TABLE.on_axis(axis)) for axis in ("sampler", "init")}
    assert sweep == {"sampler": 32, "init": 32}
    for name, e in TABLE.readings.items():
        for axis, n in sweep.items():
            assert sum(s.axis == axis for s in e.seeds.values()) == n, (name, axis)
    plain = TABLE.readings["S6 plain, final test accuracy"]
    assert plain.holds_in("seeds")[1] == 65  # 64 seeds and the workshop's own
    assert plain.holds_in("seeds")[0] < 65  # some starting weights do reach 90%


# Claims whose statement is their bounds, all of them: each run's outcome is the conjunction
# of its readings' bounds, so the per-claim and per-reading counts are one count.
WHOLE_STATEMENT = {
    "claims/test_s4_at_init.py::test_plain_net_first_layer_gradient_is_3000x_smaller_than_output": [
        "S4 plain ratio, times smaller",
        "S4 plain ratio, gradient ratio",
    ],
    "claims/test_s4_at_init.py::test_plain_backward_signal_shrinks_about_10x_per_layer": [
        f"S4 plain shrink, ||dL/dh_{k}|| / ||dL/dh_{k + 1}||" for k in (1, 2, 3)
    ],
}


@pytest.mark.parametrize("claim", sorted(WHOLE_STATEMENT))
def test_where_its_bounds_are_a_claims_whole_statement_both_tables_count_alike(claim):
    robustness = json.loads(PLACES.robustness_json.read_text())["claims"][claim]
    readings = [TABLE.readings[name] for name in WHOLE_STATEMENT[claim]]
    for axis in ("sampler", "init"):
        held = [all(e.reference.holds for e in readings)] + [
            all(e.seeds[v].holds for e in readings) for v in TABLE.on_axis(axis)
        ]
        assert (sum(held), len(held)) == (robustness[axis]["holds"], robustness[axis]["of"]), axis


def test_layer_norms_final_accuracy_is_luck_and_the_eval_bugs_is_stable_drift():
    layer_norm = TABLE.readings["S8 layer norm, final test accuracy"]
    assert layer_norm.platform_verdict == "fragile" and layer_norm.holds_on_some_platforms_only
    assert not layer_norm.general  # and, apart, other seeds break its bar too
    eval_bug = TABLE.readings["S9 train mode, batches of 2, test accuracy"]
    assert eval_bug.platform_verdict == "fragile" and not eval_bug.holds_on_some_platforms_only
