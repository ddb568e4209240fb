"""The wording of every line of results.log, character for character as the script prints it.

The workshop cites its log by line number and quotes numbers at the precision printed here,
so these templates are part of the contract: a changed width or precision would move a
quoted number. Each number is a field with a `Quantity`: the label that names it in every
message and report, its kind, and the precision the script prints it at.

A `Template` is one line's wording, with a named field for every number it prints:

    RUN_SUMMARY = Template(
        "  {label:<28} final train loss = {final_loss}, final test acc = {final_acc}%, ...",
        numbers={"final_loss": Quantity("final train loss", LOSS, ".4f"), ...},
    )

A field named in `numbers` is a reading: its quantity prints the value at the log's precision,
then the field's own spec (alignment only, such as `>12`) pads it, exactly as the script's
f-string did. Any other field is a text field: a name such as a layer's number or a variant's
label, or a version string. A text field may itself be a template (`parts`), whose numbers
belong to the line: the label "  plain, lr = 5.0" of an S7 run prints the learning rate.

A template renders numbers into text; it reads none back, except from the published log
(`pattern`), which exists only as text.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from bnvg.log.readings import (
    COUNT,
    FLAG,
    FRACTION,
    LOSS,
    MAGNITUDE,
    PERCENT,
    RATIO,
    REAL,
    SETTING,
    STEP,
    STEP_SPEC,
    Quantity,
    Value,
)

_FORMATTER = string.Formatter()
_NUMBER = r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?"


@dataclass(frozen=True)
class Template:
    """One line's wording with named fields (str.format syntax; field specs only align)."""

    text: str
    numbers: Mapping[str, Quantity] = field(default_factory=dict)
    parts: Mapping[str, Template] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, spec in self._fields():
            if name in self.numbers and spec and not re.fullmatch(r"[<>^]?\d+", spec):
                raise ValueError(
                    f"field {name!r} of {self.text!r}: a number's precision belongs to its "
                    f"Quantity; the field's spec may only align it (got {spec!r})"
                )
        unknown = (set(self.numbers) | set(self.parts)) - {name for name, _ in self._fields()}
        if unknown:
            raise ValueError(f"{self.text!r} has no field {sorted(unknown)}")

    def _fields(self) -> Iterator[tuple[str, str]]:
        for _, name, spec, _ in _FORMATTER.parse(self.text):
            if name is not None:
                yield name, spec or ""

    def quantities(self) -> Iterator[tuple[str, Quantity]]:
        """Every number of the line, parts included, in the order the line prints them."""
        for name, _ in self._fields():
            if name in self.numbers:
                yield name, self.numbers[name]
            elif name in self.parts:
                yield from self.parts[name].quantities()

    def text_fields(self) -> list[str]:
        """The fields that hold names rather than numbers, parts included, in order."""
        out: list[str] = []
        for name, _ in self._fields():
            if name in self.parts:
                out += self.parts[name].text_fields()
            elif name not in self.numbers:
                out.append(name)
        return out

    def render(self, values: Mapping[str, Value], text: Mapping[str, str]) -> str:
        """The line, every number printed by its quantity and every name filled in."""
        out: list[str] = []
        for literal, name, spec, _ in _FORMATTER.parse(self.text):
            out.append(literal)
            if name is None:
                continue
            if name in self.numbers:
                piece = self.numbers[name].print(values[name])
            elif name in self.parts:
                piece = self.parts[name].render(values, text)
            else:
                piece = text[name]
            out.append(format(piece, spec or ""))
        return "".join(out)

    def pattern(self, text: Mapping[str, str]) -> re.Pattern[str]:
        """A regular expression that reads this line back out of the published log, where
        indentation was dropped and runs of spaces collapsed, with one named group per number.
        A text field with a known value must read as it is; an unknown one matches a word."""
        return re.compile(r"\s*" + self._regex(text) + r"\s*")

    def _regex(self, text: Mapping[str, str]) -> str:
        out: list[str] = []
        for literal, name, _, _ in _FORMATTER.parse(self.text):
            out.append(r"\s*".join(re.escape(word) for word in re.split(r"\s+", literal)))
            if name is None:
                continue
            if name in self.numbers:
                out.append(rf"\s*(?P<{name}>{_number_pattern(self.numbers[name])})")
            elif name in self.parts:
                out.append(r"\s*" + self.parts[name]._regex(text))
            else:
                known = text.get(name)
                words = r"\s+".join(map(re.escape, known.split())) if known is not None else r"\S+"
                out.append(r"\s*" + words)
        return "".join(out)


def _number_pattern(quantity: Quantity) -> str:
    if quantity.spec == STEP_SPEC:
        return r"step \d+|never"
    if quantity.kind is FLAG:
        return "True|False"
    return _NUMBER


# -- every line's wording ---------------------------------------------------------------------
RULE = "=" * 72

# -- the header ---------------------------------------------------------------------------------

VERSIONS = Template(
    "torch {torch} | numpy {numpy} | seed {seed}",
    {"seed": Quantity("seed", SETTING)},
)
NETWORK = Template(
    "network: {depth} hidden layers x {width} neurons, sigmoid activations",
    {"depth": Quantity("hidden layers", SETTING), "width": Quantity("neurons per layer", SETTING)},
)
PLOT_SAVED = Template("  [plot saved: diagrams/{name}]")

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
