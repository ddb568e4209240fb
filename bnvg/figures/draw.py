"""The workshop's fifteen figures, one function each, drawn exactly as the script draws them.

Each function takes the numbers it plots, as the tables the claim has just checked against
their snapshot (`bnvg.figures.series`, or a run's history), and the folder to write to; it
saves one PNG (150 dpi, tight bounding box) and returns its path. Saving is atomic: a figure
is written to a temporary file and renamed, so an interrupted run never leaves half a PNG.

This is the only module that imports matplotlib, so claims that draw nothing never pay for it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no screen; must precede pyplot's import
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from bnvg.experiment.data import TwoMoons
from bnvg.experiment.model import TinyNet
from bnvg.experiment.results import TrainedRun
from bnvg.experiment.runtime import torch
from claimlog import Table

RED, GREEN, BLUE, ORANGE, PURPLE = "#d32f2f", "#2e7d32", "#1976d2", "#ef6c00", "#6a1b9a"


def save(fig: Figure, folder: Path, name: str) -> Path:
    """Save `fig` as folder/name and close it (claimlog keeps what was drawn, and an update
    records it as one transaction)."""
    path = folder / name
    try:
        fig.savefig(path, dpi=150, bbox_inches="tight", format="png")
    finally:
        plt.close(fig)
    return path


# -- S1 / S2 ------------------------------------------------------------------------------------


def two_moons(points: Table, folder: Path) -> Path:
    x1, x2, y = points.columns["x1"], points.columns["x2"], points.columns["class"]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    m0, m1 = y == 0, y == 1
    ax.scatter(x1[m0], x2[m0], s=12, c=BLUE, label="class 0")
    ax.scatter(x1[m1], x2[m1], s=12, c=RED, label="class 1")
    ax.set_xlabel("$x_1$")
    ax.set_ylabel("$x_2$")
    ax.set_title("The two-moons task: no straight line separates these")
    ax.legend()
    ax.grid(alpha=0.3)
    return save(fig, folder, "two_moons.png")


def sigmoid_and_deriv(curve: Table, folder: Path) -> Path:
    z = curve.columns["z"]
    fig, ax = plt.subplots(figsize=(6.8, 4.0))
    ax.plot(z, curve.columns["sigmoid"], color=BLUE, lw=2, label=r"$\sigma(z)$")
    ax.plot(z, curve.columns["slope"], color=ORANGE, lw=2, label=r"slope $\sigma'(z)$")
    ax.axhline(0.25, color=ORANGE, ls=":", lw=1)
    ax.annotate(
        "max slope = 0.25",
        xy=(0, 0.25),
        xytext=(1.6, 0.36),
        arrowprops=dict(arrowstyle="->", color="#333"),
        fontsize=10,
    )
    ax.axvspan(-8, -4, color="grey", alpha=0.15)
    ax.axvspan(4, 8, color="grey", alpha=0.15)
    ax.text(-6, 0.8, "saturated\n(slope ~ 0)", ha="center", fontsize=9, color="#444")
    ax.text(6, 0.8, "saturated\n(slope ~ 0)", ha="center", fontsize=9, color="#444")
    ax.set_xlabel("z")
    ax.set_title("The sigmoid and its slope")
    ax.legend(loc="center left")
    ax.grid(alpha=0.3)
    return save(fig, folder, "sigmoid_and_deriv.png")


def bce_loss(losses: Table, folder: Path) -> Path:
    ps, c = losses.columns["p"], losses.columns
    fig, ax = plt.subplots(figsize=(6.8, 4.0))
    ax.plot(ps, c["loss if y = 1"], color=BLUE, lw=2, label="loss when y = 1:  $-\\ln p$")
    ax.plot(ps, c["loss if y = 0"], color=RED, lw=2, label="loss when y = 0:  $-\\ln(1-p)$")
    ax.axhline(math.log(2), color="#555", ls=":", lw=1.2)
    ax.annotate(
        "ln 2 = 0.693 (the 'learned nothing' score,\nat p = 0.5)",
        xy=(0.5, math.log(2)),
        xytext=(0.53, 2.2),
        arrowprops=dict(arrowstyle="->", color="#333"),
        fontsize=9,
    )
    ax.set_xlabel("predicted probability p")
    ax.set_ylabel("cross-entropy loss")
    ax.set_ylim(0, 5)
    ax.set_title("Binary cross-entropy loss")
    ax.legend()
    ax.grid(alpha=0.3)
    return save(fig, folder, "bce_loss.png")


# -- S4: at initialisation ----------------------------------------------------------------------


def _grad_by_layer(ax: Axes, grads: Table, column: str, marker: str, color: str) -> None:
    positions = list(range(1, len(grads.index) + 1))
    ax.semilogy(positions, list(grads.columns[column]), marker, color=color, lw=2, label=column)


def _layer_ticks(ax: Axes, positions: Sequence[str]) -> None:
    ax.set_xticks(list(range(1, len(positions) + 1)))
    ax.set_xticklabels(list(positions))


def grad_norms_by_layer(grads: Table, folder: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6.8, 4.2))
    _grad_by_layer(ax, grads, "plain", "o-", RED)
    _grad_by_layer(ax, grads, "with batch norm", "s-", GREEN)
    _layer_ticks(ax, grads.index)
    ax.set_ylabel(r"$\|\partial L/\partial W\|$  (log scale)")
    ax.set_title("Weight-gradient size per layer, at initialization")
    ax.legend()
    ax.grid(alpha=0.3, which="both")
    return save(fig, folder, "grad_norms_by_layer.png")


def grad_norms_plain(grads: Table, folder: Path) -> Path:
    """The same chart with the plain net alone: the workshop studies the plain net's cliff
    before batch norm is introduced, so its copy must not spoil the batch-norm line."""
    fig, ax = plt.subplots(figsize=(6.8, 4.2))
    _grad_by_layer(ax, grads, "plain", "o-", RED)
    _layer_ticks(ax, grads.index)
    ax.set_ylabel(r"$\|\partial L/\partial W\|$  (log scale)")
    ax.set_title("Weight-gradient size per layer at initialization: the plain net")
    ax.legend()
    ax.grid(alpha=0.3, which="both")
    return save(fig, folder, "grad_norms_plain.png")


def _h_ticks(ax: Axes, layers: Sequence[int]) -> None:
    ax.set_xticks(list(layers))
    ax.set_xticklabels([f"$h_{k}$" for k in layers])


def signal_decay(signal: Table, folder: Path) -> Path:
    layers = list(signal.index)
    fig, ax = plt.subplots(figsize=(6.8, 4.2))
    ax.semilogy(layers, list(signal.columns["plain"]), "o-", color=RED, lw=2, label="plain")
    ax.semilogy(
        layers,
        list(signal.columns["with batch norm"]),
        "s-",
        color=GREEN,
        lw=2,
        label="with batch norm",
    )
    _h_ticks(ax, layers)
    ax.set_ylabel(r"$\|\partial L/\partial h_k\|$  (log scale)")
    ax.set_title("The backward signal at each depth, at initialization")
    ax.legend()
    ax.grid(alpha=0.3, which="both")
    return save(fig, folder, "signal_decay.png")


def act_std_by_layer(spread: Table, folder: Path) -> Path:
    layers = list(spread.index)
    fig, ax = plt.subplots(figsize=(6.8, 4.2))
    ax.plot(
        layers, list(spread.columns["plain"]), "o-", color=RED, lw=2, label="plain: std of $h_k$"
    )
    ax.plot(
        layers,
        list(spread.columns["batch norm"]),
        "s-",
        color=GREEN,
        lw=2,
        label="batch norm: std of $h_k$",
    )
    _h_ticks(ax, layers)
    ax.set_ylabel("std of activations across the batch")
    ax.set_title("Forward signal: how much the activations still vary, per layer")
    ax.legend()
    ax.grid(alpha=0.3)
    return save(fig, folder, "act_std_by_layer.png")


# -- S5 -----------------------------------------------------------------------------------------


def geometric_decay(decay: Table, folder: Path) -> Path:
    depths = np.asarray(decay.index)
    fig, ax = plt.subplots(figsize=(6.8, 4.2))
    for (factor, left), c in zip(decay.columns.items(), [GREEN, ORANGE, RED, PURPLE], strict=True):
        ax.semilogy(depths, left, "o-", lw=2, color=c, label=f"factor {factor} per layer")
    ax.set_xlabel("layers travelled backward")
    ax.set_ylabel("remaining gradient size (log scale)")
    ax.set_title("Multiplying one factor per layer is geometric decay")
    ax.legend()
    ax.grid(alpha=0.3, which="both")
    return save(fig, folder, "geometric_decay.png")


# -- S6 / S7: training (each curve is a run's verified history) ---------------------------------

LOSS, ACCURACY = "train loss", "test accuracy %"


def _curve(ax: Axes, history: Table, column: str, color: str, label: str) -> None:
    ax.plot(list(history.index), list(history.columns[column]), color=color, lw=2, label=label)


def loss_curves(plain: Table, batch_norm: Table, steps: int, folder: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6.8, 4.2))
    _curve(ax, plain, LOSS, RED, "plain")
    _curve(ax, batch_norm, LOSS, GREEN, "with batch norm")
    ax.axhline(math.log(2), color="#555", ls=":", lw=1.2)
    ax.text(steps * 0.72, math.log(2) + 0.02, "ln 2 (learned nothing)", fontsize=9, color="#333")
    ax.set_xlabel("training step")
    ax.set_ylabel("training loss (full set)")
    ax.set_title("Training loss: plain vs batch norm")
    ax.legend()
    ax.grid(alpha=0.3)
    return save(fig, folder, "loss_curves.png")


def accuracy_curves(plain: Table, batch_norm: Table, steps: int, folder: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6.8, 4.2))
    _curve(ax, plain, ACCURACY, RED, "plain")
    _curve(ax, batch_norm, ACCURACY, GREEN, "with batch norm")
    ax.axhline(50, color="#555", ls=":", lw=1.2)
    ax.text(steps * 0.75, 51, "coin flip (50%)", fontsize=9, color="#333")
    ax.set_xlabel("training step")
    ax.set_ylabel("test accuracy (%)")
    ax.set_ylim(40, 100)
    ax.set_title("Test accuracy: plain vs batch norm")
    ax.legend()
    ax.grid(alpha=0.3)
    return save(fig, folder, "accuracy_curves.png")


def _decision_boundary(ax: Axes, net: TinyNet, data: TwoMoons, title: str) -> None:
    """The trained net's probability over a grid of the input plane, with the p = 0.5
    contour as the decision boundary and the test points on top."""
    xs = np.linspace(-1.8, 2.8, 300)
    ys = np.linspace(-1.4, 1.9, 300)
    gx, gy = np.meshgrid(xs, ys)
    grid = torch.from_numpy(np.stack([gx.ravel(), gy.ravel()], axis=1).astype(np.float32))
    net.eval()
    with torch.no_grad():
        p = torch.sigmoid(net(grid)).reshape(gx.shape).numpy()
    ax.contourf(gx, gy, p, levels=20, cmap="RdBu_r", alpha=0.75, vmin=0, vmax=1)
    ax.contour(gx, gy, p, levels=[0.5], colors="k", linewidths=1.4)
    Xt, yt = data.X_test.numpy(), data.y_test.numpy()
    ax.scatter(Xt[yt == 0, 0], Xt[yt == 0, 1], s=9, c=BLUE, edgecolors="none")
    ax.scatter(Xt[yt == 1, 0], Xt[yt == 1, 1], s=9, c=RED, edgecolors="none")
    ax.set_title(title, fontsize=11)
    ax.set_xticks([])
    ax.set_yticks([])


def decision_boundaries(
    panels: Sequence[tuple[str, TrainedRun, float]], data: TwoMoons, folder: Path
) -> Path:
    """One panel per (name, trained run, its test accuracy)."""
    fig, axes = plt.subplots(1, len(panels), figsize=(9.6, 4.0))
    for ax, (name, run, acc) in zip(axes, panels, strict=True):
        _decision_boundary(ax, run.network(), data, f"{name}: {acc * 100:.1f}% test accuracy")
    fig.suptitle("What each trained network actually learned (black line = decision boundary)")
    return save(fig, folder, "decision_boundaries.png")


def _accuracy_panel(ax: Axes, curves: Mapping[str, Table], colors: Sequence[str]) -> None:
    for (name, history), c in zip(curves.items(), colors, strict=True):
        _curve(ax, history, ACCURACY, c, name)
    ax.axhline(50, color="#555", ls=":", lw=1.2)
    ax.set_xlabel("training step")
    ax.set_ylabel("test accuracy (%)")
    ax.set_ylim(30, 100)


def lr_crank(curves: Mapping[str, Table], depth: int, folder: Path) -> Path:
    """Test accuracy of the plain net at each learning rate (keys are legend labels)."""
    fig, ax = plt.subplots(figsize=(6.8, 4.2))
    _accuracy_panel(ax, curves, [RED, ORANGE, PURPLE])
    ax.set_title(f"Cranking the learning rate, plain net, depth {depth}")
    ax.legend()
    ax.grid(alpha=0.3)
    return save(fig, folder, "lr_crank.png")


def depth8_rescue(curves: Mapping[str, Table], depth: int, folder: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6.8, 4.2))
    _accuracy_panel(ax, curves, [RED, ORANGE, PURPLE, GREEN])
    ax.set_title(f"Depth {depth}: no learning rate saves the plain net; batch norm just works")
    ax.legend(fontsize=9)
    ax.grid(alpha=0.3)
    return save(fig, folder, "depth8_rescue.png")


# -- S8 -----------------------------------------------------------------------------------------


def variants_accuracy(final: Table, folder: Path) -> Path:
    """Horizontal bars of each variant's final test accuracy, red below 60%."""
    names = list(final.index)
    accs = list(final.columns["final test accuracy %"])
    colors = [RED if a < 60 else GREEN for a in accs]
    fig, ax = plt.subplots(figsize=(7.2, 4.0))
    bars = ax.barh(names[::-1], accs[::-1], color=colors[::-1])
    ax.axvline(50, color="#555", ls=":", lw=1.2)
    ax.text(51, len(names) - 0.62, "coin flip", fontsize=9, color="#333")
    ax.set_xlabel("final test accuracy (%)")
    ax.set_xlim(0, 100)
    ax.set_title("Every fix works; the plain sigmoid net does not")
    for bar, a in zip(bars, accs[::-1], strict=True):
        ax.text(
            bar.get_width() + 1,
            bar.get_y() + bar.get_height() / 2,
            f"{a:.1f}%",
            va="center",
            fontsize=9,
        )
    ax.grid(alpha=0.3, axis="x")
    return save(fig, folder, "variants_accuracy.png")


def relu_and_deriv(relu: Table, folder: Path) -> Path:
    zs = relu.columns["z"]
    fig, ax = plt.subplots(figsize=(6.8, 4.0))
    ax.plot(zs, relu.columns["relu"], color=BLUE, lw=2, label="ReLU(z)")
    ax.plot(zs, relu.columns["slope"], color=ORANGE, lw=2, label="slope of ReLU")
    ax.annotate(
        "slope exactly 1\n(no shrinkage)",
        xy=(2.5, 1.0),
        xytext=(0.7, 2.2),
        arrowprops=dict(arrowstyle="->", color="#333"),
        fontsize=10,
    )
    ax.set_xlabel("z")
    ax.set_title("ReLU and its slope")
    ax.legend(loc="upper left")
    ax.grid(alpha=0.3)
    return save(fig, folder, "relu_and_deriv.png")
