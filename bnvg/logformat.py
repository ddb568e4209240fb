"""The text of every numeric line of results.log, character for character as the script prints it.

The workshop cites its log by line number and quotes numbers at the precision printed here,
so these format strings are part of the contract: a changed width or precision would move a
quoted number. Each function returns one line, without its newline.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from bnvg.config import WORKSHOP, Workshop

if TYPE_CHECKING:  # only the types: the log's layout must load without torch (see plugin)
    from bnvg.eval_bug import EvalBug
    from bnvg.measure import AtInit, LayerStats
    from bnvg.sigmoid_facts import LogitGradient, SlopeCurve
    from bnvg.train import History

RULE = "=" * 72


def percent(fraction: float) -> str:
    """A fraction as the log prints accuracies: 0.715 -> '71.5%'."""
    return f"{fraction * 100:.1f}%"


# -- header -------------------------------------------------------------------------------------


def versions(torch_version: str, numpy_version: str, seed: int) -> str:
    return f"torch {torch_version} | numpy {numpy_version} | seed {seed}"


def network(workshop: Workshop = WORKSHOP) -> str:
    return (
        f"network: {workshop.depth} hidden layers x {workshop.width} neurons, sigmoid activations"
    )


def plot_saved(name: str) -> str:
    return f"  [plot saved: diagrams/{name}]"


# -- S1 -----------------------------------------------------------------------------------------


def samples(n_samples: int, noise: float) -> str:
    return f"  samples: {n_samples} ({n_samples // 2} per class), noise sigma = {noise}"


def split(n_train: int, n_test: int) -> str:
    return f"  split: {n_train} train / {n_test} test"


def feature_std(x1: float, x2: float) -> str:
    return f"  input feature std: x1 = {x1:.3f}, x2 = {x2:.3f}"


# -- S2 -----------------------------------------------------------------------------------------


def max_slope(curve: SlopeCurve) -> str:
    return f"  max sigmoid slope     = {curve.max_slope:.6f}  at z = {curve.argmax_z:+.4f}"


def slope_at_4(slope: float) -> str:
    return f"  slope at z = +/-4     = {slope:.6f}"


def bce_at_half(loss: float, ln2: float) -> str:
    return f"  BCE loss at p = 0.5   = {loss:.6f}   (ln 2 = {ln2:.6f})"


def logit_gradient(g: LogitGradient) -> list[str]:
    """The four lines of the autograd check of dL/dz = p - y."""
    return [
        f"  autograd check at z = {g.z}, y = {g.y:g}:",
        f"    p = sigmoid({g.z})    = {g.p:.6f}",
        f"    formula p - y       = {g.formula:+.6f}",
        f"    autograd dL/dz      = {g.autograd:+.6f}",
    ]


# -- S3 -----------------------------------------------------------------------------------------


def parameters(n: int) -> str:
    return f"  plain net parameters: {n}"


def checksums(plain: float, bn: float) -> list[str]:
    return [
        f"  hidden-weight checksum, plain = {plain:.6f}",
        f"  hidden-weight checksum, bn    = {bn:.6f}",
        f"  identical starting weights: {plain == bn}",
    ]


def weight_stats(std: float, max_abs: float, fan_in: int) -> str:
    return (
        f"  layer-2 weight stats: std = {std:.4f}, "
        f"max|w| = {max_abs:.4f}  (PyTorch default init, fan_in = {fan_in})"
    )


# -- S4 -----------------------------------------------------------------------------------------

AT_INIT_LABELS = {
    "plain": "PLAIN (Linear -> sigmoid)",
    "batch": "BATCHNORM (Linear -> BN -> sigmoid)",
}


def at_init_loss(label: str, m: AtInit) -> str:
    return f"  {label}: loss at init = {m.loss:.4f}"


def at_init_header() -> str:
    return (
        f"  {'layer':>7} {'||dL/dW||':>12} {'||dL/dh||':>12} {'std(z_pre)':>11} "
        f"{'std(z)':>8} {'std(h)':>8} {'mean slope':>11} {'%slope<.05':>11} {'W gain':>7}"
    )


def at_init_row(r: LayerStats) -> str:
    return (
        f"  {r.layer:>7} {r.w_grad:>12.2e} {r.h_grad:>12.2e} "
        f"{r.z_pre_std:>11.4f} {r.z_std:>8.4f} {r.h_std:>8.4f} "
        f"{r.slope:>11.4f} {r.sat_pct:>10.1f}% {r.w_gain:>7.3f}"
    )


def at_init_output(m: AtInit) -> str:
    return f"  {'output':>7} {m.out_grad:>12.2e}"


def at_init_ratio(m: AtInit) -> str:
    return (
        f"  gradient ratio, layer 1 vs output: {m.grad_ratio:.2e}  ({m.times_smaller:.0f}x smaller)"
    )


def at_init_shrink(m: AtInit) -> str:
    return "  backward shrink factor per layer (||dL/dh_k|| / ||dL/dh_k+1||): " + ", ".join(
        f"{f:.3f}" for f in m.shrink_factors
    )


# -- S5 -----------------------------------------------------------------------------------------


def decay(factor: float, after_4: float, after_10: float) -> str:
    return f"  factor {factor}: after 4 layers -> {after_4:.2e}, after 10 layers -> {after_10:.2e}"


# -- S6 / S7: training runs ---------------------------------------------------------------------


def first_at_target(h: History) -> str:
    step = h.first_step_at_target
    return f"step {step}" if step else "never"


def run_summary(label: str, h: History) -> str:
    """One training run's line: final loss, final accuracy and first step at >= 90%."""
    return (
        f"  {label:<28} final train loss = {h.final_loss:.4f}, "
        f"final test acc = {percent(h.final_acc)}, first >=90%: {first_at_target(h)}"
    )


def section_s6(workshop: Workshop = WORKSHOP) -> str:
    return f"[S6] training runs (SGD, lr = {workshop.lr}, batch = {workshop.batch}, {workshop.steps} steps)"


def chance(ln2: float) -> str:
    return f"  chance accuracy = 50.0% | 'learned nothing' loss = ln 2 = {ln2:.4f}"


def s6_recall(lr: float, h: History) -> str:
    return f"    (lr = {lr} = the S6 run: final test acc = {percent(h.final_acc)})"


def deep_ratio(plain: float, bn: float) -> str:
    return f"    init gradient ratio L1/out: plain = {plain:.2e}, batch norm = {bn:.2e}"


# -- S8 -----------------------------------------------------------------------------------------


def xavier_std(xavier: float, default: float) -> str:
    return f"  xavier layer-2 weight std = {xavier:.4f} (default was {default:.4f})"


def variants_header() -> str:
    return f"  {'variant':<16} {'init grad ratio L1/out':>23} {'final test acc':>15}"


def variant_row(name: str, ratio: float, final_acc: float) -> str:
    return f"  {name:<16} {ratio:>23.2e} {final_acc * 100:>14.1f}%"


# -- S9 -----------------------------------------------------------------------------------------


def eval_bug(result: EvalBug) -> list[str]:
    return [
        f"  test accuracy, model.eval() (correct)          = {percent(result.eval_mode)}",
        f"  test accuracy, train mode, full test batch     = {percent(result.train_mode_full_batch)}",
        f"  test accuracy, train mode, batches of 2        = {percent(result.train_mode_batches_of_2)}",
    ]


def learned(name: str, values: Sequence[float]) -> str:
    """`learned gamma (BN layer 1) = ['1.42', ...]`: the list of two-decimal strings."""
    return f"  learned {name:<5} (BN layer 1) = {[f'{v:.2f}' for v in values]}"
