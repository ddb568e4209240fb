"""[S3] The networks: one class for every variant, every variant from the same starting weights."""

import pytest
import torch

from bnvg.experiment.config import NetSpec
from bnvg.experiment.model import parameter_count, weight_checksum
from bnvg.log import fill
from bnvg.log.readings import at_most, exactly

CHECKSUM_LINES = ["S3 checksum plain", "S3 checksum bn", "S3 identical weights"]


@pytest.mark.log_lines("S3 parameters")
def test_plain_net_has_77_parameters(fresh_network, quoted):
    """Workshop: "plain net parameters: 77": 2->4, three 4->4 hidden layers and 4->1, with biases."""
    n = parameter_count(fresh_network(NetSpec()))
    quoted.lines(fill.parameters(n), holds={"parameters": exactly(77)})
    assert n == (2 * 4 + 4) + 3 * (4 * 4 + 4) + (4 + 1)


@pytest.mark.log_lines(*CHECKSUM_LINES)
def test_plain_and_batch_norm_nets_start_from_identical_weights(fresh_network, quoted):
    """Workshop: "identical starting weights: True": the checksums agree, and so does every weight."""
    plain, bn = fresh_network(NetSpec()), fresh_network(NetSpec(norm="batch"))
    for p_lin, b_lin in zip([*plain.hidden, plain.out], [*bn.hidden, bn.out], strict=True):
        assert torch.equal(p_lin.weight, b_lin.weight)
        assert torch.equal(p_lin.bias, b_lin.bias)
    lines = fill.checksums(weight_checksum(plain), weight_checksum(bn))
    quoted.lines(lines, holds={"checksums equal": exactly(True)})


@pytest.mark.log_lines("S3 layer-2 weights")
def test_default_init_keeps_layer_2_weights_below_one_half_with_std_0_31(
    workshop, fresh_network, quoted
):
    """Workshop: "layer-2 weight stats: std = 0.3114, max|w| = 0.4777 (PyTorch default init, fan_in = 4)":
    PyTorch draws from U(-1/sqrt(fan_in), 1/sqrt(fan_in)) = U(-0.5, 0.5), a sub-unity scale."""
    w = fresh_network(NetSpec()).hidden[1].weight
    std, max_abs = w.std().item(), w.abs().max().item()
    quoted.lines(
        fill.weight_stats(std, max_abs), holds={"max |w|": at_most(1 / workshop.width**0.5)}
    )
    assert 0.2 < std < 0.4
