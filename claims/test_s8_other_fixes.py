"""[S8] The other fixes: ReLU, Xavier init, a residual connection and layer norm, each from the
same seed and trained with the same recipe as the S6 nets."""

import pytest

from bnvg.experiment.config import NetSpec
from bnvg.figures import series
from bnvg.log import fill
from bnvg.log.layout import S8_VARIANTS
from claimlog import about, above, at_least, below, seed_variant_name

# The S8 table's names for the runs of bnvg.experiment.runs.RUNS ("plain sigmoid" and
# "batch norm" are the S6 runs).
RUN_OF = {"plain sigmoid": "plain", **{name: name for name in S8_VARIANTS[1:]}}
FIXES = ("batch norm", "ReLU", "Xavier init", "residual")
LAYER_NORM_ACCURACY = "S8 layer norm, final test accuracy"
# The fixes that reach 90% whatever the minibatch order here (layer norm does only sometimes).
FIXES_THAT_WORK = ("batch norm", "ReLU", "Xavier init", "residual")


def row(name, runs, init_ratio):
    """(init gradient ratio of a fresh net, trained run) for one S8 variant."""
    run = runs.get(RUN_OF[name])
    return init_ratio(run.spec.net), run


@pytest.mark.log_lines("S8 xavier std")
def test_xavier_init_scales_layer_2_weights_to_std_about_0_5(starting_weights, quoted):
    """Workshop: "xavier layer-2 weight std = 0.5155 (default was 0.3114)": Glorot's scale
    sqrt(2 / (fan_in + fan_out)) = 0.5 for 4-into-4 layers, above PyTorch's default. The
    16 weights drawn have a std of about 0.5, to one figure."""
    xavier, default = starting_weights.xavier_layer2_std, starting_weights.layer2_std
    quoted.lines(fill.xavier_std(xavier, default), holds={"Xavier std": about(0.5)})
    assert xavier > default, f"Xavier's std {xavier:.4f}, the default's {default:.4f}"


@pytest.mark.runs("plain")
@pytest.mark.log_lines("S8 plain sigmoid")
def test_plain_sigmoid_row_stays_at_chance(runs, init_ratio, quoted, workshop):
    """Workshop: "plain sigmoid 3.32e-04 51.5%": the S6 run, the one that does not work. "At
    chance" is said of the row, whose accuracy is the run's final one: 50% to one figure. It
    never got further than chance allows: at none of the 81 points its history records does
    it reach 90%."""
    ratio, run = row("plain sigmoid", runs, init_ratio)
    h = run.history
    quoted.lines(
        fill.variant_row("plain sigmoid", ratio, h.final_acc),
        holds={"init gradient ratio": below(1e-3), "final test accuracy": about(50)},
    )
    assert (why := h.never_at_target(workshop.recorded_steps)) is None, why


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=[pytest.mark.log_lines(f"S8 {n}"), pytest.mark.runs(RUN_OF[n])])
        for n in FIXES
    ],
)
def test_fix_raises_the_init_gradient_ratio_10x_and_reaches_90_percent(
    name, runs, init_ratio, quoted
):
    """Workshop: "Every fix works; the plain sigmoid net does not": batch norm 100.0%, ReLU 93.0%,
    Xavier init 100.0%, residual 93.0%, each with a layer-1 gradient at least 10x closer to
    the output's than the plain net's 3.32e-04."""
    ratio, run = row(name, runs, init_ratio)
    quoted.lines(
        fill.variant_row(name, ratio, run.history.final_acc),
        holds={
            "init gradient ratio": above(10 * init_ratio(NetSpec())),
            "final test accuracy": at_least(90),
        },
    )


@pytest.mark.runs("layer norm")
@pytest.mark.log_lines("S8 layer norm")
def test_layer_norm_raises_the_init_gradient_ratio_8x_over_the_plain_net(runs, init_ratio, quoted):
    """Workshop: "layer norm 2.76e-03 100.0%" as published. Only the gradient half holds as a
    fact: at init its layer-1 gradient ratio is 2.76e-03 against the plain net's 3.32e-04,
    about 8x theirs (to one figure: 7.5x to below 8.5x). Its final accuracy is luck of the
    draw (51.5% here, 100.0% published): the claim declares the workshop's bar, at least 90%,
    as one that holds only sometimes, and the next claim states how often."""
    ratio, run = row("layer norm", runs, init_ratio)
    plain = init_ratio(NetSpec())
    quoted.lines(
        fill.variant_row("layer norm", ratio, run.history.final_acc),
        # The bound the sweep counts is the sentence's lower end; the assert below, the whole.
        holds={"init gradient ratio": at_least(7.5 * plain)},
        sometimes={"final test accuracy": at_least(90)},
    )
    assert about(8).holds(ratio / plain), f"{ratio:.2e} against {plain:.2e}: {ratio / plain:.2f}x"


