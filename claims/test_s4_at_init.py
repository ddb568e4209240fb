"""[S4] At initialisation, before any training: one forward/backward pass on the training set.

The plain sigmoid net's gradient shrinks about 10x per layer on its way back, so layer 1
receives ~3000x less than the output layer; batch norm keeps every layer's signal alive.
"""

import pytest

from bnvg.figures import series
from bnvg.log import fill
from bnvg.log.layout import FIGURES
from bnvg.log.readings import above, at_most, exactly

DEPTH = 4


def table_keys(net):
    return [
        f"S4 {net} loss",
        *(f"S4 {net} layer {k}" for k in range(1, DEPTH + 1)),
        f"S4 {net} output",
    ]


@pytest.mark.log_lines(*table_keys("plain"))
def test_plain_net_weight_gradients_grow_toward_the_output(at_init, quoted):
    """The PLAIN table: ||dL/dW|| rises ~10x per layer from layer 1 to the output, while no
    unit is saturated: the shrinkage is the sigmoid's slope (< 0.25), not saturation."""
    m = at_init["plain"]
    grads = [r.w_grad for r in m.layers] + [m.out_grad]
    quoted.lines(
        fill.at_init_table("plain", m),
        holds={"mean slope": at_most(0.25), "% slope < .05": exactly(0.0)},
    )
    assert grads == sorted(grads)


@pytest.mark.log_lines(*table_keys("batch"))
def test_batch_norm_net_weight_gradients_stay_within_one_order_of_magnitude(at_init, quoted):
    """The BATCHNORM table: every layer's ||dL/dW|| is within 10x of the output layer's."""
    m = at_init["batch"]
    quoted.lines(fill.at_init_table("batch", m))
    assert all(r.w_grad > m.out_grad / 10 for r in m.layers)


def test_batch_norm_keeps_std_of_z_at_1(at_init):
    """Workshop: "std(z) = 1.0001, 0.9996, 0.9999, 0.9995": batch norm rescales every layer's
    pre-activations to unit spread, where the plain net's stay at 0.23 to 0.57."""
    assert [round(r.z_std, 2) for r in at_init["batch"].layers] == [1.0] * DEPTH
    assert all(r.z_std < 0.6 for r in at_init["plain"].layers)


@pytest.mark.log_lines("S4 plain ratio")
def test_plain_net_first_layer_gradient_is_3000x_smaller_than_output(at_init, quoted):
    """Workshop: "gradient ratio, layer 1 vs output: 3.32e-04 (3015x smaller)"."""
    quoted.lines(
        fill.at_init_ratio("plain", at_init["plain"]),
        holds={"times smaller": above(1000), "gradient ratio": at_most(1e-3)},
    )


@pytest.mark.log_lines("S4 batch ratio")
def test_batch_norm_first_layer_gradient_is_only_4x_smaller_than_output(at_init, quoted):
    """Workshop: "gradient ratio, layer 1 vs output: 2.29e-01 (4x smaller)"."""
    m = at_init["batch"]
    quoted.lines(fill.at_init_ratio("batch", m))
    assert round(m.times_smaller) == 4


@pytest.mark.log_lines("S4 plain shrink")
def test_plain_backward_signal_shrinks_about_10x_per_layer(at_init, quoted):
    """Workshop: "backward shrink factor per layer: 0.096, 0.104, 0.120": ~0.1 per layer."""
    m = at_init["plain"]
    quoted.lines(fill.at_init_shrink("plain", m))
    assert [round(f, 1) for f in m.shrink_factors] == [0.1] * (DEPTH - 1)


@pytest.mark.log_lines("S4 batch shrink")
def test_batch_norm_backward_signal_keeps_most_of_its_size_per_layer(at_init, quoted):
    """Workshop: "backward shrink factor per layer: 0.816, 0.703, 0.972": far from 0.1."""
    m = at_init["batch"]
    quoted.lines(fill.at_init_shrink("batch", m))
    assert all(f > 0.5 for f in m.shrink_factors)


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
