"""The shape of results.log: which line says what, at which line number.

The workshop cites its log by line number ("lines 25 and 29"), so the layout is fixed. Every
line is a `Line`: a template (`bnvg.log.templates`) and what fills it.

- A *claimed* line is filled by the claim that owns it (`@pytest.mark.log_lines(key)`) with
  the readings it verified; if its claim failed or did not run, the line keeps its place with
  a marker, so every other line keeps its number.
- Every other line is filled here, from the recipe: wording, and the settings it prints (the
  learning rate in a section heading, the depth of a block). These are readings too, of kind
  "setting", so a citation of a heading's "lr = 0.5" reads a number, not text.

Headings (`heading="section"` or `"block"`) are the context of the lines below them: a
citation of a training run's line may quote the steps its section heading prints.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

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
from bnvg.log import templates as t
from bnvg.log.readings import Bound, Reading, Value
from bnvg.log.templates import Template

Heading = Literal["section", "block", "document"]


@dataclass(frozen=True)
class LogLine:
    """One filled line: its text, and the readings it prints (in the order it prints them)."""

    key: str
    text: str
    readings: tuple[Reading, ...]
    names: tuple[str, ...] = ()  # the text fields' values: a layer's number, a variant's name

    def reading(self, label: str) -> Reading:
        for r in self.readings:
            if r.label == label or r.name == label:
                return r
        raise KeyError(
            f"{self.key} has no reading {label!r}: it has "
            + ", ".join(repr(r.label) for r in self.readings)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "text": self.text,
            "readings": [r.to_json() for r in self.readings],
            "names": list(self.names),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LogLine:
        readings = tuple(Reading.from_json(r) for r in data["readings"])
        return cls(data["key"], data["text"], readings, tuple(data["names"]))

    def bounded(self, bounds: Mapping[str, Bound], sometimes: bool = False) -> LogLine:
        """The same line with `bounds` (by reading label or name) attached to its readings;
        labels this line does not print are left for the caller to report."""
        readings = tuple(
            r.with_bound(bounds[r.label] if r.label in bounds else bounds[r.name], sometimes)
            if r.label in bounds or r.name in bounds
            else r
            for r in self.readings
        )
        return LogLine(self.key, self.text, readings, self.names)


@dataclass(frozen=True)
class Line:
    """One line of the layout: a template, and the names and settings the layout fixes."""

    template: Template
    key: str | None = None  # None: wording with no numbers, which nobody needs to name
    text: Mapping[str, str] = field(default_factory=dict)
    settings: Mapping[str, Value] = field(default_factory=dict)
    claimed: bool = False  # True: a claim fills the rest of its numbers
    heading: Heading | None = None

    def fill(self, text: Mapping[str, str] | None = None, /, **values: Value) -> LogLine:
        """This line with the claim's `values` (by field name) and the layout's settings."""
        # str(): a name may come as a str subclass (torch's TorchVersion) that xdist cannot ship.
        names = {k: str(v) for k, v in {**self.text, **(text or {})}.items()}
        given = {**self.settings, **values}
        fields = [name for name, _ in self.template.quantities()]
        missing = [f for f in fields if f not in given]
        extra = [v for v in values if v not in fields]
        if missing or extra:
            raise ValueError(
                f"log line {self.key!r} prints {fields}: "
                + (f"missing {missing}" if missing else f"has no field {extra}")
            )
        readings = tuple(
            Reading(str(self.key), quantity, given[name])
            for name, quantity in self.template.quantities()
        )
        return LogLine(
            str(self.key),
            self.template.render(given, names),
            readings,
            tuple(names[f] for f in self.template.text_fields()),
        )

    def refill(self, filled: LogLine, values: Mapping[str, Value]) -> LogLine:
        """`filled` re-rendered with some readings' values replaced (`values` by reading
        name), keeping their bounds: how a line reads with the snapshot's value of a number."""
        fields = [name for name, _ in self.template.quantities()]
        given = {
            f: values.get(r.name, r.value) for f, r in zip(fields, filled.readings, strict=True)
        }
        text = dict(zip(self.template.text_fields(), filled.names, strict=True))
        new = self.fill(text, **{f: v for f, v in given.items() if f not in self.settings})
        readings = tuple(
            n.with_bound(o.bound, o.sometimes) if o.bound else n
            for n, o in zip(new.readings, filled.readings, strict=True)
        )
        return LogLine(new.key, new.text, readings, new.names)


def _fixed(
    template: Template, key: str | None = None, heading: Heading | None = None, **settings: Value
) -> Line:
    return Line(template, key, settings=settings, heading=heading)


def _claimed(
    template: Template, key: str, text: Mapping[str, str] | None = None, **settings: Value
) -> Line:
    return Line(template, key, text=text or {}, settings=settings, claimed=True)


