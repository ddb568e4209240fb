"""The shape of results.log: which line says what, at which line number.

The workshop cites the log by line number ("lines 25 and 29"), so the layout is fixed: each
line is either text that holds no measured number (headers, blank lines, table headings) or a
`Slot` that one claim owns and fills with the line it verified. A slot whose claim failed or
did not run keeps its place, so every other line keeps its number.
"""

from __future__ import annotations

from dataclasses import dataclass

from bnvg import logformat as fmt
from bnvg.config import WORKSHOP, Workshop


@dataclass(frozen=True)
class Slot:
    """A line owned by a claim, named by `key` (e.g. "S9 batches of 2")."""

    key: str


Line = str | Slot

# Figures, in the order the log notes them; each is drawn by the claim that owns its slot.
FIGURES = (
    "two_moons.png",
    "sigmoid_and_deriv.png",
    "bce_loss.png",
    "grad_norms_by_layer.png",
    "grad_norms_plain.png",
    "signal_decay.png",
    "act_std_by_layer.png",
    "geometric_decay.png",
    "loss_curves.png",
    "accuracy_curves.png",
    "decision_boundaries.png",
    "lr_crank.png",
    "depth8_rescue.png",
    "variants_accuracy.png",
    "relu_and_deriv.png",
)

S8_VARIANTS = ("plain sigmoid", "batch norm", "ReLU", "Xavier init", "residual", "layer norm")


def plot(name: str) -> Slot:
    return Slot(f"plot {name}")


def _at_init_table(which: str, depth: int) -> list[Line]:
    rows: list[Line] = [Slot(f"S4 {which} loss"), fmt.at_init_header()]
    rows += [Slot(f"S4 {which} layer {k}") for k in range(1, depth + 1)]
    rows += [Slot(f"S4 {which} output"), Slot(f"S4 {which} ratio"), Slot(f"S4 {which} shrink")]
    return rows


def layout(workshop: Workshop = WORKSHOP) -> tuple[Line, ...]:
    """Every line of results.log, in order (line n of the log is element n - 1)."""
    lines: list[Line] = [
        fmt.RULE,
        "Batch Norm vs Vanishing Gradients -- experiment log",
        Slot("versions"),
        fmt.network(workshop),
        fmt.RULE,
        "",
        "[S1] two-moons dataset",
        Slot("S1 samples"),
        Slot("S1 split"),
        Slot("S1 feature std"),
        plot("two_moons.png"),
        "",
        "[S2] sigmoid and loss facts",
        Slot("S2 max slope"),
        Slot("S2 slope at 4"),
        Slot("S2 BCE at p = 0.5"),
        *(Slot(f"S2 autograd {i}") for i in range(1, 5)),
        plot("sigmoid_and_deriv.png"),
        plot("bce_loss.png"),
        "",
        "[S3] the networks",
        Slot("S3 parameters"),
        *(Slot(f"S3 checksum {i}") for i in range(1, 4)),
        Slot("S3 layer-2 weights"),
        "",
        "[S4] at-init measurements (full train batch, one backward pass)",
        "",
        *_at_init_table("plain", workshop.depth),
        "",
        *_at_init_table("batch", workshop.depth),
        *(plot(name) for name in FIGURES[3:7]),
        "",
        "[S5] geometric decay illustration (pure arithmetic)",
        *(Slot(f"S5 factor {i}") for i in range(1, 5)),
        plot("geometric_decay.png"),
        "",
        fmt.section_s6(workshop),
        Slot("S6 plain"),
        Slot("S6 batch norm"),
        Slot("S6 chance"),
        *(plot(name) for name in FIGURES[8:11]),
        "",
        f"[S7] brute force vs depth ({workshop.steps} steps each)",
        f"  depth {workshop.depth} (the net from S6):",
        Slot("S7 lr 5.0"),
        Slot("S7 lr 50.0"),
        Slot("S7 lr 0.5 recall"),
        plot("lr_crank.png"),
        "",
        "  depth 8 (same width, same recipe):",
        Slot("S7 depth 8 ratio"),
        *(Slot(f"S7 depth 8 plain, lr = {lr}") for lr in (0.5, 5.0, 50.0)),
        Slot("S7 depth 8 batch norm"),
        plot("depth8_rescue.png"),
        "",
        "[S8] the other fixes (same init where applicable, same training recipe)",
        Slot("S8 xavier std"),
        "",
        fmt.variants_header(),
        *(Slot(f"S8 {name}") for name in S8_VARIANTS),
        plot("variants_accuracy.png"),
        plot("relu_and_deriv.png"),
        "",
        "[S9] the model.eval() bug (using the trained batch-norm net from S6)",
        Slot("S9 eval mode"),
        Slot("S9 train mode, full batch"),
        Slot("S9 train mode, batches of 2"),
        Slot("S9 gamma"),
        Slot("S9 beta"),
        "",
        "done. every figure written to diagrams/, every number above is citable.",
    ]
    return tuple(lines)


def slot_keys(workshop: Workshop = WORKSHOP) -> tuple[str, ...]:
    return tuple(line.key for line in layout(workshop) if isinstance(line, Slot))


def key_at(number: int, workshop: Workshop = WORKSHOP) -> str | None:
    """The slot key of log line `number`, or None for fixed text or a line past the end."""
    lines = layout(workshop)
    if 1 <= number <= len(lines):
        line = lines[number - 1]
        return line.key if isinstance(line, Slot) else None
    return None


def line_number(key: str, workshop: Workshop = WORKSHOP) -> int:
    """The 1-based line of results.log that slot `key` fills."""
    for n, line in enumerate(layout(workshop), start=1):
        if isinstance(line, Slot) and line.key == key:
            return n
    raise ValueError(f"no log line is called {key!r}; see bnvg.layout.slot_keys()")
