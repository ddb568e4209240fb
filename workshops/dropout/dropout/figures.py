"""The workshop's one figure: training and test accuracy, without and with dropout."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from claimlog import Table


def accuracies(table: Table, true_labels: float, folder: Path) -> Path:
    """Grouped bars: for each run, its training and its test accuracy; a dashed line at the
    share of training labels that are true (what a net that learned no flipped label scores)."""
    fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
    runs = list(table.index)
    xs = range(len(runs))
    for offset, column in ((-0.2, "training accuracy %"), (0.2, "test accuracy %")):
        ax.bar([x + offset for x in xs], table.columns[column], width=0.4, label=column)
    ax.axhline(true_labels, color="grey", linestyle="--", label="training labels that are true")
    ax.set_xticks(list(xs), runs)
    ax.set_ylim(50, 100)
    ax.set_ylabel("accuracy (%)")
    ax.set_title("Dropout trades training accuracy for test accuracy")
    ax.legend(loc="lower right")
    fig.tight_layout()
    path = folder / "accuracies.png"
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)
    return path
