"""[S5] Geometric decay: multiplying one factor per layer. Pure arithmetic, no network."""

import pytest

from bnvg import logformat as fmt
from bnvg.decay import FACTORS, remaining


@pytest.mark.parametrize(
    ("factor", "key"),
    [
        pytest.param(f, f"S5 factor {i}", marks=pytest.mark.log_lines(f"S5 factor {i}"), id=str(f))
        for i, f in enumerate(FACTORS, start=1)
    ],
)
def test_factor_per_layer_compounds_over_4_and_10_layers(factor, key, quoted):
    """Workshop: "factor 0.25: after 4 layers -> 3.91e-03, after 10 layers -> 9.54e-07"."""
    after_4, after_10 = remaining(factor, 4), remaining(factor, 10)
    assert after_10 == pytest.approx(after_4 * factor**6)
    assert after_10 < after_4 < factor
    quoted.lines({key: fmt.decay(factor, after_4, after_10)})


def test_a_quarter_per_layer_leaves_under_one_millionth_after_10_layers():
    """Even the sigmoid's best case, 0.25 per layer, leaves < 1e-6 of the gradient at depth 10."""
    assert remaining(0.25, 10) < 1e-6
    assert remaining(0.1, 10) == pytest.approx(1e-10)


@pytest.mark.log_lines("plot geometric_decay.png")
def test_geometric_decay_figure_is_drawn(figures, diagrams_dir, quoted, png):
    """Figure: "Multiplying one factor per layer is geometric decay"."""
    png(figures.geometric_decay(FACTORS, diagrams_dir))
    quoted.lines({"plot geometric_decay.png": fmt.plot_saved("geometric_decay.png")})
