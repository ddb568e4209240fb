"""This workshop, as it declares itself to claimlog (named in pyproject.toml's pytest options).

Everything claimlog needs to know of "Batch Norm vs Vanishing Gradients" is here: its log's
layout, the plugin with the fixtures its claims read, the networks it trains, the module
that draws its figures, the code its claims compute with (each claim's evidence is keyed by
what it reaches there), and the seeds the sweep varies. Nothing heavy is imported: a
declaration is read by every pytest session and every sweep job before anything is computed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from claimlog import Declaration, Together, Training

PACKAGE = Path(__file__).resolve().parent


def _log() -> Any:
    from bnvg.log.layout import log

    return log()


def _every_runs_spec() -> list[tuple[Path, str] | str]:
    """What every claim that reads trained runs depends on beyond the code claimlog slices
    for it (the workshop's `Training`, and the training and data it reaches): every run's
    spec, as its values print."""
    from bnvg.experiment.runs import RUNS

    return [f"{name}: {spec!r}" for name, spec in RUNS.items()]


def _recipe(seeds: Mapping[str, int | None]) -> Any:
    from bnvg.experiment.config import WORKSHOP

    return WORKSHOP.with_seeds(seeds["sampler"], seeds["init"])


def _training() -> Training:
    from bnvg.experiment.runs import TRAINING

    return TRAINING


def _together() -> Together:
    from bnvg.experiment.stacked import TOGETHER

    return TOGETHER


DECLARATION = Declaration(
    name="bnvg",
    log=_log,
    plugins=("bnvg.fixtures",),
    figures="bnvg.figures.draw",
    # Where its computations live: the experiment and what a figure plots; then how its
    # results become readings. Not the layout (`layout()` builds every line at once, and
    # through it every claim would read S2's CHECK_LOGIT) nor how a figure is drawn.
    computing=(PACKAGE / "experiment", PACKAGE / "figures" / "series.py"),
    quoting=(PACKAGE / "log" / "fill.py",),
    key_parts={"runs": _every_runs_spec},
    recipe=_recipe,
    seeds={
        "sampler": ("minibatch order", "minibatch orders", "minibatch orders"),
        "init": ("starting weights", "starting weights", "sets of starting weights"),
    },
    published="the published log (torch 2.12.1)",
    training=_training,
    together=_together,
    sweep_command="python -m bnvg.sweep",
)
