"""Every quote an update leaves as written still holds.

Under `--snapshot-update --workshop DIR`, a quote that copies what its reading printed before
the update follows the reading, whatever words stand before it. A bound, a range or a rounding
is the author's number: it is left only while the new value bears it out, and where the new
value breaks it, it is listed apart as no longer true and its citation fails. It is never
among the quotes left on purpose.
"""

import re

import pytest

from claimlog.evidence.fragility import EMPTY
from claimlog.evidence.verdicts import Moved
from claimlog.log.lines import CitedLine
from claimlog.log.readings import (
    LOSS,
    PERCENT,
    STEP,
    STEP_SPEC,
    Quantity,
    Reading,
    at_least,
    at_most,
    below,
)
from claimlog.text.citations import bound_worded, find_citations
from claimlog.text.rewrites import Left, describe_rewrites, plan

S5 = "test_s5_geometric_decay"
ACCURACY = Quantity("final test accuracy", PERCENT, ".1f")
TRAIN_LOSS = Quantity("final train loss", LOSS, ".4f")
FIRST_AT_90 = Quantity("first step at the target", STEP, STEP_SPEC)


def moved(quantity, before, now, line=65):
    return Moved(Reading("S6 plain", quantity, now), before, line, "robust")


def planned(sentence, *now):
    """What an update plans for the one citation of `sentence`, its cited line verified."""
    [c] = find_citations("m.md", sentence)
    return plan(c, list(now), {65: CitedLine(65, "...")}, EMPTY)


# -- the words that make a number a bound, and which -----------------------------------------
@pytest.mark.parametrize(
    ("before", "bound"),
    [
        ("batch norm reaches ", at_least(90)),
        ("its accuracy stays under ", below(90)),
        ("it gets there by step ", at_most(90)),
        ("it ends at ", None),  # a value
    ],
)
def test_a_bound_word_says_which_way_the_bound_goes(before, bound):
    assert bound_worded(before, "90") == bound


# -- a copy follows its reading ---------------------------------------------------------------
def test_a_copied_quote_is_rewritten_even_where_a_bound_word_stands_before_it():
    """ "by step 100" copies the step the net first reached 90% at: it moves with it."""
    done = planned("Batch norm reaches 90% by step 100 (line 65).", moved(FIRST_AT_90, 100, 150))
    assert [r.describe() for r in done.rewrites] == [
        "m.md:1  100 -> 150 (log line 65, S6 plain, first step at the target)"
    ]
    assert done.citation.quoted == ("90", "150") and done.left == []


# -- a bound holds, or is no longer true ------------------------------------------------------
def test_a_bound_the_new_value_still_holds_is_left_judged_against_the_reading_it_bounded():
    """ "under 0.05" bounded the loss (0.0079), not the accuracy beside it (51.5)."""
    done = planned(
        "The plain net ends at 51.5% and its loss falls under 0.05 (line 65).",
        moved(ACCURACY, 51.5, 48.5),
        moved(TRAIN_LOSS, 0.0079, 0.0194),
    )
    assert [r.describe() for r in done.rewrites] == [
        "m.md:1  51.5 -> 48.5 (log line 65, S6 plain, final test accuracy)"
    ]
    assert [one.describe() for one in done.left] == [
        "m.md:1  0.05 (log line 65): left, a bound the sentence words as one, not a copy of "
        "the value (now 0.0194)"
    ]
    assert done.problems == [] and done.citation.quoted == ("48.5", "0.05")


def test_a_bound_the_new_value_breaks_is_no_longer_true_and_never_left_on_purpose():
    done = planned("Its loss falls under 0.05 (line 65).", moved(TRAIN_LOSS, 0.0079, 0.07))
    assert done.rewrites == []
    [broken] = done.left
    assert broken.broken and broken.describe() == (
        "m.md:1  0.05 (log line 65): no longer true, the new value is 0.0700: reword it"
    )
    assert done.problems == [
        "quotes 0.05 (log line 65): no longer true, the new value is 0.0700: reword it"
    ]
    assert done.citation.quoted == ()  # judged by the plan: it fails once, saying why
    # Said with what failed (its citation), never with what the update writes or leaves.
    assert describe_rewrites([], done.left, written=True) == []


