"""[S7] Brute force vs depth: crank the learning rate at depth 4, then go to depth 8."""

import math

import pytest

from bnvg.experiment.config import DEEP_DEPTH, DEEP_LRS, NetSpec
from bnvg.log import fill
from bnvg.log.readings import above, at_least, at_most, below

LN2 = math.log(2)


@pytest.mark.runs("plain, lr = 5.0", "plain")
@pytest.mark.log_lines("S7 lr 5.0", "S7 lr 0.5 recall")
def test_lr_5_rescues_the_depth_4_plain_net_that_lr_0_5_could_not(runs, quoted):
    """Workshop: "plain, lr = 5.0: final test acc = 100.0%, first >=90%: step 1050" against the S6 run's
    51.5% at lr 0.5: at depth 4, a 10x larger step makes up for the vanished gradient."""
    crank, s6 = runs.get("plain, lr = 5.0").history, runs.get("plain").history
    quoted.lines(
        fill.run_summary("S7 lr 5.0", crank),
        fill.s6_recall(s6),
        holds={"S7 lr 5.0, final test accuracy": at_least(90)},
    )
    assert crank.first_step_at_target is not None
    assert s6.best_acc < 0.90


@pytest.mark.runs("plain, lr = 50.0")
@pytest.mark.log_lines("S7 lr 50.0")
def test_lr_50_diverges_at_depth_4(runs, quoted):
    """Workshop: "plain, lr = 50.0: final train loss = 5.7024, final test acc = 48.5%, first >=90%: never":
    too large a step overshoots; the loss ends far above ln 2."""
    h = runs.get("plain, lr = 50.0").history
    quoted.lines(fill.run_summary("S7 lr 50.0", h), holds={"final train loss": above(2 * LN2)})
    assert h.best_acc < 0.90


@pytest.mark.log_lines("S7 depth 8 ratio")
def test_depth_8_gradient_ratio_is_4_97e_07_plain_versus_0_337_with_batch_norm(init_ratio, quoted):
    """Workshop: "init gradient ratio L1/out: plain = 4.97e-07, batch norm = 3.37e-01": four more
    sigmoid layers cost the plain net another factor of ~1000; batch norm's barely moves."""
    plain, bn = (init_ratio(NetSpec(norm=norm, depth=DEEP_DEPTH)) for norm in ("none", "batch"))
    quoted.lines(
        fill.deep_ratio(plain, bn),
        holds={"plain gradient ratio": below(1e-6), "batch norm gradient ratio": above(0.1)},
    )


@pytest.mark.parametrize(
    "lr",
    [
        pytest.param(
            lr,
            marks=[
                pytest.mark.log_lines(f"S7 depth 8 plain, lr = {lr}"),
                pytest.mark.runs(f"depth 8 plain, lr = {lr}"),
            ],
            id=f"lr={lr}",
        )
        for lr in DEEP_LRS
    ],
)
def test_no_learning_rate_lets_the_depth_8_plain_net_reach_90_percent(lr, runs, quoted):
    """Workshop: "Depth 8: no learning rate saves the plain net": at lr 0.5, 5 and 50 the test accuracy
    never reaches 90% over the whole run."""
    h = runs.get(f"depth 8 plain, lr = {lr}").history
    quoted.lines(
        fill.run_summary(f"S7 depth 8 plain, lr = {lr}", h),
        holds={"final test accuracy": below(90)},
    )
    assert h.best_acc < 0.90  # never: the maximum over the whole history


@pytest.mark.runs("depth 8 batch norm, lr = 0.5")
@pytest.mark.log_lines("S7 depth 8 batch norm")
def test_batch_norm_at_lr_0_5_reaches_90_percent_at_depth_8(runs, quoted):
    """Workshop: "batch norm, lr = 0.5: final test acc = 100.0%, first >=90%: step 50": "batch norm just
    works"."""
    quoted.lines(
        fill.run_summary("S7 depth 8 batch norm", runs.get("depth 8 batch norm, lr = 0.5").history),
        holds={"first step at the target": at_most(100), "final test accuracy": at_least(90)},
    )


@pytest.mark.runs("plain", "plain, lr = 5.0", "plain, lr = 50.0")
@pytest.mark.log_lines("plot lr_crank.png")
def test_lr_crank_figure_is_drawn(runs, workshop, figure, quoted):
    """Figure: "Cranking the learning rate, plain net, depth 4"."""
    curves = {
        f"plain, lr = {lr}": runs.history(name)
        for lr, name in ((0.5, "plain"), (5.0, "plain, lr = 5.0"), (50.0, "plain, lr = 50.0"))
    }
    figure.draw("lr_crank.png", curves, workshop.depth)
    quoted.lines(fill.plot_saved("lr_crank.png"))


@pytest.mark.runs(*(f"depth 8 plain, lr = {lr}" for lr in DEEP_LRS), "depth 8 batch norm, lr = 0.5")
@pytest.mark.log_lines("plot depth8_rescue.png")
def test_depth8_rescue_figure_is_drawn(runs, figure, quoted):
    """Figure: "Depth 8: no learning rate saves the plain net; batch norm just works", its
    title asserted as stated: at no learning rate does the depth-8 plain net's test accuracy
    reach 90% at any point of its history, and the batch-norm net's does."""
    curves = {f"plain, lr = {lr}": runs.history(f"depth 8 plain, lr = {lr}") for lr in DEEP_LRS}
    curves["batch norm, lr = 0.5"] = runs.history("depth 8 batch norm, lr = 0.5")
    best = {name: max(table.columns["test accuracy %"]) for name, table in curves.items()}
    figure.title(
        "depth8_rescue.png",
        f"Depth {DEEP_DEPTH}: no learning rate saves the plain net; batch norm just works",
        holds={
            **{
                f"the plain net at {name} never reaches 90%": best[name] < 90
                for name in best
                if name.startswith("plain")
            },
            "the batch-norm net reaches 90%": best["batch norm, lr = 0.5"] >= 90,
        },
    )
    figure.draw("depth8_rescue.png", curves, DEEP_DEPTH)
    quoted.lines(fill.plot_saved("depth8_rescue.png"))