@pytest.mark.runs(*(RUN_OF[name] for name in S8_VARIANTS))
@pytest.mark.log_lines("plot variants_accuracy.png")
def test_variants_accuracy_figure_is_drawn(runs, figure, quoted, fragility_table):
    """Figure: one bar per variant, titled as the script titles it: "Every fix works; the
    plain sigmoid net does not". Asserted as it holds: the plain net stays below 90%, and
    batch norm, ReLU, Xavier init and residual reach it; layer norm reaches it only sometimes
    (51.5% at the workshop's seeds here), so "every fix works" does not hold as written, and
    the session says so with how often layer norm reaches 90%."""
    percent = {name: runs.get(RUN_OF[name]).history.final_acc * 100 for name in S8_VARIANTS}
    final = series.variants_accuracy({name: p / 100 for name, p in percent.items()})
    figure.check(final)
    evidence = fragility_table.reading(LAYER_NORM_ACCURACY)
    how_often = evidence.what_holds() if evidence is not None else "no evidence for this experiment"
    figure.title(
        "variants_accuracy.png",
        "Every fix works; the plain sigmoid net does not",
        holds={
            "the plain sigmoid net stays below 90%": percent["plain sigmoid"] < 90,
            **{f"{fix} reaches 90%": percent[fix] >= 90 for fix in FIXES_THAT_WORK},
        },
        sometimes={
            "layer norm reaches 90%": f"{percent['layer norm']:.1f}% here; {how_often}",
        },
    )
    figure.draw("variants_accuracy.png", final)
    quoted.lines(fill.plot_saved("variants_accuracy.png"))


@pytest.mark.log_lines("plot relu_and_deriv.png")
def test_relu_and_slope_figure_is_drawn(figure, figure_table, quoted):
    """Figure: "ReLU and its slope": slope exactly 1 where active, so no shrinkage. On the plotted
    grid, the slope is exactly 1 at every z > 0, where ReLU passes z through unchanged."""
    relu = figure_table("relu_and_deriv.png", series.relu_and_slope)
    figure.check(relu)
    z, slope = relu.columns["z"], relu.columns["slope"]
    active = z > 0
    assert active.any() and (slope[active] == 1).all(), f"slopes where active: {set(slope[active])}"
    assert (relu.columns["relu"][active] == z[active]).all(), "ReLU changes an active z"
    figure.draw("relu_and_deriv.png", relu)
    quoted.lines(fill.plot_saved("relu_and_deriv.png"))


@pytest.mark.evidence
@pytest.mark.runs("layer norm")
def test_layer_norm_reaches_90_percent_only_about_half_the_time(
    runs, fragility_table, platform_standing, workshop
):
    """Workshop: "layer norm ... 100.0%" is luck of the draw. Over the sweep's minibatch orders,
    and over its starting weights, the same net ends at 90% or more about half the time.
    Asserted as stated: on both seed axes, from at least 8 seeds each, one in two lies inside
    the 95% interval of the rate. Evidence: the sweep's table (snapshots/evidence/fragility.md),
    whose entry for this run's own seeds on this platform, where the sweep ran them, must be
    the value this run computed."""
    evidence = fragility_table.reading(LAYER_NORM_ACCURACY)
    assert evidence is not None, (
        "the sweep's table has no layer norm row for this experiment: python -m bnvg.sweep"
    )
    here = runs.get("layer norm").history.final_acc * 100
    # This run's own seeds: an exploratory --sampler-seed 5 is compared with the sweep's
    # sampler-seed-5, never with the workshop's seed 0.
    seeds = seed_variant_name({"sampler": workshop.sampler_seed, "init": workshop.init_seed})
    seen = evidence.at_seeds(platform_standing.platform, seeds)
    if seen is not None:  # a platform or seed new to the evidence has no entry to agree with
        where = f"at {seeds}" if seeds else "at the workshop's seeds"
        assert seen.value == here, (
            f"the sweep saw {seen.printed} on this platform {where}, here {here:.1f}"
        )
    # Both seed axes are judged before either fails: the sentence is of the pair, and an
    # author who rewords it needs both rates.
    rates = dict(evidence.generality())  # {"minibatch orders": Rate(16, 33), ...}
    assert len(rates) == 2 and all(r.n >= 8 for r in rates.values()), f"too few seeds: {rates}"
    said = "; ".join(f"at least 90% in {rate} {axis}" for axis, rate in rates.items())
    half = [rate for rate in rates.values() if rate.interval[0] <= 0.5 <= rate.interval[1]]
    assert len(half) == len(rates), f"not about half the time: {said}"