def _text(wording: str, heading: Heading | None = None) -> Line:
    return Line(Template(wording), heading=heading)


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
    return _claimed(t.PLOT_SAVED, f"plot {name}", {"name": name})


def _run(key: str, label: str, lr: float | None = None) -> Line:
    """A training run's summary line; an S7 label prints its learning rate."""
    if lr is None:
        return _claimed(t.RUN_SUMMARY, key, {"label": label}, target=TARGET_PERCENT)
    return _claimed(t.RUN_SUMMARY_AT_LR, key, {"name": label}, target=TARGET_PERCENT, lr=lr)


def _at_init_table(net: str, depth: int) -> list[Line]:
    rows = [
        _claimed(t.AT_INIT_LOSS, f"S4 {net} loss", {"label": AT_INIT_NETS[net]}),
        _text(t.AT_INIT_HEADER, heading="block"),
    ]
    rows += [
        _claimed(t.AT_INIT_ROW, f"S4 {net} layer {k}", {"layer": str(k)})
        for k in range(1, depth + 1)
    ]
    rows += [
        _claimed(t.AT_INIT_OUTPUT, f"S4 {net} output"),
        _claimed(t.AT_INIT_RATIO, f"S4 {net} ratio"),
        _claimed(t.shrink_factors(depth), f"S4 {net} shrink"),
    ]
    return rows


@cache
def layout(workshop: Workshop = WORKSHOP) -> tuple[Line, ...]:
    """Every line of results.log, in order (line n of the log is element n - 1)."""
    w = workshop
    lines: list[Line] = [
        _text(t.RULE),
        _text("Batch Norm vs Vanishing Gradients -- experiment log"),
        _claimed(t.VERSIONS, "versions", seed=w.seed),
        _fixed(t.NETWORK, "network", "document", depth=w.depth, width=w.width),
        _text(t.RULE),
        BLANK,
        _text("[S1] two-moons dataset", "section"),
        _claimed(t.SAMPLES, "S1 samples", noise=w.noise),
        _claimed(t.SPLIT, "S1 split"),
        _claimed(t.FEATURE_STD, "S1 feature std"),
        plot("two_moons.png"),
        BLANK,
        _text("[S2] sigmoid and loss facts", "section"),
        _claimed(t.MAX_SLOPE, "S2 max slope"),
        _claimed(t.SATURATED_SLOPE, "S2 saturated slope", z=SATURATION_Z),
        _claimed(t.BCE_AT_HALF, "S2 BCE at p = 0.5", p=0.5),
        _claimed(t.AUTOGRAD_CHECK, "S2 autograd check", z=CHECK_LOGIT, y=CHECK_LABEL),
        _claimed(t.AUTOGRAD_P, "S2 autograd p", z=CHECK_LOGIT),
        _claimed(t.AUTOGRAD_FORMULA, "S2 autograd formula"),
        _claimed(t.AUTOGRAD_GRADIENT, "S2 autograd dL/dz"),
        plot("sigmoid_and_deriv.png"),
        plot("bce_loss.png"),
        BLANK,
        _text("[S3] the networks", "section"),
        _claimed(t.PARAMETERS, "S3 parameters"),
        _claimed(t.CHECKSUM_PLAIN, "S3 checksum plain"),
        _claimed(t.CHECKSUM_BATCH_NORM, "S3 checksum bn"),
        _claimed(t.IDENTICAL, "S3 identical weights"),
        _claimed(t.WEIGHT_STATS, "S3 layer-2 weights", fan_in=w.width),
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
                t.DECAY, f"S5 factor {f}", factor=f, shallow=DECAY_DEPTHS[0], deep=DECAY_DEPTHS[1]
            )
            for f in DECAY_FACTORS
        ),
        plot("geometric_decay.png"),
        BLANK,
        _fixed(t.S6_HEADING, "S6 recipe", "section", lr=w.lr, batch=w.batch, steps=w.steps),
        _run("S6 plain", "plain"),
        _run("S6 batch norm", "with batch norm"),
        _claimed(t.CHANCE, "S6 chance", chance=CHANCE_PERCENT),
        *(plot(name) for name in FIGURES[8:11]),
        BLANK,
        _fixed(t.S7_HEADING, "S7 recipe", "section", steps=w.steps),
        _fixed(t.S7_DEPTH_4, "S7 depth 4", "block", depth=w.depth),
        *(_run(f"S7 lr {lr}", "plain", lr) for lr in CRANK_LRS),
        _claimed(t.S6_RECALL, "S7 lr 0.5 recall", lr=w.lr),
        plot("lr_crank.png"),
        BLANK,
        _fixed(t.S7_DEPTH_8, "S7 depth 8", "block", depth=DEEP_DEPTH),
        _claimed(t.DEEP_RATIO, "S7 depth 8 ratio"),
        *(_run(f"S7 depth 8 plain, lr = {lr}", "plain", lr) for lr in DEEP_LRS),
        _run("S7 depth 8 batch norm", "batch norm", w.lr),
        plot("depth8_rescue.png"),
        BLANK,
        _text("[S8] the other fixes (same init where applicable, same training recipe)", "section"),
        _claimed(t.XAVIER_STD, "S8 xavier std"),
        BLANK,
        _text(t.VARIANTS_HEADER, heading="block"),
        *(_claimed(t.VARIANT_ROW, f"S8 {name}", {"name": name}) for name in S8_VARIANTS),
        plot("variants_accuracy.png"),
        plot("relu_and_deriv.png"),
        BLANK,
        _text("[S9] the model.eval() bug (using the trained batch-norm net from S6)", "section"),
        _claimed(t.EVAL_MODE, "S9 eval mode"),
        _claimed(t.TRAIN_MODE_FULL, "S9 train mode, full batch"),
        _claimed(t.TRAIN_MODE_SMALL, "S9 train mode, batches of 2", batch=EVAL_BUG_BATCH),
        _claimed(t.learned("gamma", w.width), "S9 gamma"),
        _claimed(t.learned("beta", w.width), "S9 beta"),
        BLANK,
        _text("done. every figure written to diagrams/, every number above is citable."),
    ]
    return tuple(lines)


