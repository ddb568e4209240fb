"""The committed sweep table: one row per reading, by name, about the numbers committed here."""

import csv
from pathlib import Path

from bnvg.evidence.fragility import load
from bnvg.log.layout import layout
from bnvg.log.published import read_published
from bnvg.places import Places

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
        for line in layout()
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
        if e.band is not None:
            lo, hi = e.band
            assert all(
                lo <= float(s.value) <= hi for s in e.platforms.values() if s.value is not None
            )


def test_every_number_the_published_log_prints_differently_is_fragile_or_luck():
    published = read_published(PLACES.published_log)
    differ = {
        name
        for name, r in published.items()
        if name in TABLE.readings and r.printed != TABLE.readings[name].reference.printed
    }
    assert {TABLE.readings[n].line for n in differ} == {66, 74, 84, 96, 103, 104, 105}
    assert all(TABLE.readings[n].status in ("fragile", "unstable") for n in differ)


def test_layer_norms_final_accuracy_is_luck_and_the_eval_bugs_is_stable_drift():
    layer_norm = TABLE.readings["S8 layer norm, final test accuracy"]
    assert layer_norm.status == "unstable"
    assert layer_norm.holds_in("sampler") == (16, 33) and layer_norm.holds_in("init") == (19, 33)
    eval_bug = TABLE.readings["S9 train mode, batches of 2, test accuracy"]
    assert eval_bug.status == "fragile" and eval_bug.in_band(71.5)
