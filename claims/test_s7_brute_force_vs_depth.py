"""[S7] Brute force vs depth: crank the learning rate at depth 4, then go to depth 8."""

import math

import pytest

from bnvg.experiment.config import DEEP_DEPTH, DEEP_LRS, NetSpec
from bnvg.log import fill
from claimlog import about, above, at_least, at_most, below

LN2 = math.log(2)


@pytest.mark.runs("plain, lr = 5.0", "plain")
@pytest.mark.log_lines("S7 lr 5.0", "S7 lr 0.5 recall")
def test_lr_5_rescues_the_depth_4_plain_net_that_lr_0_5_could_not(runs, workshop, quoted):
    """Workshop: "plain, lr = 5.0: final test acc = 100.0%, first >=90%: step 1050" against the S6 run's
    51.5% at lr 0.5: at depth 4, a 10x larger step makes up for the vanished gradient. The
    lr 0.5 run "could not": at none of the 81 points its history records is it at 90%."""
    crank_run, s6_run = runs.get("plain, lr = 5.0"), runs.get("plain")
    crank, s6 = crank_run.history, s6_run.history
    quoted.lines(
        fill.run_summary("S7 lr 5.0", crank),
        fill.s6_recall(s6),
        holds={"S7 lr 5.0, final test accuracy": at_least(90)},
    )
    assert crank.first_step_at_target is not None
    assert crank_run.spec.lr == 10 * s6_run.spec.lr, f"lr {crank_run.spec.lr} vs {s6_run.spec.lr}"
    assert (why := s6.never_at_target(workshop.recorded_steps)) is None, why


@pytest.mark.runs("plain, lr = 50.0")
@pytest.mark.log_lines("S7 lr 50.0")
def test_lr_50_diverges_at_depth_4(runs, workshop, quoted):
    """Workshop: "plain, lr = 50.0: final train loss = 5.7024, final test acc = 48.5%, first >=90%: never":
    too large a step overshoots; the loss ends far above ln 2, more than twice it. "Never" as
    the log counts it: at none of the 81 points its history records is it at 90%."""
    h = runs.get("plain, lr = 50.0").history
    quoted.lines(fill.run_summary("S7 lr 50.0", h), holds={"final train loss": above(2 * LN2)})
    assert (why := h.never_at_target(workshop.recorded_steps)) is None, why


@pytest.mark.log_lines("S7 depth 8 ratio")
def test_depth_8_gradient_ratio_is_4_97e_07_plain_versus_0_337_with_batch_norm(init_ratio, quoted):
    """Workshop: "init gradient ratio L1/out: plain = 4.97e-07, batch norm = 3.37e-01": four more
    sigmoid layers cost the plain net another factor of about 700 (to one figure) on top of
    its 3.32e-04 at depth 4; batch norm's barely moves: less than 2x either way from its
    2.29e-01 at depth 4."""
    plain, batch_norm = (
        init_ratio(NetSpec(norm=norm, depth=DEEP_DEPTH)) for norm in ("none", "batch")
    )
    quoted.lines(
        fill.deep_ratio(plain, batch_norm),
        holds={"plain gradient ratio": below(1e-6), "batch norm gradient ratio": above(0.1)},
    )
    plain_4, batch_norm_4 = (init_ratio(NetSpec(norm=norm)) for norm in ("none", "batch"))
    assert about(700).holds(plain_4 / plain), (
        f"plain: {plain_4:.2e} at depth 4, {plain:.2e} at depth 8: {plain_4 / plain:.0f}x"
    )
    assert 1 / 2 < batch_norm / batch_norm_4 < 2, (
        f"batch norm: {batch_norm_4:.2e} at depth 4, {batch_norm:.2e} at depth 8"
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
def test_no_learning_rate_lets_the_depth_8_plain_net_reach_90_percent(lr, runs, workshop, quoted):
    """Workshop: "Depth 8: no learning rate saves the plain net": at lr 0.5, 5 and 50 the test accuracy
    reaches 90% at none of the 81 points its history records (step 1, then every 50 steps),
    the points the log's "first >=90%: never" counts."""
    h = runs.get(f"depth 8 plain, lr = {lr}").history
    quoted.lines(
        fill.run_summary(f"S7 depth 8 plain, lr = {lr}", h),
        holds={"final test accuracy": below(90)},
    )
    assert (why := h.never_at_target(workshop.recorded_steps)) is None, why


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
