"""[S3] The networks: one class for every variant, every variant from the same starting weights."""

import pytest

from bnvg.log import fill
from claimlog import about, below, exactly

CHECKSUM_LINES = ["S3 checksum plain", "S3 checksum bn", "S3 identical weights"]


@pytest.mark.log_lines("S3 parameters")
def test_plain_net_has_77_parameters(starting_weights, quoted):
    """Workshop: "plain net parameters: 77": 2->4, three 4->4 hidden layers and 4->1, with biases."""
    n = starting_weights.parameters
    quoted.lines(fill.parameters(n), holds={"parameters": exactly(77)})
    assert n == (2 * 4 + 4) + 3 * (4 * 4 + 4) + (4 + 1)


@pytest.mark.log_lines(*CHECKSUM_LINES)
def test_plain_and_batch_norm_nets_start_from_identical_weights(starting_weights, quoted):
    """Workshop: "identical starting weights: True": the checksums agree, and so does every weight."""
    w = starting_weights  # `identical`: every weight and bias compared (bnvg.experiment.facts)
    lines = fill.checksums(w.checksum_plain, w.checksum_batch_norm)
    quoted.lines(lines, holds={"checksums equal": exactly(True)})
    assert w.identical


@pytest.mark.log_lines("S3 layer-2 weights")
def test_default_init_keeps_layer_2_weights_below_one_half_with_std_0_31(
    workshop, starting_weights, quoted
):
    """Workshop: "layer-2 weight stats: std = 0.3114, max|w| = 0.4777 (PyTorch default init, fan_in = 4)":
    PyTorch draws from U(-1/sqrt(fan_in), 1/sqrt(fan_in)) = U(-0.5, 0.5), a sub-unity scale.
    Asserted as named: every weight of layer 2 is below one half in size, and their std is
    0.31 to two figures."""
    std, max_abs = starting_weights.layer2_std, starting_weights.layer2_max_abs
    quoted.lines(
        fill.weight_stats(std, max_abs),
        holds={"max |w|": below(1 / workshop.width**0.5), "std": about(0.31)},
    )
