"""[S6] Training, plain vs batch norm: SGD, lr 0.5, batch 64, 4000 steps, identical starts."""

import math

import pytest

from bnvg.log import fill
from bnvg.log.readings import at_most, below, exactly

LN2 = math.log(2)


@pytest.mark.runs("plain")
@pytest.mark.log_lines("S6 plain", "S6 chance")
def test_plain_net_never_reaches_90_percent_and_ends_near_ln_2(runs, quoted):
    """Workshop: "plain: final train loss = 0.6926, final test acc = 51.5%, first >=90%: never": after
    4000 steps the plain sigmoid net still scores the "learned nothing" loss, ln 2."""
    h = runs.get("plain").history
    quoted.lines(
        fill.run_summary("S6 plain", h),
        fill.chance(LN2),
        holds={"S6 plain, final test accuracy": below(90)},
    )
    assert h.best_acc < 0.90  # never: the maximum over the whole history
    assert h.final_loss == pytest.approx(LN2, abs=0.01)
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


@pytest.mark.runs("plain", "batch norm")
@pytest.mark.log_lines("plot loss_curves.png")
def test_loss_curves_figure_is_drawn(runs, workshop, figure, quoted):
    """Figure: "Training loss: plain vs batch norm", the plain curve flat at ln 2."""
    plain, bn = runs.history("plain"), runs.history("batch norm")
    figure.draw("loss_curves.png", plain, bn, workshop.steps)
    quoted.lines(fill.plot_saved("loss_curves.png"))


@pytest.mark.runs("plain", "batch norm")
@pytest.mark.log_lines("plot accuracy_curves.png")
def test_accuracy_curves_figure_is_drawn(runs, workshop, figure, quoted):
    """Figure: "Test accuracy: plain vs batch norm"."""
    plain, bn = runs.history("plain"), runs.history("batch norm")
    figure.draw("accuracy_curves.png", plain, bn, workshop.steps)
    quoted.lines(fill.plot_saved("accuracy_curves.png"))


@pytest.mark.runs("plain", "batch norm")
@pytest.mark.log_lines("plot decision_boundaries.png")
def test_decision_boundaries_figure_is_drawn(runs, data, figure, quoted):
    """Figure: "What each trained network actually learned": the plain net's boundary misses
    the moons, batch norm's bends between them. The nets are checked through their training
    histories, which every weight of theirs shapes."""
    panels = [
        (title, run, run.history.final_acc)
        for title, run in (("plain", runs.get("plain")), ("batch norm", runs.get("batch norm")))
    ]
    figure.draw("decision_boundaries.png", panels, data)
    quoted.lines(fill.plot_saved("decision_boundaries.png"))
