"""The workshop as it declares itself to claimlog (named in ../pyproject.toml)."""

from pathlib import Path

from claimlog import Declaration

PACKAGE = Path(__file__).resolve().parent


def _log():
    from bigrams.log import log

    return log()


def _recipe(seeds):
    from bigrams.experiment import recipe

    return recipe()


DECLARATION = Declaration(
    name="bigrams",
    log=_log,
    recipe=_recipe,
    plugins=("bigrams.fixtures",),
    computing=(PACKAGE / "experiment.py",),
    quoting=(PACKAGE / "log.py",),
    published="the notebook's stored outputs",
)
