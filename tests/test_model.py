"""The network class: seeded, identical starts, and a repr that says what it is."""

import torch

from bnvg.experiment.config import NetSpec
from bnvg.experiment.model import build_network, weight_checksum


def test_repr_names_the_variant():
    assert (
        repr(build_network(NetSpec(depth=8, norm="batch")))
        == "TinyNet(depth=8, norm=batch, act=sigmoid)"
    )
    assert repr(build_network(NetSpec(act="relu", residual=True))) == (
        "TinyNet(depth=4, norm=none, act=relu, residual)"
    )


def test_building_a_network_neither_depends_on_nor_changes_global_rng_state():
    torch.manual_seed(123)
    before = torch.get_rng_state()
    first = build_network(NetSpec())
    assert torch.equal(torch.get_rng_state(), before)
    torch.rand(1000)  # disturb the global stream: the next build must not notice
    second = build_network(NetSpec())
    assert weight_checksum(first) == weight_checksum(second)


def test_every_variant_starts_from_the_same_linear_weights():
    plain = build_network(NetSpec()).state_dict()
    for spec in [
        NetSpec(norm="batch"),
        NetSpec(norm="layer"),
        NetSpec(act="relu"),
        NetSpec(residual=True),
    ]:
        other = build_network(spec).state_dict()
        for name, tensor in plain.items():
            assert torch.equal(tensor, other[name]), (spec, name)


def test_xavier_redraws_every_weight_at_glorot_scale_and_zeroes_biases():
    net = build_network(NetSpec(init="xavier"))
    bound = (6 / (4 + 4)) ** 0.5  # U(-a, a) with a = sqrt(6 / (fan_in + fan_out))
    for lin in [*net.hidden[1:], net.out]:
        assert lin.weight.abs().max() <= bound
        assert torch.count_nonzero(lin.bias) == 0
    assert not torch.equal(net.hidden[1].weight, build_network(NetSpec()).hidden[1].weight)


def test_residual_skips_every_layer_but_the_first():
    x = torch.randn(5, 2)
    net = build_network(NetSpec(residual=True))
    _, rec = net.forward_recorded(x)
    # layer k >= 2 adds its input: h_k - sigmoid(z_k) equals h_{k-1}
    for k in range(1, 4):
        assert torch.allclose(rec.h[k] - torch.sigmoid(rec.z[k]), rec.h[k - 1])
    assert torch.equal(rec.h[0], torch.sigmoid(rec.z[0]))
