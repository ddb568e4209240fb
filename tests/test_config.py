"""Bad input fails loudly, naming what would have been valid."""

import pytest

from bnvg.experiment.config import NetSpec, RunSpec, Workshop
from bnvg.experiment.data import two_moons
from bnvg.experiment.model import build_network
from bnvg.experiment.train import train


@pytest.mark.parametrize(
    ("option", "value", "named"),
    [
        ("norm", "btach", "'none', 'batch', 'layer'"),
        ("act", "tanh", "'sigmoid', 'relu'"),
        ("init", "he", "'default', 'xavier'"),
    ],
)
def test_an_unknown_option_name_raises_and_lists_the_valid_values(option, value, named):
    with pytest.raises(ValueError, match=f"unknown .*{value!r}: valid values are {named}"):
        NetSpec(**{option: value})


def test_a_typo_never_silently_trains_another_network():
    # The workshop script turned an unknown activation into ReLU; here it cannot get that far.
    with pytest.raises(ValueError, match="'sigmoid', 'relu'"):
        build_network(NetSpec(act="Sigmoid"))


@pytest.mark.parametrize("field", ["depth", "width"])
@pytest.mark.parametrize("value", [0, -1, 2.5, True])
def test_a_network_needs_at_least_one_layer_and_one_neuron(field, value):
    with pytest.raises(ValueError, match=f"{field} must be an integer >= 1"):
        NetSpec(**{field: value})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"lr": 0.0}, "lr must be > 0"),
        ({"lr": -0.5}, "lr must be > 0"),
        ({"lr": float("nan")}, "lr must be > 0"),
        ({"steps": 0}, "steps must be an integer >= 1"),
        ({"batch": 0}, "batch must be an integer >= 1"),
        ({"n_train": 1000}, "n_train must be between 1 and n_samples - 1 = 999"),
        ({"n_samples": 999}, "n_samples must be even"),
        ({"noise": -0.1}, "noise must be >= 0"),
    ],
)
def test_an_impossible_recipe_is_rejected_before_any_work(change, message):
    with pytest.raises(ValueError, match=message):
        Workshop(**change)


def test_training_refuses_a_non_positive_learning_rate():
    with pytest.raises(ValueError, match="lr must be > 0"):
        RunSpec(lr=0)
    with pytest.raises(ValueError, match="lr must be > 0"):
        train(build_network(), two_moons(), lr=0.0)


def test_a_variant_is_a_validated_copy():
    base = NetSpec()
    assert base.replace(norm="batch") == NetSpec(norm="batch")
    assert base == NetSpec()  # unchanged
    with pytest.raises(ValueError, match="unknown norm"):
        base.replace(norm="group")
