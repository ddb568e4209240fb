"""This workshop's results.log: the wording of every line, and which line says what, where.

First the wording, character for character as the script prints it: each line's claimlog
`Template`, with a `Quantity` per number it prints. Then the layout (`layout()`): every line
in order, a claimlog `Line` of a template and what fills it. A claimed line is filled by the
claim that owns it; every other line is filled here, from the recipe (its wording, and the
settings it prints). `log()` is the layout as the workshop declares it (`bnvg.workshop`).
"""

from __future__ import annotations

from functools import cache

from bnvg.experiment.config import (
    CHANCE_PERCENT,
    CHECK_LABEL,
    CHECK_LOGIT,
    CRANK_LRS,
    DECAY_DEPTHS,
    DECAY_FACTORS,
    DEEP_DEPTH,
    DEEP_LRS,
    EVAL_BUG_BATCH,
    SATURATION_Z,
    TARGET_PERCENT,
    WORKSHOP,
    Workshop,
)
from claimlog import Kind, Line, Log, Quantity, Template

# The kinds of number this log prints.
COUNT, STEP, PERCENT, LOSS = Kind.COUNT, Kind.STEP, Kind.PERCENT, Kind.LOSS
RATIO, MAGNITUDE, FRACTION = Kind.RATIO, Kind.MAGNITUDE, Kind.FRACTION
REAL, SETTING, FLAG = Kind.REAL, Kind.SETTING, Kind.FLAG
STEP_SPEC = "step"  # prints a step as "step 100", and None as "never"

# -- every line's wording ---------------------------------------------------------------------
RULE = "=" * 72

# -- the header ---------------------------------------------------------------------------------

NETWORK = Template(
    "network: {depth} hidden layers x {width} neurons, sigmoid activations",
    {"depth": Quantity("hidden layers", SETTING), "width": Quantity("neurons per layer", SETTING)},
)

# -- S1 -----------------------------------------------------------------------------------------

SAMPLES = Template(
    "  samples: {samples} ({per_class} per class), noise sigma = {noise}",
    {
        "samples": Quantity("points", COUNT),
        "per_class": Quantity("points per class", COUNT),
        "noise": Quantity("noise sigma", SETTING),
    },
)
SPLIT = Template(
    "  split: {train} train / {test} test",
    {"train": Quantity("training points", COUNT), "test": Quantity("test points", COUNT)},
)
FEATURE_STD = Template(
    "  input feature std: x1 = {x1}, x2 = {x2}",
    {"x1": Quantity("std of x1", MAGNITUDE, ".3f"), "x2": Quantity("std of x2", MAGNITUDE, ".3f")},
)

# -- S2 -----------------------------------------------------------------------------------------

MAX_SLOPE = Template(
    "  max sigmoid slope     = {slope}  at z = {z}",
    {"slope": Quantity("max slope", FRACTION, ".6f"), "z": Quantity("z at the max", REAL, "+.4f")},
)
SATURATED_SLOPE = Template(
    "  slope at z = +/-{z}     = {slope}",
    {
        "z": Quantity("|z|", SETTING, "g", plus_minus=True),
        "slope": Quantity("slope", FRACTION, ".6f"),
    },
)
BCE_AT_HALF = Template(
    "  BCE loss at p = {p}   = {loss}   (ln 2 = {ln2})",
    {
        "p": Quantity("p", SETTING),
        "loss": Quantity("loss", LOSS, ".6f"),
        "ln2": Quantity("ln 2", LOSS, ".6f"),
    },
)
AUTOGRAD_CHECK = Template(
    "  autograd check at z = {z}, y = {y}:",
    {"z": Quantity("z", SETTING), "y": Quantity("y", SETTING, "g")},
)
AUTOGRAD_P = Template(
    "    p = sigmoid({z})    = {p}",
    {"z": Quantity("z", SETTING), "p": Quantity("p", FRACTION, ".6f")},
)
AUTOGRAD_FORMULA = Template(
    "    formula p - y       = {formula}", {"formula": Quantity("p - y", REAL, "+.6f")}
)
AUTOGRAD_GRADIENT = Template(
    "    autograd dL/dz      = {gradient}", {"gradient": Quantity("dL/dz", REAL, "+.6f")}
)

