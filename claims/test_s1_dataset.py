"""[S1] The two-moons dataset: 1000 noisy points in two interleaved half circles."""

import numpy as np
import pytest

from bnvg import logformat as fmt


@pytest.mark.log_lines("S1 samples")
def test_two_moons_has_1000_points_500_per_class_with_noise_0_1(data, workshop, quoted):
    """Workshop: "samples: 1000 (500 per class), noise sigma = 0.1"."""
    counts = np.bincount(data.y.astype(int))
    assert len(data.X) == 1000
    assert counts.tolist() == [500, 500]
    assert workshop.noise == 0.1
    quoted.lines({"S1 samples": fmt.samples(len(data.X), workshop.noise)})


@pytest.mark.log_lines("S1 split")
def test_800_points_train_and_200_never_trained_on_points_test(data, quoted):
    """Workshop: "split: 800 train / 200 test"."""
    n_train, n_test = len(data.X_train), len(data.X_test)
    assert (n_train, n_test) == (800, 200)
    quoted.lines({"S1 split": fmt.split(n_train, n_test)})


@pytest.mark.log_lines("S1 feature std")
def test_input_features_have_std_0_890_and_0_511(data, quoted):
    """Workshop: "input feature std: x1 = 0.890, x2 = 0.511": the inputs are already of order 1."""
    x1, x2 = data.feature_std()
    assert 0.5 < x2 < x1 < 1.0
    quoted.lines({"S1 feature std": fmt.feature_std(x1, x2)})


@pytest.mark.log_lines("plot two_moons.png")
def test_two_moons_figure_is_drawn(data, figures, diagrams_dir, quoted, png):
    """Figure: "The two-moons task: no straight line separates these"."""
    png(figures.two_moons(data, diagrams_dir))
    quoted.lines({"plot two_moons.png": fmt.plot_saved("two_moons.png")})
