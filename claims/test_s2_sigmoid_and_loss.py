"""[S2] The two functions everything hinges on: the sigmoid and the binary cross-entropy loss."""

import math

import pytest

from bnvg.figures import series
from bnvg.log import fill
from bnvg.log.readings import below

AUTOGRAD_LINES = ["S2 autograd check", "S2 autograd p", "S2 autograd formula", "S2 autograd dL/dz"]


@pytest.mark.log_lines("S2 max slope")
def test_sigmoid_slope_is_at_most_0_25_reached_at_z_0(sigmoid, quoted):
    """Workshop: "max sigmoid slope = 0.250000 at z = -0.0000": every sigmoid layer passes back at most
    a quarter of the gradient it receives."""
    grid_step = 16 / 2000
    quoted.lines(fill.max_slope(sigmoid.max_slope, sigmoid.argmax_z))
    assert sigmoid.max_slope == pytest.approx(0.25, abs=1e-6)
    assert abs(sigmoid.argmax_z) < grid_step


@pytest.mark.log_lines("S2 saturated slope")
def test_sigmoid_slope_at_plus_minus_4_is_0_0177(sigmoid, quoted):
    """Workshop: "slope at z = +/-4 = 0.017663": saturated units pass back almost nothing."""
    slope = sigmoid.saturated_slope
    quoted.lines(fill.saturated_slope(slope), holds={"slope": below(0.02)})
    assert round(slope, 4) == 0.0177
    assert sigmoid.saturated_slope_negative == pytest.approx(slope, rel=1e-5)  # up to float32


@pytest.mark.log_lines("S2 BCE at p = 0.5")
def test_bce_loss_at_p_one_half_is_ln_2(sigmoid, quoted):
    """Workshop: "BCE loss at p = 0.5 = 0.693147 (ln 2 = 0.693147)": the "learned nothing" score."""
    loss = sigmoid.bce_at_half
    quoted.lines(fill.bce_at_half(loss, math.log(2)))
    assert loss == pytest.approx(math.log(2), rel=1e-15)


@pytest.mark.log_lines(*AUTOGRAD_LINES)
def test_autograd_gradient_of_bce_wrt_logit_is_p_minus_y(sigmoid, quoted):
    """Workshop: "autograd check at z = 2.0, y = 0: formula p - y = +0.880797, autograd dL/dz = +0.880797"."""
    g = sigmoid.gradient
    quoted.lines(fill.autograd_check(g))
    assert g.autograd == pytest.approx(g.formula, abs=1e-6)
    assert g.p == pytest.approx(1 / (1 + math.exp(-g.z)), abs=1e-6)


@pytest.mark.log_lines("plot sigmoid_and_deriv.png")
def test_sigmoid_and_slope_figure_is_drawn(figure, figure_table, quoted):
    """Figure: "The sigmoid and its slope", the slope peaking at 0.25."""
    curve = figure_table("sigmoid_and_deriv.png", series.sigmoid_and_slope_curve)
    figure.check(curve)
    figure.draw("sigmoid_and_deriv.png", curve)
    quoted.lines(fill.plot_saved("sigmoid_and_deriv.png"))


@pytest.mark.log_lines("plot bce_loss.png")
def test_bce_loss_figure_is_drawn(figure, figure_table, quoted):
    """Figure: "Binary cross-entropy loss", with ln 2 marked at p = 0.5."""
    losses = figure_table("bce_loss.png", series.bce_loss)
    figure.check(losses)
    figure.draw("bce_loss.png", losses)
    quoted.lines(fill.plot_saved("bce_loss.png"))