# -- S3 -----------------------------------------------------------------------------------------

PARAMETERS = Template("  plain net parameters: {n}", {"n": Quantity("parameters", COUNT)})
CHECKSUM_PLAIN = Template(
    "  hidden-weight checksum, plain = {sum}", {"sum": Quantity("sum of |w|", MAGNITUDE, ".6f")}
)
CHECKSUM_BATCH_NORM = Template(
    "  hidden-weight checksum, bn    = {sum}", {"sum": Quantity("sum of |w|", MAGNITUDE, ".6f")}
)
IDENTICAL = Template(
    "  identical starting weights: {same}", {"same": Quantity("checksums equal", FLAG)}
)
WEIGHT_STATS = Template(
    "  layer-2 weight stats: std = {std}, max|w| = {max_abs}  "
    "(PyTorch default init, fan_in = {fan_in})",
    {
        "std": Quantity("std", MAGNITUDE, ".4f"),
        "max_abs": Quantity("max |w|", MAGNITUDE, ".4f"),
        "fan_in": Quantity("fan_in", SETTING),
    },
)

# -- S4 -----------------------------------------------------------------------------------------

AT_INIT_LOSS = Template(
    "  {label}: loss at init = {loss}", {"loss": Quantity("loss at init", LOSS, ".4f")}
)
AT_INIT_HEADER = (
    f"  {'layer':>7} {'||dL/dW||':>12} {'||dL/dh||':>12} {'std(z_pre)':>11} "
    f"{'std(z)':>8} {'std(h)':>8} {'mean slope':>11} {'%slope<.05':>11} {'W gain':>7}"
)
AT_INIT_ROW = Template(
    "  {layer:>7} {w_grad:>12} {h_grad:>12} {z_pre_std:>11} {z_std:>8} {h_std:>8} "
    "{slope:>11} {sat_pct:>10}% {w_gain:>7}",
    {
        "w_grad": Quantity("||dL/dW||", MAGNITUDE, ".2e"),
        "h_grad": Quantity("||dL/dh||", MAGNITUDE, ".2e"),
        "z_pre_std": Quantity("std(z_pre)", MAGNITUDE, ".4f"),
        "z_std": Quantity("std(z)", MAGNITUDE, ".4f"),
        "h_std": Quantity("std(h)", MAGNITUDE, ".4f"),
        "slope": Quantity("mean slope", FRACTION, ".4f"),
        "sat_pct": Quantity("% slope < .05", PERCENT, ".1f"),
        "w_gain": Quantity("W gain", MAGNITUDE, ".3f"),
    },
)
AT_INIT_OUTPUT = Template(
    f"  {'output':>7} {{out_grad:>12}}",
    {"out_grad": Quantity("||dL/dW||", MAGNITUDE, ".2e")},
)
AT_INIT_RATIO = Template(
    "  gradient ratio, layer 1 vs output: {ratio}  ({times}x smaller)",
    {
        "ratio": Quantity("gradient ratio", RATIO, ".2e"),
        "times": Quantity("times smaller", RATIO, ".0f"),
    },
)


def shrink_factors(depth: int) -> Template:
    """The backward shrink per layer, ||dL/dh_k|| / ||dL/dh_k+1||, for k = 1 .. depth - 1."""
    fields = [f"f{k}" for k in range(1, depth)]
    return Template(
        "  backward shrink factor per layer (||dL/dh_k|| / ||dL/dh_k+1||): "
        + ", ".join(f"{{{f}}}" for f in fields),
        {
            f"f{k}": Quantity(f"||dL/dh_{k}|| / ||dL/dh_{k + 1}||", RATIO, ".3f")
            for k in range(1, depth)
        },
    )


# -- S5 -----------------------------------------------------------------------------------------

