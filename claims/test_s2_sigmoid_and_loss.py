"""[S2] The two functions everything hinges on: the sigmoid and the binary cross-entropy loss."""

import math

import pytest

from bnvg import logformat as fmt
from bnvg.sigmoid_facts import bce_at_half, bce_logit_gradient, slope_at, slope_curve

AUTOGRAD_LINES = [f"S2 autograd {i}" for i in range(1, 5)]


@pytest.mark.log_lines("S2 max slope")
def test_sigmoid_slope_is_at_most_0_25_reached_at_z_0(quoted):
    """Workshop: "max sigmoid slope = 0.250000 at z = -0.0000": every sigmoid layer passes back at most
    a quarter of the gradient it receives."""
    curve = slope_curve()
    grid_step = 16 / 2000
    assert curve.max_slope == pytest.approx(0.25, abs=1e-6)
    assert abs(curve.argmax_z) < grid_step
    quoted.lines({"S2 max slope": fmt.max_slope(curve)})


@pytest.mark.log_lines("S2 slope at 4")
def test_sigmoid_slope_at_plus_minus_4_is_0_0177(quoted):
    """Workshop: "slope at z = +/-4 = 0.017663": saturated units pass back almost nothing."""
    slope = slope_at(4.0)
    assert round(slope, 4) == 0.0177
    assert slope_at(-4.0) == pytest.approx(slope, rel=1e-5)  # symmetric, up to float32
    quoted.lines({"S2 slope at 4": fmt.slope_at_4(slope)})


@pytest.mark.log_lines("S2 BCE at p = 0.5")
def test_bce_loss_at_p_one_half_is_ln_2(quoted):
    """Workshop: "BCE loss at p = 0.5 = 0.693147 (ln 2 = 0.693147)": the "learned nothing" score."""
    loss = bce_at_half()
    assert loss == pytest.approx(math.log(2), rel=1e-15)
    quoted.lines({"S2 BCE at p = 0.5": fmt.bce_at_half(loss, math.log(2))})


@pytest.mark.log_lines(*AUTOGRAD_LINES)
def test_autograd_gradient_of_bce_wrt_logit_is_p_minus_y(quoted):
    """Workshop: "autograd check at z = 2.0, y = 0: formula p - y = +0.880797, autograd dL/dz = +0.880797"."""
    g = bce_logit_gradient(z=2.0, y=0.0)
    assert g.autograd == pytest.approx(g.formula, abs=1e-6)
    assert g.p == pytest.approx(1 / (1 + math.exp(-2.0)), abs=1e-6)
    quoted.lines(dict(zip(AUTOGRAD_LINES, fmt.logit_gradient(g), strict=True)))


@pytest.mark.log_lines("plot sigmoid_and_deriv.png")
def test_sigmoid_and_slope_figure_is_drawn(figures, diagrams_dir, quoted, png):
    """Figure: "The sigmoid and its slope", the slope peaking at 0.25."""
    png(figures.sigmoid_and_deriv(slope_curve(), diagrams_dir))
    quoted.lines({"plot sigmoid_and_deriv.png": fmt.plot_saved("sigmoid_and_deriv.png")})


@pytest.mark.log_lines("plot bce_loss.png")
def test_bce_loss_figure_is_drawn(figures, diagrams_dir, quoted, png):
    """Figure: "Binary cross-entropy loss", with ln 2 marked at p = 0.5."""
    png(figures.bce_loss(diagrams_dir))
    quoted.lines({"plot bce_loss.png": fmt.plot_saved("bce_loss.png")})
