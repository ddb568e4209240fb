"""The workshop's results.log: the wording of each line, and the layout (filled by `fill`)."""

from __future__ import annotations

from functools import cache

from claimlog import Kind, Line, Log, Quantity, Template
from dropout.experiment import RECIPE

_PERCENT = Kind.PERCENT
_FIT = Template(
    "  train acc = {train}%, test acc = {test}%, train - test = {gap}",
    {
        "train": Quantity("training accuracy", _PERCENT, ".1f"),
        "test": Quantity("test accuracy", _PERCENT, ".1f"),
        "gap": Quantity("train - test", Kind.REAL, "+.1f"),
    },
)
DATA = Template(
    "data: {n_train} training points ({flipped}% of their labels flipped), {n_test} test points",
    {
        "n_train": Quantity("training points", Kind.SETTING),
        "flipped": Quantity("labels flipped", Kind.SETTING, ".0f"),
        "n_test": Quantity("test points", Kind.SETTING),
    },
)
NET = Template(
    "net: 2 -> {width} -> {width2} -> 1, ReLU; {steps} full-batch Adam steps, lr {lr}",
    {
        "width": Quantity("hidden units", Kind.SETTING),
        "width2": Quantity("hidden units", Kind.SETTING),
        "steps": Quantity("steps", Kind.SETTING),
        "lr": Quantity("learning rate", Kind.SETTING),
    },
)
WITH_DROPOUT = Template(
    "[2] with dropout, p = {p}", {"p": Quantity("dropout probability", Kind.SETTING)}
)


@cache
def log() -> Log:
    """Every line of results.log, in order: what this workshop declares (`dropout.workshop`)."""
    r = RECIPE
    return Log(
        (
            Line.words("Dropout against overfitting -- experiment log"),
            Line.versions(seed=r.seed),
            Line.fixed(
                DATA,
                "data",
                "document",
                n_train=r.n_train,
                flipped=r.flipped * 100,
                n_test=r.n_test,
            ),
            Line.fixed(
                NET, "net", "document", width=r.width, width2=r.width, steps=r.steps, lr=r.lr
            ),
            Line.words(""),
            Line.words("[1] without dropout", "section"),
            Line.by_claim(_FIT, "without dropout"),
            Line.words(""),
            Line.fixed(WITH_DROPOUT, "with dropout", "section", p=r.dropout),
            Line.by_claim(_FIT, "with dropout, fit"),
            Line.plot("accuracies.png"),
        ),
        home="dropout.log.log()",
    )