DECAY = Template(
    "  factor {factor}: after {shallow} layers -> {after_shallow}, "
    "after {deep} layers -> {after_deep}",
    {
        "factor": Quantity("factor per layer", SETTING),
        "shallow": Quantity("shallow depth", SETTING),
        "after_shallow": Quantity("left at the shallow depth", FRACTION, ".2e"),
        "deep": Quantity("deep depth", SETTING),
        "after_deep": Quantity("left at the deep depth", FRACTION, ".2e"),
    },
)

# -- S6 / S7: training runs ---------------------------------------------------------------------

S6_HEADING = Template(
    "[S6] training runs (SGD, lr = {lr}, batch = {batch}, {steps} steps)",
    {
        "lr": Quantity("learning rate", SETTING),
        "batch": Quantity("batch size", SETTING),
        "steps": Quantity("steps", SETTING),
    },
)
_RUN_NUMBERS = {
    "final_loss": Quantity("final train loss", LOSS, ".4f"),
    "final_acc": Quantity("final test accuracy", PERCENT, ".1f"),
    "target": Quantity("target accuracy", SETTING),
    "first": Quantity("first step at the target", STEP, STEP_SPEC),
}
_RUN_WORDING = (
    "  {label:<28} final train loss = {final_loss}, final test acc = {final_acc}%, "
    "first >={target}%: {first}"
)
RUN_SUMMARY = Template(_RUN_WORDING, _RUN_NUMBERS)
RUN_SUMMARY_AT_LR = Template(
    _RUN_WORDING,
    _RUN_NUMBERS,
    parts={"label": Template("  {name}, lr = {lr}", {"lr": Quantity("learning rate", SETTING)})},
)
CHANCE = Template(
    "  chance accuracy = {chance}% | 'learned nothing' loss = ln 2 = {ln2}",
    {
        "chance": Quantity("chance accuracy", PERCENT, ".1f"),
        "ln2": Quantity("ln 2", LOSS, ".4f"),
    },
)
S7_HEADING = Template(
    "[S7] brute force vs depth ({steps} steps each)", {"steps": Quantity("steps", SETTING)}
)
S7_DEPTH_4 = Template(
    "  depth {depth} (the net from S6):", {"depth": Quantity("hidden layers", SETTING)}
)
S7_DEPTH_8 = Template(
    "  depth {depth} (same width, same recipe):", {"depth": Quantity("hidden layers", SETTING)}
)
S6_RECALL = Template(
    "    (lr = {lr} = the S6 run: final test acc = {final_acc}%)",
    {
        "lr": Quantity("learning rate", SETTING),
        "final_acc": Quantity("final test accuracy", PERCENT, ".1f"),
    },
)
DEEP_RATIO = Template(
    "    init gradient ratio L1/out: plain = {plain}, batch norm = {batch_norm}",
    {
        "plain": Quantity("plain gradient ratio", RATIO, ".2e"),
        "batch_norm": Quantity("batch norm gradient ratio", RATIO, ".2e"),
    },
)

# -- S8 -----------------------------------------------------------------------------------------

XAVIER_STD = Template(
    "  xavier layer-2 weight std = {xavier} (default was {default})",
    {
        "xavier": Quantity("Xavier std", MAGNITUDE, ".4f"),
        "default": Quantity("default std", MAGNITUDE, ".4f"),
    },
)
VARIANTS_HEADER = f"  {'variant':<16} {'init grad ratio L1/out':>23} {'final test acc':>15}"
VARIANT_ROW = Template(
    "  {name:<16} {ratio:>23} {final_acc:>14}%",
    {
        "ratio": Quantity("init gradient ratio", RATIO, ".2e"),
        "final_acc": Quantity("final test accuracy", PERCENT, ".1f"),
    },
)

# -- S9 -----------------------------------------------------------------------------------------

