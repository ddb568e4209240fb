"""The committed sweep table: complete where it must be, and fragile only where it moved."""

from pathlib import Path

import pytest

from bnvg.fragility import load, tokens
from bnvg.layout import key_at

ROOT = Path(__file__).resolve().parent.parent
PUBLISHED = ROOT.parent / "shared" / "seed" / "results.published.log"
TABLE = load(ROOT / "snapshots")


@pytest.mark.skipif(not PUBLISHED.exists(), reason="needs ../shared/seed/results.published.log")
def test_every_line_where_the_published_log_differs_from_this_machine_has_a_fragile_number():
    here = (ROOT / "captures" / "results.log").read_text().splitlines()
    published = PUBLISHED.read_text().splitlines()
    differing = [
        n
        for n, (a, b) in enumerate(zip(here, published, strict=True), start=1)
        if tokens(a) != tokens(b) and key_at(n) != "versions"
    ]
    assert differing == [66, 74, 84, 96, 103, 104, 105]
    assert {key_at(n) for n in differing} <= TABLE.fragile_keys()


def test_a_number_is_fragile_exactly_when_the_sweep_saw_it_move():
    assert TABLE.lines, "snapshots/fragility.json is missing: run `pytest sweep/`"
    for key, entry in TABLE.lines.items():
        for token in entry["tokens"]:
            seen = set(token["rounding"].values()) | set(token.get("published", []))
            assert token["fragile"] == (len(seen) > 1), (key, token["label"])
