"""[S1] The two-moons dataset: 1000 noisy points in two interleaved half circles."""

import numpy as np
import pytest

from bnvg.experiment.data import points_inside_the_other_class
from bnvg.figures import series
from bnvg.log import fill
from claimlog import at_least, below, exactly


@pytest.mark.log_lines("S1 samples")
def test_two_moons_has_1000_points_500_per_class_with_noise_0_1(data, workshop, quoted):
    """Workshop: "samples: 1000 (500 per class), noise sigma = 0.1"."""
    quoted.lines(fill.samples(data), holds={"points": exactly(1000)})
    assert np.bincount(data.y.astype(int)).tolist() == [500, 500]
    assert workshop.noise == 0.1


@pytest.mark.log_lines("S1 split")
def test_800_points_train_and_200_never_trained_on_points_test(data, quoted):
    """Workshop: "split: 800 train / 200 test"."""
    line = fill.split(data.n_train, data.n_test)
    quoted.lines(line, holds={"training points": exactly(800), "test points": exactly(200)})


@pytest.mark.log_lines("S1 feature std")
def test_input_features_have_std_0_890_and_0_511(data, quoted):
    """Workshop: "input feature std: x1 = 0.890, x2 = 0.511": the inputs are already of order 1."""
    x1, x2 = data.feature_std()
    quoted.lines(
        fill.feature_std(x1, x2), holds={"std of x1": below(1.0), "std of x2": at_least(0.5)}
    )
    assert x2 < x1


@pytest.mark.log_lines("plot two_moons.png")
def test_two_moons_figure_is_drawn(data, figure, quoted):
    """Figure: "The two-moons task: no straight line separates these", its title asserted
    with a certificate: points of each moon lie strictly inside the other moon's convex hull,
    and a separating line would leave each hull wholly on its own side."""
    points = series.two_moons(data)
    figure.check(points)
    upper_in_lower, lower_in_upper = points_inside_the_other_class(data)
    figure.title(
        "two_moons.png",
        "The two-moons task: no straight line separates these",
        holds={
            f"{upper_in_lower} upper-moon points lie inside the lower moon's convex hull, "
            f"{lower_in_upper} lower-moon points inside the upper's": upper_in_lower
            + lower_in_upper
            > 0
        },
    )
    figure.draw("two_moons.png", points)
    quoted.lines(fill.plot_saved("two_moons.png"))
