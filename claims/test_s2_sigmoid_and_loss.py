"""[S2] The two functions everything hinges on: the sigmoid and the binary cross-entropy loss."""

import math

import numpy as np
import pytest

from bnvg.figures import series
from bnvg.log import fill
from claimlog import about, at_most

AUTOGRAD_LINES = ["S2 autograd check", "S2 autograd p", "S2 autograd formula", "S2 autograd dL/dz"]


@pytest.mark.log_lines("S2 max slope")
def test_sigmoid_slope_is_at_most_0_25_reached_at_z_0(sigmoid, quoted):
    """Workshop: "max sigmoid slope = 0.250000 at z = -0.0000": every sigmoid layer passes back at most
    a quarter of the gradient it receives. Asserted on the grid of z from -8 to 8: no slope
    is above 0.25, and the largest is 0.25 to the six decimals the line prints, at a z that
    is 0 to the line's four."""
    slope, z = sigmoid.max_slope, sigmoid.argmax_z
    quoted.lines(fill.max_slope(slope, z), holds={"max slope": at_most(0.25)})
    # "Reached": at the precision the line prints it (a float32 grid point, not z = 0 itself).
    assert round(slope, 6) == 0.25, f"the largest slope is {slope!r}, not 0.250000"
    assert round(z, 4) == 0, f"the slope peaks at z = {z!r}, not at 0.0000"


@pytest.mark.log_lines("S2 saturated slope")
def test_sigmoid_slope_at_plus_minus_4_is_0_0177(sigmoid, quoted):
    """Workshop: "slope at z = +/-4 = 0.017663": saturated units pass back almost nothing,
    about 0.0177, at z = -4 as at z = +4."""
    slope, negative = sigmoid.saturated_slope, sigmoid.saturated_slope_negative
    quoted.lines(fill.saturated_slope(slope), holds={"slope": about(0.0177)})
    # "+/-": the line prints one number for both sides, so both must print as it does (in
    # float32 the two differ in the eighth decimal).
    assert f"{negative:.6f}" == f"{slope:.6f}", f"slope at -4 = {negative!r}, at +4 = {slope!r}"


@pytest.mark.log_lines("S2 BCE at p = 0.5")
def test_bce_loss_at_p_one_half_is_ln_2(sigmoid, quoted):
    """Workshop: "BCE loss at p = 0.5 = 0.693147 (ln 2 = 0.693147)": the "learned nothing" score."""
    loss = sigmoid.bce_at_half
    quoted.lines(fill.bce_at_half(loss, math.log(2)))
    assert loss == pytest.approx(math.log(2), rel=1e-15)


@pytest.mark.log_lines(*AUTOGRAD_LINES)
def test_autograd_gradient_of_bce_wrt_logit_is_p_minus_y(logit_gradient, quoted):
    """Workshop: "autograd check at z = 2.0, y = 0: formula p - y = +0.880797, autograd dL/dz = +0.880797".
    Asserted at the six decimals the lines print: autograd's dL/dz reads as p - y, and p as
    the sigmoid of 2 computed in double precision."""
    g = logit_gradient
    quoted.lines(fill.autograd_check(g))
    assert f"{g.autograd:+.6f}" == f"{g.formula:+.6f}", (
        f"dL/dz = {g.autograd!r}, p - y = {g.formula!r}"
    )
    exact = 1 / (1 + math.exp(-g.z))
    assert f"{g.p:.6f}" == f"{exact:.6f}", f"p = {g.p!r}, sigmoid({g.z}) = {exact!r}"


@pytest.mark.log_lines("plot sigmoid_and_deriv.png")
def test_sigmoid_and_slope_figure_is_drawn(figure, figure_table, quoted):
    """Figure: "The sigmoid and its slope", the slope peaking at 0.25: on the plotted curve the
    slope rises at every grid step up to its largest value and falls at every step after it,
    and that value is 0.25 (at most 0.25, and 0.25 to the two figures the figure labels it
    with, "max slope = 0.25")."""
    curve = figure_table("sigmoid_and_deriv.png", series.sigmoid_and_slope_curve)
    figure.check(curve)
    slope = curve.columns["slope"]
    peak = int(np.argmax(slope))
    steps = np.diff(slope)
    assert (steps[:peak] > 0).all() and (steps[peak:] < 0).all(), "the slope has no single peak"
    top = float(slope[peak])
    assert at_most(0.25).holds(top) and about(0.25).holds(top), f"the slope peaks at {top!r}"
    figure.draw("sigmoid_and_deriv.png", curve)
    quoted.lines(fill.plot_saved("sigmoid_and_deriv.png"))


@pytest.mark.log_lines("plot bce_loss.png")
def test_bce_loss_figure_is_drawn(figure, figure_table, quoted):
    """Figure: "Binary cross-entropy loss", with ln 2 marked at p = 0.5: the plotted grid has a
    point at p = 0.5, and there both curves, -ln p and -ln(1 - p), are ln 2 (to float32's
    precision, as torch computes them), so the mark sits where they cross."""
    losses = figure_table("bce_loss.png", series.bce_loss)
    figure.check(losses)
    p = losses.columns["p"]
    half = int(np.argmin(np.abs(p - 0.5)))
    assert p[half] == pytest.approx(0.5, rel=1e-7), f"no grid point at p = 0.5: nearest {p[half]!r}"
    at_half = [float(losses.columns[c][half]) for c in ("loss if y = 1", "loss if y = 0")]
    assert at_half == pytest.approx([math.log(2)] * 2, rel=1e-7), f"at p = 0.5: {at_half}"
    figure.draw("bce_loss.png", losses)
    quoted.lines(fill.plot_saved("bce_loss.png"))
