"""[S4] At initialisation, before any training: one forward/backward pass on the training set.

The plain sigmoid net's gradient shrinks about 10x per layer on its way back, so layer 1
receives ~3000x less than the output layer; batch norm keeps every layer's signal alive.
"""

from itertools import pairwise

import pytest

from bnvg.figures import series
from bnvg.log import fill
from bnvg.log.layout import FIGURES
from claimlog import about, above, at_most, below, exactly

DEPTH = 4


def per_factor(bound):
    """`bound` on every backward shrink factor of a net's shrink line."""
    return {f"||dL/dh_{k}|| / ||dL/dh_{k + 1}||": bound for k in range(1, DEPTH)}


def table_keys(net):
    """The keys of a net's S4 table: `at_init` and the S4 log keys call the nets "plain" and
    "batch" (the batch norm net: "S4 batch ratio"), and the log prints their tables under
    "PLAIN" and "BATCHNORM"."""
    return [
        f"S4 {net} loss",
        *(f"S4 {net} layer {k}" for k in range(1, DEPTH + 1)),
        f"S4 {net} output",
    ]


@pytest.mark.log_lines(*table_keys("plain"))
def test_plain_net_weight_gradients_grow_toward_the_output(at_init, quoted):
    """The PLAIN table: ||dL/dW|| rises ~10x per layer from layer 1 to layer 4 (each layer's is
    about 0.1 of the next's), then ~5x to the output (layer 4's is about 0.2 of the
    output's), while no unit is saturated: the shrinkage is the sigmoid's slope (its mean is
    below 0.25 in every layer), not saturation (no unit's slope is below 0.05)."""
    m = at_init["plain"]
    grads = [r.w_grad for r in m.layers] + [m.out_grad]
    quoted.lines(
        fill.at_init_table("plain", m),
        holds={"mean slope": below(0.25), "% slope < .05": exactly(0.0)},
    )
    # Each factor as the share a layer keeps of the next one's gradient, rounded to the one
    # figure "~10x" and "~5x" state ("~10x" is 0.1: from 0.095 to below 0.15).
    shares = [g / g_next for g, g_next in pairwise(grads)]
    said = ", ".join(f"{s:.3f}" for s in shares)
    assert all(about(0.1).holds(s) for s in shares[:-1]), f"layer k's share of layer k+1's: {said}"
    assert about(0.2).holds(shares[-1]), f"layer 4's share of the output's: {said}"


@pytest.mark.log_lines(*table_keys("batch"))
def test_batch_norm_net_weight_gradients_stay_within_one_order_of_magnitude(at_init, quoted):
    """The batch norm table (printed under "BATCHNORM"): every layer's ||dL/dW|| is within 10x
    of the output layer's, on either side: above a tenth of it and below ten times it."""
    m = at_init["batch"]
    quoted.lines(fill.at_init_table("batch", m))
    for r in m.layers:
        assert m.out_grad / 10 < r.w_grad < 10 * m.out_grad, (
            f"layer {r.layer}: ||dL/dW|| = {r.w_grad:.2e}, the output's {m.out_grad:.2e}"
        )


def test_batch_norm_keeps_std_of_z_at_1(at_init):
    """Workshop: "std(z) = 1.0001, 0.9996, 0.9999, 0.9995": batch norm rescales every layer's
    pre-activations to unit spread (1.00 to two decimals), where the plain net's stay at 0.23
    to 0.57 (its smallest and largest, to two figures)."""
    batch_norm = [r.z_std for r in at_init["batch"].layers]
    plain = [r.z_std for r in at_init["plain"].layers]
    assert [round(z, 2) for z in batch_norm] == [1.0] * DEPTH, f"batch norm's std(z): {batch_norm}"
    assert about(0.23).holds(min(plain)) and about(0.57).holds(max(plain)), (
        f"the plain net's std(z): {plain}"
    )


@pytest.mark.log_lines("S4 plain ratio")
def test_plain_net_first_layer_gradient_is_3000x_smaller_than_output(at_init, quoted):
    """Workshop: "gradient ratio, layer 1 vs output: 3.32e-04 (3015x smaller)": about 3000x
    smaller, to the one figure the name states (2500x to below 3500x)."""
    quoted.lines(
        fill.at_init_ratio("plain", at_init["plain"]),
        holds={"times smaller": about(3000), "gradient ratio": at_most(1e-3)},
    )


@pytest.mark.log_lines("S4 batch ratio")
def test_batch_norm_first_layer_gradient_is_only_4x_smaller_than_output(at_init, quoted):
    """Workshop: "gradient ratio, layer 1 vs output: 2.29e-01 (4x smaller)": about 4x, to one
    figure (3.5x to below 4.5x)."""
    m = at_init["batch"]
    quoted.lines(fill.at_init_ratio("batch", m), holds={"times smaller": about(4)})


@pytest.mark.log_lines("S4 plain shrink")
def test_plain_backward_signal_shrinks_about_10x_per_layer(at_init, quoted):
    """Workshop: "backward shrink factor per layer: 0.096, 0.104, 0.120": ~0.1 per layer, each
    factor 0.1 to one figure (0.095 to below 0.15)."""
    m = at_init["plain"]
    quoted.lines(fill.at_init_shrink("plain", m), holds=per_factor(about(0.1)))


@pytest.mark.log_lines("S4 batch shrink")
def test_batch_norm_backward_signal_keeps_most_of_its_size_per_layer(at_init, quoted):
    """Workshop: "backward shrink factor per layer: 0.816, 0.703, 0.972": far from 0.1. "Most of
    its size" is more than half: every factor is above 0.5."""
    m = at_init["batch"]
    quoted.lines(fill.at_init_shrink("batch", m), holds=per_factor(above(0.5)))


PLOTTED = {
    "grad_norms_by_layer.png": lambda m: series.grad_norms_by_layer(m["plain"], m["batch"]),
    "grad_norms_plain.png": lambda m: series.grad_norms_plain(m["plain"]),
    "signal_decay.png": lambda m: series.signal_decay(m["plain"], m["batch"]),
    "act_std_by_layer.png": lambda m: series.act_std_by_layer(m["plain"], m["batch"]),
}


@pytest.mark.parametrize(
    "name",
    [pytest.param(name, marks=pytest.mark.log_lines(f"plot {name}")) for name in FIGURES[3:7]],
)
def test_at_init_figure_is_drawn(name, at_init, figure, quoted):
    """Figures: gradient size per layer (both nets, and the plain net alone), the backward
    signal at each depth, and the forward activation spread."""
    plotted = PLOTTED[name](at_init)
    figure.check(plotted)
    figure.draw(name, plotted)
    quoted.lines(fill.plot_saved(name))