@cache
def _index(workshop: Workshop) -> Mapping[str, int]:
    return {line.key: n for n, line in enumerate(layout(workshop), start=1) if line.key}


def claimed_keys(workshop: Workshop = WORKSHOP) -> tuple[str, ...]:
    """The names of the lines the claims fill, in log order."""
    return tuple(line.key for line in layout(workshop) if line.claimed and line.key)


def line_named(key: str, workshop: Workshop = WORKSHOP) -> Line:
    return layout(workshop)[line_number(key, workshop) - 1]


def line_number(key: str, workshop: Workshop = WORKSHOP) -> int:
    """The 1-based line of results.log that the line `key` is."""
    try:
        return _index(workshop)[key]
    except KeyError:
        raise ValueError(
            f"no log line is called {key!r}; see bnvg.log.layout.claimed_keys()"
        ) from None


def key_at(number: int, workshop: Workshop = WORKSHOP) -> str | None:
    """The name of log line `number`, or None for wording without numbers or past the end."""
    lines = layout(workshop)
    return lines[number - 1].key if 1 <= number <= len(lines) else None


def fixed_lines(workshop: Workshop = WORKSHOP) -> dict[int, LogLine]:
    """Every line the layout fills itself (no claim owns it), by line number."""
    return {
        n: line.fill() if line.key else LogLine("", line.template.render({}, {}), ())
        for n, line in enumerate(layout(workshop), start=1)
        if not line.claimed
    }


def section_headings(workshop: Workshop = WORKSHOP) -> dict[int, str]:
    """The text of every section heading ("[S6] training runs (...)"), by line number."""
    fixed = fixed_lines(workshop)
    return {
        n: fixed[n].text for n, line in enumerate(layout(workshop), 1) if line.heading == "section"
    }


def context_of(number: int, workshop: Workshop = WORKSHOP) -> tuple[int, ...]:
    """The heading lines that line `number` is read under: the document's header, its
    section's heading and, within the section, its block's heading."""
    document: list[int] = []
    section: int | None = None
    block: int | None = None
    for n, line in enumerate(layout(workshop)[:number], start=1):
        if line.heading == "document":
            document.append(n)
        elif line.heading == "section":
            section, block = n, None
        elif line.heading == "block":
            block = n
    return tuple(document + [n for n in (section, block) if n is not None and n != number])


# -- the published log, read back through the same templates --------------------------------
class PublishedLogError(ValueError):
    """The published log does not have the layout the templates expect."""


def read_published(path: Path, workshop: Workshop = WORKSHOP) -> dict[str, Reading]:
    """Every reading of the published log, by name (its value parsed from the printed text)."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise PublishedLogError(f"cannot read the published log {path}: {error}") from None
    lines = text.splitlines()
    expected = layout(workshop)
    if len(lines) != len(expected):
        raise PublishedLogError(
            f"{path} has {len(lines)} lines; the layout of results.log has {len(expected)}"
        )
    found: dict[str, Reading] = {}
    for number, (published, line) in enumerate(zip(lines, expected, strict=True), start=1):
        quantities = list(line.template.quantities())
        if not line.key or not quantities:
            continue
        match = line.template.pattern(line.text).fullmatch(published)
        if match is None:
            raise PublishedLogError(
                f"{path}:{number} does not read as the log line {line.key!r}: {published!r}"
            )
        for name, quantity in quantities:
            value: Any = quantity.parse(match.group(name))
            reading = Reading(line.key, quantity, value)
            found[reading.name] = reading
    return found
