"""What each figure plots, as tables of numbers: checked against their snapshot, then drawn.

A figure claim first compares these numbers with the stored ones (`claimlog.plugin.quoting`),
then draws exactly them (`bnvg.figures.draw`). The arrays keep the dtype the script plotted
(float32 for torch's curves and the data set), so the PNGs stay byte-identical to the
script's. Training curves are not here: they are the runs' histories
(`bnvg.experiment.runs.history_table`), stored once per run.

No matplotlib here: checking the numbers does not need it. torch only where a curve is
torch's (imported there): the tables of the data set, the at-init measurements and the
geometric decay are made without it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from claimlog import Table

if TYPE_CHECKING:
    from bnvg.experiment.data import TwoMoons
    from bnvg.experiment.results import AtInit
    from bnvg.experiment.sigmoid_facts import SlopeCurve

BCE_GRID = (0.001, 0.999, 999)  # predicted probabilities p at which the loss is drawn
RELU_GRID = (-4.0, 4.0, 1001)  # z at which ReLU and its slope are drawn
DECAY_LAYERS = 11  # the geometric decay is drawn over 0 .. 10 layers


def two_moons(data: TwoMoons) -> Table:
    """Every point of the data set, train and test, with its class."""
    return Table.of_figure(
        "two_moons.png",
        "point",
        range(len(data.X)),
        {"x1": data.X[:, 0], "x2": data.X[:, 1], "class": data.y},
    )


def sigmoid_and_slope(curve: SlopeCurve) -> Table:
    return Table.of_figure(
        "sigmoid_and_deriv.png",
        "point",
        range(len(curve.z)),
        {"z": curve.z.numpy(), "sigmoid": curve.sigmoid.numpy(), "slope": curve.slope.numpy()},
    )


def sigmoid_and_slope_curve() -> Table:
    """The sigmoid and its slope on the workshop's grid (`sigmoid_facts.slope_curve`)."""
    from bnvg.experiment.sigmoid_facts import slope_curve

    return sigmoid_and_slope(slope_curve())


def bce_loss() -> Table:
    """The loss for each label over the predicted probability p."""
    from bnvg.experiment.runtime import torch

    ps = torch.linspace(*BCE_GRID)
    return Table.of_figure(
        "bce_loss.png",
        "point",
        range(len(ps)),
        {
            "p": ps.numpy(),
            "loss if y = 1": (-torch.log(ps)).numpy(),
            "loss if y = 0": (-torch.log(1 - ps)).numpy(),
        },
    )


def relu_and_slope() -> Table:
    from bnvg.experiment.runtime import torch

    zs = torch.linspace(*RELU_GRID)
    return Table.of_figure(
        "relu_and_deriv.png",
        "point",
        range(len(zs)),
        {"z": zs.numpy(), "relu": torch.relu(zs).numpy(), "slope": (zs > 0).float().numpy()},
    )


def _positions(depth: int) -> list[str]:
    return [f"hidden {k}" for k in range(1, depth + 1)] + ["output"]


def grad_norms_by_layer(plain: AtInit, batch_norm: AtInit) -> Table:
    """||dL/dW|| of every layer, output included, for both nets."""
    return Table.of_figure(
        "grad_norms_by_layer.png",
        "layer",
        _positions(len(plain.layers)),
        {
            "plain": [r.w_grad for r in plain.layers] + [plain.out_grad],
            "with batch norm": [r.w_grad for r in batch_norm.layers] + [batch_norm.out_grad],
        },
    )


def grad_norms_plain(plain: AtInit) -> Table:
    return Table.of_figure(
        "grad_norms_plain.png",
        "layer",
        _positions(len(plain.layers)),
        {"plain": [r.w_grad for r in plain.layers] + [plain.out_grad]},
    )


def signal_decay(plain: AtInit, batch_norm: AtInit) -> Table:
    """||dL/dh_k||, the backward signal arriving at each hidden layer."""
    return Table.of_figure(
        "signal_decay.png",
        "layer",
        [r.layer for r in plain.layers],
        {
            "plain": [r.h_grad for r in plain.layers],
            "with batch norm": [r.h_grad for r in batch_norm.layers],
        },
    )


def act_std_by_layer(plain: AtInit, batch_norm: AtInit) -> Table:
    """The std of each hidden layer's activations over the batch."""
    return Table.of_figure(
        "act_std_by_layer.png",
        "layer",
        [r.layer for r in plain.layers],
        {
            "plain": [r.h_std for r in plain.layers],
            "batch norm": [r.h_std for r in batch_norm.layers],
        },
    )


def geometric_decay(factors: Sequence[float]) -> Table:
    """factor ** k for k = 0 .. 10 layers, one column per factor."""
    depths = np.arange(0, DECAY_LAYERS)
    return Table.of_figure(
        "geometric_decay.png",
        "layers",
        depths.tolist(),
        {str(f): f ** depths.astype(float) for f in factors},
    )


def variants_accuracy(final_acc: Mapping[str, float]) -> Table:
    """One bar per S8 variant: its final test accuracy in percent."""
    return Table.of_figure(
        "variants_accuracy.png",
        "variant",
        list(final_acc),
        {"final test accuracy %": [a * 100 for a in final_acc.values()]},
    )
