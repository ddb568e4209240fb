"""[S8] The other fixes: ReLU, Xavier init, a residual connection and layer norm, each from the
same seed and trained with the same recipe as the S6 nets."""

import pytest

from bnvg import logformat as fmt
from bnvg.config import NetSpec
from bnvg.layout import S8_VARIANTS
from bnvg.measure import init_grad_ratio
from bnvg.model import build_network

# The S8 table's names for the runs of bnvg.runs.RUNS ("plain sigmoid" and "batch norm" are
# the S6 runs).
RUN_OF = {"plain sigmoid": "plain", **{name: name for name in S8_VARIANTS[1:]}}
FIXES = ("batch norm", "ReLU", "Xavier init", "residual")


def row(name, runs, data):
    """(init gradient ratio of a fresh net, trained run) for one S8 variant."""
    run = runs.get(RUN_OF[name])
    ratio = init_grad_ratio(build_network(run.spec.net), data.X_train, data.y_train)
    return ratio, run


@pytest.mark.log_lines("S8 xavier std")
def test_xavier_init_scales_layer_2_weights_to_std_about_0_5(quoted):
    """Workshop: "xavier layer-2 weight std = 0.5155 (default was 0.3114)": Glorot's scale
    sqrt(2 / (fan_in + fan_out)) = 0.5 for 4-into-4 layers, above PyTorch's default."""
    xavier = build_network(NetSpec(init="xavier")).hidden[1].weight.std().item()
    default = build_network(NetSpec()).hidden[1].weight.std().item()
    assert round(xavier, 1) == 0.5
    assert xavier > default
    quoted.lines({"S8 xavier std": fmt.xavier_std(xavier, default)})


@pytest.mark.runs("plain")
@pytest.mark.log_lines("S8 plain sigmoid")
def test_plain_sigmoid_row_stays_at_chance(runs, data, quoted):
    """Workshop: "plain sigmoid 3.32e-04 51.5%": the S6 run, the one that does not work."""
    ratio, run = row("plain sigmoid", runs, data)
    assert ratio < 1e-3
    assert run.history.best_acc < 0.90
    quoted.lines(
        {"S8 plain sigmoid": fmt.variant_row("plain sigmoid", ratio, run.history.final_acc)}
    )


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=[pytest.mark.log_lines(f"S8 {n}"), pytest.mark.runs(RUN_OF[n])])
        for n in FIXES
    ],
)
def test_fix_raises_the_init_gradient_ratio_10x_and_reaches_90_percent(name, runs, data, quoted):
    """Workshop: "Every fix works; the plain sigmoid net does not": batch norm 100.0%, ReLU 93.0%,
    Xavier init 100.0%, residual 93.0%, each with a layer-1 gradient at least 10x closer to
    the output's than the plain net's 3.32e-04."""
    plain_ratio = init_grad_ratio(build_network(NetSpec()), data.X_train, data.y_train)
    ratio, run = row(name, runs, data)
    assert ratio > 10 * plain_ratio
    assert run.history.final_acc >= 0.90
    quoted.lines({f"S8 {name}": fmt.variant_row(name, ratio, run.history.final_acc)})


@pytest.mark.runs("layer norm")
@pytest.mark.log_lines("S8 layer norm")
def test_layer_norm_raises_the_init_gradient_ratio_8x_over_the_plain_net(runs, data, quoted):
    """Workshop: "layer norm 2.76e-03 100.0%" as published. Only the gradient half holds here (torch
    2.13.0, one thread): at init its layer-1 gradient ratio is 2.76e-03 against the plain net's
    3.32e-04, but the trained net peaks at 77% (step 700) and ends at 51.5%, a coin flip. The
    final accuracy is kept in the snapshot and the log; the README's findings give the
    numbers and what the text should say."""
    plain_ratio = init_grad_ratio(build_network(NetSpec()), data.X_train, data.y_train)
    ratio, run = row("layer norm", runs, data)
    assert ratio > 5 * plain_ratio
    quoted.lines({"S8 layer norm": fmt.variant_row("layer norm", ratio, run.history.final_acc)})


@pytest.mark.runs(*(RUN_OF[name] for name in S8_VARIANTS))
@pytest.mark.log_lines("plot variants_accuracy.png")
def test_variants_accuracy_figure_is_drawn(runs, figures, diagrams_dir, quoted, png):
    """Figure: "Every fix works; the plain sigmoid net does not", one bar per variant."""
    final = {name: runs.get(RUN_OF[name]).history.final_acc for name in S8_VARIANTS}
    png(figures.variants_accuracy(final, diagrams_dir))
    quoted.lines({"plot variants_accuracy.png": fmt.plot_saved("variants_accuracy.png")})


@pytest.mark.log_lines("plot relu_and_deriv.png")
def test_relu_and_slope_figure_is_drawn(figures, diagrams_dir, quoted, png):
    """Figure: "ReLU and its slope": slope exactly 1 where active, so no shrinkage."""
    png(figures.relu_and_deriv(diagrams_dir))
    quoted.lines({"plot relu_and_deriv.png": fmt.plot_saved("relu_and_deriv.png")})


@pytest.mark.runs("layer norm")
def test_layer_norm_ends_at_90_percent_or_more_in_only_3_of_8_sampler_seeds(runs, fragility):
    """Workshop: "layer norm ... 100.0%" is luck of the draw: over minibatch-sampler seeds 0-7
    the same net ends at 51.5, 100, 92.5, 48.5, 51.5, 48.5, 48.5 and 96.5%, at or above 90% in
    3 of 8. Evidence: the sweep's table (snapshots/fragility.md, `pytest sweep/`), whose seed-0
    value must be the one this run computed, on one of the platforms the sweep saw."""
    token = fragility.lines["S8 layer norm"]["tokens"][1]
    here = f"{runs.get('layer norm').history.final_acc * 100:.1f}"
    assert here in {token["reference"], *token["rounding"].values()}
    finals = [token["reference"], *token["seeds"].values()]
    assert len(finals) == 8
    assert sum(float(v) >= 90 for v in finals) == 3
