"""From the results to filled lines of the log: the numbers each line prints.

Apart from the layout (`dropout.log`), which prints the recipe: a claim's evidence is keyed by
the code it reaches here (`quoting` in the declaration), and through the layout every claim
would read every constant of the recipe.
"""

from __future__ import annotations

from claimlog import LogLine
from dropout.experiment import Fit
from dropout.log import log


def fit_line(key: str, fit: Fit) -> LogLine:
    """A run's line: its accuracies in percent, as the log prints them."""
    train, test = fit.train_acc * 100, fit.test_acc * 100
    return log().line_named(key).fill(train=train, test=test, gap=train - test)
