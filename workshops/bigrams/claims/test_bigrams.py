"""The claims of the workshop's text, each a named test: its name is the sentence it checks."""

import math
from importlib import metadata

import pytest
from bigrams.log import log

from claimlog import about, below, exactly

VOCABULARY = 27  # 26 letters and the mark


@pytest.mark.log_lines("versions")
def test_the_log_names_the_torch_and_numpy_that_computed_it(results_log, torch_platform):
    """The numbers depend on the torch that computed them, so the log's header names it."""
    results_log.versions(torch_platform["torch"], metadata.version("numpy"))


@pytest.mark.log_lines("names")
def test_the_dataset_holds_32033_names_of_2_to_15_characters(data, quoted):
    """Text: "32033 names, the shortest 2 characters long and the longest 15"."""
    lengths = [len(w) for w in data.names]
    quoted.lines(
        log()
        .line_named("names")
        .fill(names=len(data.names), shortest=min(lengths), longest=max(lengths)),
        holds={"names": exactly(32033), "shortest name": exactly(2), "longest name": exactly(15)},
    )


@pytest.mark.log_lines("bigrams", "most common")
def test_every_name_gives_one_bigram_more_than_its_length(data, counting, quoted):
    """Text: "a name of n characters gives n + 1 bigrams, 228146 in all; 627 of the 27 x 27
    possible pairs occur, and the most common is a name ending in n"."""
    assert len(data.xs) == sum(len(w) + 1 for w in data.names)
    quoted.lines(
        log().line_named("bigrams").fill(bigrams=len(data.xs), distinct=counting.distinct),
        log().line_named("most common").fill({"pair": counting.top}, times=counting.top_count),
        holds={"bigrams": exactly(228146), "distinct bigrams": below(VOCABULARY**2)},
    )
    assert counting.top == "n.", f"the most common bigram is {counting.top!r}"


@pytest.mark.log_lines("counted")
def test_counting_beats_a_uniform_guess(counting, quoted):
    """Text: "the counted model's average negative log likelihood is about 2.45, against
    ln 27 = 3.30 for a uniform guess over the 27 characters"."""
    quoted.lines(
        log().line_named("counted").fill(ll=counting.log_likelihood, nll=counting.average_nll),
        holds={"average negative log likelihood": about(2.45)},
    )
    assert counting.average_nll < math.log(VOCABULARY)


@pytest.mark.log_lines("learned")
def test_gradient_descent_learns_almost_what_counting_gives(learning, counting, quoted):
    """Text: "the net starts from a loss of about 3.8, worse than a uniform guess, and after
    100 steps is within 0.05 of the counted model"."""
    quoted.lines(
        log().line_named("learned").fill(first=learning.losses[0], last=learning.losses[-1]),
        holds={"loss before the first step": about(3.8)},
    )
    assert learning.losses[0] > math.log(VOCABULARY)
    assert learning.losses[-1] - counting.average_nll < 0.05
