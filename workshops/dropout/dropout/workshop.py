"""The workshop as it declares itself to claimlog (named in ../pyproject.toml)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from claimlog import Declaration

PACKAGE = Path(__file__).resolve().parent


def _log() -> Any:
    from dropout.log import log

    return log()


def _recipe(seeds: Mapping[str, int | None]) -> Any:
    from dropout.experiment import RECIPE

    return RECIPE.with_seeds(seeds["init"])


DECLARATION = Declaration(
    name="dropout",
    log=_log,
    recipe=_recipe,
    plugins=("dropout.fixtures",),
    figures="dropout.figures",
    computing=(PACKAGE / "experiment.py",),
    quoting=(PACKAGE / "fill.py",),
    seeds={"init": ("set of starting weights", "starting weights", "sets of starting weights")},
)
