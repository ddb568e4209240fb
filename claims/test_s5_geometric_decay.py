"""[S5] Geometric decay: multiplying one factor per layer. Pure arithmetic, no network."""

import pytest

from bnvg.experiment.config import DECAY_DEPTHS, DECAY_FACTORS
from bnvg.experiment.facts import remaining
from bnvg.figures import series
from bnvg.log import fill

SHALLOW, DEEP = DECAY_DEPTHS


@pytest.mark.parametrize(
    "factor",
    [
        pytest.param(f, marks=pytest.mark.log_lines(f"S5 factor {f}"), id=str(f))
        for f in DECAY_FACTORS
    ],
)
def test_factor_per_layer_compounds_over_4_and_10_layers(factor, quoted):
    """Workshop: "factor 0.25: after 4 layers -> 3.91e-03, after 10 layers -> 9.54e-07"."""
    after_shallow, after_deep = remaining(factor, SHALLOW), remaining(factor, DEEP)
    quoted.lines(fill.decay(factor, after_shallow, after_deep))
    assert after_deep == pytest.approx(after_shallow * factor ** (DEEP - SHALLOW))
    assert after_deep < after_shallow < factor


def test_a_quarter_per_layer_leaves_under_one_millionth_after_10_layers():
    """Even the sigmoid's best case, 0.25 per layer, leaves < 1e-6 of the gradient at depth 10."""
    assert remaining(0.25, 10) < 1e-6
    assert remaining(0.1, 10) == pytest.approx(1e-10)


@pytest.mark.log_lines("plot geometric_decay.png")
def test_geometric_decay_figure_is_drawn(figure, quoted):
    """Figure: "Multiplying one factor per layer is geometric decay": every plotted curve starts
    at 1 and is multiplied by its factor, below 1, at each layer."""
    decay = series.geometric_decay(DECAY_FACTORS)
    figure.check(decay)
    for factor in DECAY_FACTORS:
        left = decay.columns[str(factor)]
        assert factor < 1 and left[0] == 1, f"factor {factor}: starts at {left[0]}"
        per_layer = left[1:] / left[:-1]
        assert per_layer == pytest.approx([factor] * len(per_layer), rel=1e-12), (
            f"factor {factor}: each layer multiplies by {per_layer.tolist()}"
        )
    figure.draw("geometric_decay.png", decay)
    quoted.lines(fill.plot_saved("geometric_decay.png"))