_ACCURACY = {"acc": Quantity("test accuracy", PERCENT, ".1f")}
EVAL_MODE = Template("  test accuracy, model.eval() (correct)          = {acc}%", _ACCURACY)
TRAIN_MODE_FULL = Template("  test accuracy, train mode, full test batch     = {acc}%", _ACCURACY)
TRAIN_MODE_SMALL = Template(
    "  test accuracy, train mode, batches of {batch}        = {acc}%",
    {"batch": Quantity("batch size", SETTING), **_ACCURACY},
)


def learned(parameter: str, width: int) -> Template:
    """`  learned gamma (BN layer 1) = ['0.73', ...]`: one two-decimal value per neuron,
    quoted as Python prints a list of strings."""
    fields = [f"n{k}" for k in range(1, width + 1)]
    return Template(
        f"  learned {parameter:<5} (BN layer 1) = ["
        + ", ".join(f"'{{{f}}}'" for f in fields)
        + "]",
        {f"n{k}": Quantity(f"neuron {k}", REAL, ".2f") for k in range(1, width + 1)},
    )


# -- the layout: every line in order -----------------------------------------------------------
_fixed, _claimed, _text = Line.fixed, Line.by_claim, Line.words

BLANK = _text("")

# Figures, in the order the log notes them; each is drawn by the claim that owns its line.
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
AT_INIT_NETS = {
    "plain": "PLAIN (Linear -> sigmoid)",
    "batch": "BATCHNORM (Linear -> BN -> sigmoid)",
}


def plot(name: str) -> Line:
    return Line.plot(name)  # the engine's own line, as every workshop's


def _run(key: str, label: str, lr: float | None = None) -> Line:
    """A training run's summary line; an S7 label prints its learning rate."""
    if lr is None:
        return _claimed(RUN_SUMMARY, key, {"label": label}, target=TARGET_PERCENT)
    return _claimed(RUN_SUMMARY_AT_LR, key, {"name": label}, target=TARGET_PERCENT, lr=lr)


def _at_init_table(net: str, depth: int) -> list[Line]:
    rows = [
        _claimed(AT_INIT_LOSS, f"S4 {net} loss", {"label": AT_INIT_NETS[net]}),
        _text(AT_INIT_HEADER, heading="block"),
    ]
    rows += [
        _claimed(AT_INIT_ROW, f"S4 {net} layer {k}", {"layer": str(k)}) for k in range(1, depth + 1)
    ]
    rows += [
        _claimed(AT_INIT_OUTPUT, f"S4 {net} output"),
        _claimed(AT_INIT_RATIO, f"S4 {net} ratio"),
        _claimed(shrink_factors(depth), f"S4 {net} shrink"),
    ]
    return rows