def test_a_range_that_no_longer_covers_the_new_value_is_no_longer_true():
    done = planned(
        "Its loss ends between 0.69 and 0.71 (line 65).", moved(TRAIN_LOSS, 0.6926, 0.7213)
    )
    assert done.rewrites == [] and done.citation.quoted == ()
    assert [one.describe() for one in done.left] == [
        "m.md:1  between 0.69 and 0.71 (log line 65): no longer true, the new value is "
        "0.7213: reword it"
    ]


# -- a rounding holds, or is no longer true ---------------------------------------------------
@pytest.mark.parametrize(
    ("now", "said", "broken"),
    [
        (
            0.6929,
            "left, a rounding of the value, not a copy, that the new value still rounds to "
            "(0.6929)",
            False,
        ),
        (0.7013, "no longer true, the new value is 0.7013: reword it", True),
    ],
)
def test_a_rounded_quote_is_left_while_the_new_value_still_rounds_to_it(now, said, broken):
    """ "0.69" of 0.6926 is the author's rounding: never rewritten to "0.70"."""
    done = planned("Its loss ends near 0.69 (line 65).", moved(TRAIN_LOSS, 0.6926, now))
    assert done.rewrites == []
    assert [(one.describe(), one.broken) for one in done.left] == [
        (f"m.md:1  0.69 (log line 65): {said}", broken)
    ]
    assert bool(done.problems) is broken


def test_the_summary_lists_the_quotes_left_on_purpose_and_not_those_no_longer_true():
    kept = Left("m.md", None, 3, "0.05", 66, "a bound ... (now 0.0194)")
    broken = [
        Left("m.md", None, n, "0.69", 65, "no longer true, ...: reword it", broken=True)
        for n in (5, 7)
    ]
    assert [Left.from_json(one.to_json()) for one in [kept, *broken]] == [kept, *broken]
    # Those no longer true fail their citations: the update says them with what failed.
    assert describe_rewrites([], [broken[0], kept, broken[1]], written=True) == [
        "left 1 quote as written, on purpose:",
        "  m.md:3  0.05 (log line 66): left, a bound ... (now 0.0194)",
    ]


# -- in a session ---------------------------------------------------------------------------
RIGHT = "A factor of 0.9 leaves 6.56e-01 after 4 layers (line 58)."
# True of the snapshot's 7.25e-02 (`an_old_value`), false of the 6.25e-02 the update records.
A_BOUND = "A factor of 0.5 leaves more than 7.0e-02 after 4 layers (line 59)."


def test_an_update_fails_the_citation_of_a_bound_it_breaks_and_lists_it_as_no_longer_true(
    s5_project, run_with_text
):
    numbers = (
        s5_project.path
        / "snapshots/numbers/claims"
        / S5
        / "test_factor_per_layer_compounds_over_4_and_10_layers-0.5.csv"
    )
    numbers.write_text(numbers.read_text().replace(",0.0625", ",0.0725"))
    text = s5_project.path / "snapshots/text" / f"{S5}.ambr"
    text.write_text(text.read_text().replace("-> 6.25e-02", "-> 7.25e-02"))
    (s5_project.path / "text").mkdir()
    document = s5_project.path / "text" / "module.md"
    document.write_text(f"# S5\n\n{RIGHT}\n\n{A_BOUND}\n")
    before = document.read_text()
    update = run_with_text(s5_project, "--snapshot-update")
    update.assert_outcomes(passed=7, failed=1)  # 6 claims and the right citation
    said = "7.0e-02 (log line 59): no longer true, the new value is 6.25e-02: reword it"
    update.stdout.fnmatch_lines(
        [
            "*- the update did not complete -*",
            "nothing of it was written*",
            "1 of what it judged failed*",
            f"  text/module.md:5: quotes {said}",
            "FAILED text/module.md::line 5*",
        ]
    )
    out = update.stdout.str()
    assert not re.search(r"left \d+ quotes? as written, on purpose", out)
    assert "7.0e-02 (log line 59): left" not in out
    assert document.read_text() == before  # the author rewords it: nothing is rewritten
    # All or nothing: a citation that fails an update keeps the numbers it would record out.
    assert ",0.0725" in numbers.read_text()
