"""From the experiment's results to the log's lines: which number fills which field.

Each function takes results of `bnvg.experiment` and returns the filled `LogLine`s a claim
quotes, their readings named by the layout ("S6 batch norm, final train loss"). Accuracies
are printed in percent, computed as the script computes them (`acc * 100`), so a reading's
full-precision value is the one the script formatted.

Only the result types are imported, and only for type checking: the log must load without
torch (the xdist controller writes it and never imports torch).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from bnvg.log.layout import AT_INIT_NETS, line_named
from claimlog import LogLine

if TYPE_CHECKING:
    from bnvg.experiment.data import TwoMoons
    from bnvg.experiment.results import AtInit, EvalBug, History, LogitGradient


def versions(torch_version: str, numpy_version: str) -> LogLine:
    return line_named("versions").fill({"torch": torch_version, "numpy": numpy_version})


def plot_saved(name: str) -> LogLine:
    return line_named(f"plot {name}").fill()


# -- S1 -----------------------------------------------------------------------------------------


def samples(data: TwoMoons) -> LogLine:
    n = len(data.X)
    return line_named("S1 samples").fill(samples=n, per_class=n // 2)


def split(n_train: int, n_test: int) -> LogLine:
    return line_named("S1 split").fill(train=n_train, test=n_test)


def feature_std(x1: float, x2: float) -> LogLine:
    return line_named("S1 feature std").fill(x1=x1, x2=x2)


# -- S2 -----------------------------------------------------------------------------------------


def max_slope(slope: float, z: float) -> LogLine:
    return line_named("S2 max slope").fill(slope=slope, z=z)


def saturated_slope(slope: float) -> LogLine:
    return line_named("S2 saturated slope").fill(slope=slope)


def bce_at_half(loss: float, ln2: float) -> LogLine:
    return line_named("S2 BCE at p = 0.5").fill(loss=loss, ln2=ln2)


def autograd_check(g: LogitGradient) -> list[LogLine]:
    """The four lines of the autograd check of dL/dz = p - y."""
    return [
        line_named("S2 autograd check").fill(),
        line_named("S2 autograd p").fill(p=g.p),
        line_named("S2 autograd formula").fill(formula=g.formula),
        line_named("S2 autograd dL/dz").fill(gradient=g.autograd),
    ]


# -- S3 -----------------------------------------------------------------------------------------


def parameters(n: int) -> LogLine:
    return line_named("S3 parameters").fill(n=n)


def checksums(plain: float, batch_norm: float) -> list[LogLine]:
    return [
        line_named("S3 checksum plain").fill(sum=plain),
        line_named("S3 checksum bn").fill(sum=batch_norm),
        line_named("S3 identical weights").fill(same=plain == batch_norm),
    ]


def weight_stats(std: float, max_abs: float) -> LogLine:
    return line_named("S3 layer-2 weights").fill(std=std, max_abs=max_abs)


# -- S4 -----------------------------------------------------------------------------------------


def at_init_table(net: str, m: AtInit) -> list[LogLine]:
    """One net's S4 table: its loss line, one row per hidden layer and the output row."""
    if net not in AT_INIT_NETS:
        raise ValueError(f"unknown net {net!r}: valid are " + ", ".join(map(repr, AT_INIT_NETS)))
    rows = [line_named(f"S4 {net} loss").fill(loss=m.loss)]
    rows += [
        line_named(f"S4 {net} layer {r.layer}").fill(
            w_grad=r.w_grad,
            h_grad=r.h_grad,
            z_pre_std=r.z_pre_std,
            z_std=r.z_std,
            h_std=r.h_std,
            slope=r.slope,
            sat_pct=r.sat_pct,
            w_gain=r.w_gain,
        )
        for r in m.layers
    ]
    rows.append(line_named(f"S4 {net} output").fill(out_grad=m.out_grad))
    return rows


def at_init_ratio(net: str, m: AtInit) -> LogLine:
    return line_named(f"S4 {net} ratio").fill(ratio=m.grad_ratio, times=m.times_smaller)


def at_init_shrink(net: str, m: AtInit) -> LogLine:
    factors = {f"f{k}": f for k, f in enumerate(m.shrink_factors, start=1)}
    return line_named(f"S4 {net} shrink").fill(**factors)


# -- S5 -----------------------------------------------------------------------------------------


def decay(factor: float, after_shallow: float, after_deep: float) -> LogLine:
    return line_named(f"S5 factor {factor}").fill(
        after_shallow=after_shallow, after_deep=after_deep
    )


# -- S6 / S7 ------------------------------------------------------------------------------------


def run_summary(key: str, h: History) -> LogLine:
    """A training run's line: final loss, final accuracy and the first step at >= 90%."""
    return line_named(key).fill(
        final_loss=h.final_loss, final_acc=h.final_acc * 100, first=h.first_step_at_target
    )


def chance(ln2: float) -> LogLine:
    return line_named("S6 chance").fill(ln2=ln2)


def s6_recall(h: History) -> LogLine:
    return line_named("S7 lr 0.5 recall").fill(final_acc=h.final_acc * 100)


def deep_ratio(plain: float, batch_norm: float) -> LogLine:
    return line_named("S7 depth 8 ratio").fill(plain=plain, batch_norm=batch_norm)


# -- S8 -----------------------------------------------------------------------------------------


def xavier_std(xavier: float, default: float) -> LogLine:
    return line_named("S8 xavier std").fill(xavier=xavier, default=default)


def variant_row(name: str, ratio: float, final_acc: float) -> LogLine:
    """One row of the S8 table; `final_acc` is the run's final accuracy as a fraction."""
    return line_named(f"S8 {name}").fill(ratio=ratio, final_acc=final_acc * 100)


# -- S9 -----------------------------------------------------------------------------------------


def eval_mode(result: EvalBug) -> LogLine:
    return line_named("S9 eval mode").fill(acc=result.eval_mode * 100)


def train_mode_full_batch(result: EvalBug) -> LogLine:
    return line_named("S9 train mode, full batch").fill(acc=result.train_mode_full_batch * 100)


def train_mode_small_batches(result: EvalBug) -> LogLine:
    line = line_named("S9 train mode, batches of 2")
    if result.batch != line.settings["batch"]:
        raise ValueError(f"the log's S9 line prints batches of {line.settings['batch']}")
    return line.fill(acc=result.train_mode_small_batches * 100)


def learned(parameter: str, values: Sequence[float]) -> LogLine:
    """`learned gamma (BN layer 1) = [...]`: one value per neuron of the first batch norm layer."""
    return line_named(f"S9 {parameter}").fill(**{f"n{k}": v for k, v in enumerate(values, 1)})
