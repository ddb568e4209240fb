"""[S6] Training, plain vs batch norm: SGD, lr 0.5, batch 64, 4000 steps, identical starts."""

import dataclasses
import math

import pytest

from bnvg.experiment.data import points_inside_the_other_class
from bnvg.log import fill
from claimlog import about, at_most, below, exactly

LN2 = math.log(2)


@pytest.mark.runs("plain")
@pytest.mark.log_lines("S6 plain", "S6 chance")
def test_plain_net_never_reaches_90_percent_and_ends_near_ln_2(runs, workshop, quoted):
    """Workshop: "plain: final train loss = 0.6926, final test acc = 51.5%, first >=90%: never": after
    4000 steps the plain sigmoid net still scores the "learned nothing" loss, ln 2: 0.693 to
    three figures. "Never" as the log counts it: at none of the 81 points its history records
    (step 1, then every 50 steps) is its test accuracy 90% or more."""
    h = runs.get("plain").history
    quoted.lines(
        fill.run_summary("S6 plain", h),
        fill.chance(LN2),
        holds={
            "S6 plain, final test accuracy": below(90),
            "S6 plain, final train loss": about(round(LN2, 3)),
        },
    )
    assert (why := h.never_at_target(workshop.recorded_steps)) is None, why
    assert abs(h.final_acc - 0.5) < 0.05  # a coin flip


@pytest.mark.runs("batch norm")
@pytest.mark.log_lines("S6 batch norm")
def test_batch_norm_net_reaches_90_percent_by_step_100_and_ends_at_100_percent(runs, quoted):
    """Workshop: "with batch norm: final test acc = 100.0%, first >=90%: step 100"."""
    quoted.lines(
        fill.run_summary("S6 batch norm", runs.get("batch norm").history),
        holds={
            "first step at the target": at_most(100),
            "final test accuracy": exactly(100),
            "final train loss": below(0.05),
        },
    )


# How close to ln 2 "flat at ln 2" is: 0.005 is under 1% of the figure's loss axis (0 to
# about 0.75), a wiggle the eye reads as a flat line.
FLAT = 0.005


@pytest.mark.runs("plain", "batch norm")
@pytest.mark.log_lines("plot loss_curves.png")
def test_loss_curves_figure_is_drawn(runs, workshop, figure, quoted):
    """Figure: "Training loss: plain vs batch norm", the plain curve flat at ln 2 after its first
    point: from step 50 to the end every loss it plots is within 0.005 of ln 2, while its
    first point (step 1, one step from the starting weights) lies above that."""
    plain, batch_norm = runs.history("plain"), runs.history("batch norm")
    losses = dict(zip(plain.index, plain.columns["train loss"], strict=True))
    first, *later = losses
    away = {step: losses[step] for step in later if abs(losses[step] - LN2) >= FLAT}
    assert not away, f"the plain loss is not within {FLAT} of ln 2 = {LN2:.4f} at {away}"
    assert losses[first] >= LN2 + FLAT, f"the plain loss at step {first} is {losses[first]}"
    figure.draw("loss_curves.png", plain, batch_norm, workshop.steps)
    quoted.lines(fill.plot_saved("loss_curves.png"))


@pytest.mark.runs("plain", "batch norm")
@pytest.mark.log_lines("plot accuracy_curves.png")
def test_accuracy_curves_figure_is_drawn(runs, workshop, figure, quoted):
    """Figure: "Test accuracy: plain vs batch norm"."""
    plain, batch_norm = runs.history("plain"), runs.history("batch norm")
    figure.draw("accuracy_curves.png", plain, batch_norm, workshop.steps)
    quoted.lines(fill.plot_saved("accuracy_curves.png"))


def classes_of_test_points(run, data):
    """The class the trained net gives each test point (a logit above 0 is class 1), as the
    figure's p = 0.5 contour divides them; on a private copy of the net, in eval mode."""
    from bnvg.experiment.runtime import torch

    with torch.no_grad():
        return tuple(int(c) for c in (run.network()(data.X_test) > 0).flatten().tolist())


@pytest.mark.runs("plain", "batch norm")
@pytest.mark.log_lines("plot decision_boundaries.png")
def test_decision_boundaries_figure_is_drawn(runs, data, computed, figure, quoted):
    """Figure: "What each trained network actually learned": the plain net's boundary misses
    the moons, batch norm's bends between them. Asserted on the test points the figure
    plots: the plain net puts every one of them on the same side of its boundary (it calls
    them all one class), and batch norm's puts every one on its own moon's side (100% test
    accuracy), which no straight line can do (test points of each moon lie inside the convex
    hull of the other's). The nets are checked through their training histories, which
    every weight of theirs shapes."""
    plain, batch_norm = runs.get("plain"), runs.get("batch norm")
    # Kept in pytest's cache like every computed result, so a warm session needs no torch.
    sides = computed.get(
        "S6 plain net, class of each test point", lambda: classes_of_test_points(plain, data)
    )
    assert len(set(sides)) == 1, f"the plain net calls {sum(sides)} of {len(sides)} points class 1"
    assert batch_norm.history.final_acc == 1.0, (
        f"batch norm: {batch_norm.history.final_acc:.1%} test accuracy"
    )
    test_points = dataclasses.replace(
        data, X=data.X[data.n_train :], y=data.y[data.n_train :], n_train=0
    )
    inside = points_inside_the_other_class(test_points)
    assert sum(inside) > 0, "a straight line separates the test points of the two moons"
    panels = [
        (title, run, run.history.final_acc)
        for title, run in (("plain", plain), ("batch norm", batch_norm))
    ]
    figure.draw("decision_boundaries.png", panels, data)
    quoted.lines(fill.plot_saved("decision_boundaries.png"))
