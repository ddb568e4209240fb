"""Numbers in log lines: tokens, labels, bands, drift and the sweep's table."""

import pytest

from bnvg.fragility import EMPTY, Band, Fragility, build_table, label_of, skeleton, tokens
from bnvg.numbers import Difference, accept_drift, compare, parse_amber_dict

LINE = "  with batch norm              final train loss = 0.0079, final test acc = 100.0%, first >=90%: step 100"


def test_tokens_are_the_numbers_as_printed():
    assert tokens(LINE) == ["0.0079", "100.0", "90", "100"]
    assert tokens("ratio: 3.32e-04  (3015x smaller), z = -0.0000, +0.880797") == [
        "3.32e-04",
        "3015",
        "-0.0000",
        "+0.880797",
    ]


def test_a_skeleton_ignores_numbers_but_not_words():
    assert skeleton(LINE) == skeleton(LINE.replace("0.0079", "0.0053"))
    assert skeleton(LINE) != skeleton(LINE.replace("final test acc", "final acc"))


def test_a_number_is_named_by_the_words_before_it():
    assert label_of(LINE, 0).endswith("final train loss")
    assert label_of(LINE, 1) == "final test acc"
    assert label_of("        1     6.63e-05", 1) == "number 2"


def table(band=(0.0031, 0.0101)):
    return Fragility(
        lines={
            "S6 batch norm": {
                "tokens": [
                    {
                        "fragile": True,
                        "band": list(band),
                        "rounding": {"a": "0.0079", "b": "0.0052"},
                    },
                    {"fragile": False},
                    {"fragile": False},
                    {"fragile": False},
                ]
            }
        }
    )


def test_a_fragile_number_inside_its_band_is_drift():
    stored, here = {"S6 batch norm": LINE.replace("0.0079", "0.0053")}, {"S6 batch norm": LINE}
    [d] = compare(stored, here, {"S6 batch norm": 66}, table())
    assert (d.stored, d.here, d.is_drift) == ("0.0053", "0.0079", True)
    assert "band 0.0031 to 0.0101, platform-dependent" in d.describe()
    assert accept_drift(here, [d]) == stored  # what the snapshot must match


def test_a_fragile_number_outside_its_band_fails():
    stored, here = {"S6 batch norm": LINE.replace("0.0079", "0.0500")}, {"S6 batch norm": LINE}
    [d] = compare(stored, here, {"S6 batch norm": 66}, table(band=(0.04, 0.06)))
    assert not d.is_drift


def test_a_robust_number_that_moved_fails_and_says_so():
    stored, here = {"S6 batch norm": LINE.replace("step 100", "step 150")}, {"S6 batch norm": LINE}
    [d] = compare(stored, here, {"S6 batch norm": 66}, table())
    assert not d.is_drift
    assert (
        d.describe() == "S6 batch norm, step: snapshot 150, here 100 (log line 66, a robust number)"
    )


def test_changed_wording_is_a_difference_of_the_whole_line():
    [d] = compare({"k": "a = 1"}, {"k": "b = 1"}, {"k": 5}, EMPTY)
    assert d.index is None and not d.is_drift


def test_stored_amber_dicts_are_read_back():
    assert parse_amber_dict("dict({\n  'S1 split': '  split: 800 train / 200 test',\n})") == {
        "S1 split": "  split: 800 train / 200 test"
    }
    assert parse_amber_dict("list([])") is None


def test_a_band_is_the_seen_range_widened_by_half_its_width():
    rounding = {"ref": ["x = 0.0079"], "scalar": ["x = 0.0115"], "two": ["x = 0.0079"]}
    t = build_table({"k": 1}, "ref", rounding, {"s1": ["x = 0.5"]}, published=["x = 0.0053"])
    token = t["k"]["tokens"][0]
    assert token["fragile"]
    assert token["band"] == pytest.approx([0.0053 - 0.0031, 0.0115 + 0.0031])
    assert token["seed_range"] == [0.5, 0.5]


def test_a_number_that_never_moved_is_robust_whatever_the_seeds_do():
    rounding = {"ref": ["x = 7"], "other": ["x = 7"]}
    t = build_table({"k": 1}, "ref", rounding, {"s1": ["x = 9"]}, published=["x = 7"])
    assert not t["k"]["tokens"][0]["fragile"]


def test_a_line_a_variant_could_not_verify_is_recorded_as_failed():
    rounding = {"ref": ["x = 7"], "other": ["  [not verified: k -- t failed]"]}
    t = build_table({"k": 1}, "ref", rounding, {})
    assert "other" in t["k"]["failed"]


def test_band_membership():
    assert 71.5 in Band(65.0, 75.0, ())
    assert 80.0 not in Band(65.0, 75.0, ())
    assert isinstance(Difference("k", 1, "x", "1", "2"), Difference)


def test_a_damaged_sweep_table_is_named_with_how_to_rebuild_it(tmp_path):
    from bnvg.fragility import load

    (tmp_path / "fragility.json").write_text("{not json")
    with pytest.raises(
        ValueError, match=r"fragility.json is damaged .*regenerate it with the sweep"
    ):
        load(tmp_path)
    assert load(tmp_path / "nowhere") is EMPTY  # no table yet: every number is robust