@cache
def layout(workshop: Workshop = WORKSHOP) -> tuple[Line, ...]:
    """Every line of results.log, in order (line n of the log is element n - 1)."""
    w = workshop
    lines: list[Line] = [
        _text(RULE),
        _text("Batch Norm vs Vanishing Gradients -- experiment log"),
        Line.versions(seed=w.seed),  # the engine's own header line
        _fixed(NETWORK, "network", "document", depth=w.depth, width=w.width),
        _text(RULE),
        BLANK,
        _text("[S1] two-moons dataset", "section"),
        _claimed(SAMPLES, "S1 samples", noise=w.noise),
        _claimed(SPLIT, "S1 split"),
        _claimed(FEATURE_STD, "S1 feature std"),
        plot("two_moons.png"),
        BLANK,
        _text("[S2] sigmoid and loss facts", "section"),
        _claimed(MAX_SLOPE, "S2 max slope"),
        _claimed(SATURATED_SLOPE, "S2 saturated slope", z=SATURATION_Z),
        _claimed(BCE_AT_HALF, "S2 BCE at p = 0.5", p=0.5),
        _claimed(AUTOGRAD_CHECK, "S2 autograd check", z=CHECK_LOGIT, y=CHECK_LABEL),
        _claimed(AUTOGRAD_P, "S2 autograd p", z=CHECK_LOGIT),
        _claimed(AUTOGRAD_FORMULA, "S2 autograd formula"),
        _claimed(AUTOGRAD_GRADIENT, "S2 autograd dL/dz"),
        plot("sigmoid_and_deriv.png"),
        plot("bce_loss.png"),
        BLANK,
        _text("[S3] the networks", "section"),
        _claimed(PARAMETERS, "S3 parameters"),
        _claimed(CHECKSUM_PLAIN, "S3 checksum plain"),
        _claimed(CHECKSUM_BATCH_NORM, "S3 checksum bn"),
        _claimed(IDENTICAL, "S3 identical weights"),
        _claimed(WEIGHT_STATS, "S3 layer-2 weights", fan_in=w.width),
        BLANK,
        _text("[S4] at-init measurements (full train batch, one backward pass)", "section"),
        BLANK,
        *_at_init_table("plain", w.depth),
        BLANK,
        *_at_init_table("batch", w.depth),
        *(plot(name) for name in FIGURES[3:7]),
        BLANK,
        _text("[S5] geometric decay illustration (pure arithmetic)", "section"),
        *(
            _claimed(
                DECAY, f"S5 factor {f}", factor=f, shallow=DECAY_DEPTHS[0], deep=DECAY_DEPTHS[1]
            )
            for f in DECAY_FACTORS
        ),
        plot("geometric_decay.png"),
        BLANK,
        _fixed(S6_HEADING, "S6 recipe", "section", lr=w.lr, batch=w.batch, steps=w.steps),
        _run("S6 plain", "plain"),
        _run("S6 batch norm", "with batch norm"),
        _claimed(CHANCE, "S6 chance", chance=CHANCE_PERCENT),
        *(plot(name) for name in FIGURES[8:11]),
        BLANK,
        _fixed(S7_HEADING, "S7 recipe", "section", steps=w.steps),
        _fixed(S7_DEPTH_4, "S7 depth 4", "block", depth=w.depth),
        *(_run(f"S7 lr {lr}", "plain", lr) for lr in CRANK_LRS),
        _claimed(S6_RECALL, "S7 lr 0.5 recall", lr=w.lr),
        plot("lr_crank.png"),
        BLANK,
        _fixed(S7_DEPTH_8, "S7 depth 8", "block", depth=DEEP_DEPTH),
        _claimed(DEEP_RATIO, "S7 depth 8 ratio"),
        *(_run(f"S7 depth 8 plain, lr = {lr}", "plain", lr) for lr in DEEP_LRS),
        _run("S7 depth 8 batch norm", "batch norm", w.lr),
        plot("depth8_rescue.png"),
        BLANK,
        _text("[S8] the other fixes (same init where applicable, same training recipe)", "section"),
        _claimed(XAVIER_STD, "S8 xavier std"),
        BLANK,
        _text(VARIANTS_HEADER, heading="block"),
        *(_claimed(VARIANT_ROW, f"S8 {name}", {"name": name}) for name in S8_VARIANTS),
        plot("variants_accuracy.png"),
        plot("relu_and_deriv.png"),
        BLANK,
        _text("[S9] the model.eval() bug (using the trained batch-norm net from S6)", "section"),
        _claimed(EVAL_MODE, "S9 eval mode"),
        _claimed(TRAIN_MODE_FULL, "S9 train mode, full batch"),
        _claimed(TRAIN_MODE_SMALL, "S9 train mode, batches of 2", batch=EVAL_BUG_BATCH),
        _claimed(learned("gamma", w.width), "S9 gamma"),
        _claimed(learned("beta", w.width), "S9 beta"),
        BLANK,
        _text("done. every figure written to diagrams/, every number above is citable."),
    ]
    return tuple(lines)


@cache
def log(workshop: Workshop = WORKSHOP) -> Log:
    """The layout as a claimlog `Log`: what this workshop declares (`bnvg.workshop`)."""
    return Log(layout(workshop), home="bnvg.log.layout.claimed_keys()")


def line_named(key: str) -> Line:
    """The layout's line `key` (for `bnvg.log.fill`, which fills it)."""
    return log().line_named(key)
