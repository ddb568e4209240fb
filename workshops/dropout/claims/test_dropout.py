"""Dropout against overfitting: the claims of the workshop's text, each a named test."""

import sys
from importlib import metadata

import pytest
from dropout.fill import fit_line

from claimlog import LogLine, Table, about, above, at_least, below

TRUE_LABELS = 80.0  # percent of the training labels left as they are (a fifth are flipped)


@pytest.mark.log_lines("versions")
def test_the_log_names_the_torch_and_numpy_that_computed_it(
    recipe, results_log, pytestconfig, torch_platform
):
    """The numbers depend on the torch that computed them, so the log's header names it."""
    torch = sys.modules.get("torch")
    if torch is not None:  # computed here, with the session's thread count
        assert torch.get_num_threads() == pytestconfig.getoption("--torch-threads")
    results_log.versions(torch_platform["torch"], metadata.version("numpy"))


@pytest.mark.log_lines("without dropout")
def test_without_dropout_the_net_learns_flipped_labels(fits, quoted):
    """Text: "without dropout the net scores 93.5% on its training labels, more than the four
    in five of them that are true: it has learned flipped labels ... and trails its training
    accuracy by 11.4": above 80%, and its test accuracy more than 5 points below it."""
    quoted.lines(
        fit_line("without dropout", fits["without dropout"]),
        holds={"training accuracy": above(TRUE_LABELS), "train - test": above(5)},
    )


@pytest.mark.log_lines("with dropout, fit")
def test_with_dropout_the_net_scores_about_the_share_of_true_labels(fits, quoted):
    """Text: "its training accuracy falls to 80.5%, about the share of labels that are true,
    while its test accuracy rises to 89.5%: train - test is now -9.0": 80% to the two figures
    the text gives it, and below its test accuracy."""
    quoted.lines(
        fit_line("with dropout, fit", fits["with dropout"]),
        holds={"training accuracy": about(TRUE_LABELS), "train - test": below(0)},
    )


def test_dropout_raises_the_test_accuracy_by_at_least_3_points(fits):
    """Text: "its test accuracy rises": by at least 3 points, from the same data and the same
    starting weights."""
    gain = (fits["with dropout"].test_acc - fits["without dropout"].test_acc) * 100
    assert at_least(3).holds(gain), f"dropout changes the test accuracy by {gain:+.1f} points"


@pytest.mark.log_lines("plot accuracies.png")
def test_accuracies_figure_is_drawn(fits, figure, quoted):
    """Figure: "Dropout trades training accuracy for test accuracy": in the plotted bars,
    the run with dropout is lower on training accuracy and higher on test accuracy."""
    runs = ("without dropout", "with dropout")
    table = Table.of_figure(
        "accuracies.png",
        "run",
        runs,
        {
            "training accuracy %": [fits[r].train_acc * 100 for r in runs],
            "test accuracy %": [fits[r].test_acc * 100 for r in runs],
        },
    )
    figure.check(table)
    train, test = table.columns["training accuracy %"], table.columns["test accuracy %"]
    assert train[1] < train[0] and test[1] > test[0], f"train {train}, test {test}"
    figure.draw("accuracies.png", table, TRUE_LABELS)
    quoted.lines(LogLine.plot("accuracies.png"))
