"""Readings: the numbers of the log, each with a name, a kind and the precision it is printed at.

A number the workshop quotes is never just text. `Reading("S4 plain ratio, times smaller",
3015.41..., ...)` keeps the value at full precision, says what kind of number it is (a count,
a percentage in 0..100, a loss >= 0, a ratio, a training step) and how the log prints it
(`.0f` -> "3015"). The log's lines are rendered from readings (`claimlog.log.lines`); the
snapshots, the sweep's bands, the reports and the citation check all read readings, never
the rendered text.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, ClassVar

Value = float | int | bool | None  # None: a step that never came ("first >=90%: never")


@dataclass(frozen=True)
class Kind:
    """What sort of number a reading is: its domain, and whether it is whole."""

    name: str
    lo: float = -math.inf
    hi: float = math.inf
    integer: bool = False

    # The kinds a workshop's quantities take, as `Kind.PERCENT` (defined below the class).
    COUNT: ClassVar[Kind]
    STEP: ClassVar[Kind]
    PERCENT: ClassVar[Kind]
    LOSS: ClassVar[Kind]
    RATIO: ClassVar[Kind]
    MAGNITUDE: ClassVar[Kind]
    FRACTION: ClassVar[Kind]
    REAL: ClassVar[Kind]
    SETTING: ClassVar[Kind]
    FLAG: ClassVar[Kind]

    def clip(self, lo: float, hi: float) -> tuple[float, float]:
        """A range narrowed to this kind's domain: a band never claims an accuracy of 124%."""
        return max(lo, self.lo), min(hi, self.hi)

    def domain(self) -> str:
        """Its domain, for people: "whole numbers from 0 up", "0 to 100"."""
        whole = "whole numbers " if self.integer else ""
        if self is STEP:
            return f"{whole}from {self.lo:g} up, or None for a step that never came"
        if self.hi == math.inf:
            return f"{whole}from {self.lo:g} up" if self.lo > -math.inf else "any real number"
        return f"{whole}from {self.lo:g} to {self.hi:g}"

    def admits(self, value: Value) -> bool:
        if value is None:
            return self is STEP
        return self.lo <= float(value) <= self.hi and (
            not self.integer or float(value).is_integer()
        )


COUNT = Kind("count", 0, math.inf, integer=True)  # points, parameters
# An SGD step, counted as the workshop's loop counts it (from 0 or from 1); None when it
# never came.
STEP = Kind("step", 0, math.inf, integer=True)
PERCENT = Kind("percentage", 0, 100)  # accuracies, as the log prints them
LOSS = Kind("loss", 0)  # binary cross-entropy
RATIO = Kind("ratio", 0)  # gradient ratios, "x smaller", shrink factors
MAGNITUDE = Kind("magnitude", 0)  # norms, standard deviations, checksums, gains
FRACTION = Kind("fraction", 0, 1)  # slopes, probabilities, the share of a gradient left
REAL = Kind("real")  # a signed value: a location, a gradient, a learned shift or scale
SETTING = Kind("setting")  # chosen by the workshop, not measured: lr, batch, depth, seed
FLAG = Kind("flag", 0, 1, integer=True)  # true or false

(
    Kind.COUNT,
    Kind.STEP,
    Kind.PERCENT,
    Kind.LOSS,
    Kind.RATIO,
    Kind.MAGNITUDE,
    Kind.FRACTION,
    Kind.REAL,
    Kind.SETTING,
    Kind.FLAG,
) = (COUNT, STEP, PERCENT, LOSS, RATIO, MAGNITUDE, FRACTION, REAL, SETTING, FLAG)

KINDS: Mapping[str, Kind] = {
    k.name: k for k in (COUNT, STEP, PERCENT, LOSS, RATIO, MAGNITUDE, FRACTION, REAL, SETTING, FLAG)
}


# Words of a label that say what kind of number it is, with the kinds such a number may be
# declared as: a "loss" declared Kind.PERCENT passes every bound of a percentage and is then
# quoted, cited and compared as one. A setting may be any of them ("loss threshold").
_LABEL_WORDS: tuple[tuple[re.Pattern[str], tuple[Kind, ...]], ...] = (
    (re.compile(r"\bloss\b", re.I), (LOSS, SETTING)),
    (re.compile(r"\b(?:acc|accuracy)\b|%", re.I), (PERCENT, FRACTION, SETTING)),
    (re.compile(r"\bratio\b|\btimes (?:smaller|larger)\b", re.I), (RATIO, SETTING)),
    (re.compile(r"\bsteps?\b", re.I), (STEP, COUNT, SETTING)),
    (re.compile(r"\b(?:parameters|count)\b", re.I), (COUNT, SETTING)),
)


def kind_doubt(quantity: Quantity) -> str | None:
    """Why `quantity`'s label contradicts its kind ("'final loss' says a loss, declared
    Kind.PERCENT"), or None. Its first word that names a kind decides."""
    for pattern, kinds in _LABEL_WORDS:
        word = pattern.search(quantity.label)
        if word is not None:
            if quantity.kind in kinds:
                return None
            wanted = " or ".join(declared_as(k) for k in kinds if k is not SETTING)
            return (
                f"its label {quantity.label!r} says {word.group(0)!r}, but it is declared "
                f"{declared_as(quantity.kind)}: declare it {wanted}, or relabel it"
            )
    return None


def declared_as(kind: Kind) -> str:
    """How an author declares `kind` in a `Quantity`: "Kind.LOSS", "Kind.PERCENT"."""
    attribute = next(a for a in dir(Kind) if a.isupper() and getattr(Kind, a) is kind)
    return f"Kind.{attribute}"


def kind_named(name: str) -> Kind:
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(
            f"unknown kind {name!r}: valid kinds are " + ", ".join(map(repr, KINDS))
        ) from None


STEP_SPEC = "step"  # prints a step as "step 100", and None as "never"


def decimals(written: str) -> int:
    """The figures after the point of a number as written, its exponent apart: "2.07" has 2,
    "3.3e-04" has 1, "42" none."""
    mantissa = written.lower().split("e")[0]
    return len(mantissa.split(".")[1]) if "." in mantissa else 0


@dataclass(frozen=True)
class Quantity:
    """What one field of a log line measures: a label, a kind and how the log prints it.

    `spec` is a format spec (".4f", "+.6f", ".2e", "" for str(), "g") or STEP_SPEC.
    `plus_minus`: the line prints "+/-" before it, so it says the value with either sign.
    """

    label: str
    kind: Kind
    spec: str = ""
    plus_minus: bool = False

    def print(self, value: Value) -> str:
        """The value as the log prints it."""
        if self.spec == STEP_SPEC:
            return "never" if value is None else f"step {value}"
        return format(value, self.spec)

    def as_printed(self, printed: str) -> Quantity:
        """This quantity at the precision `printed` shows: "2.07" of a ".4f" loss prints
        ".2f", "3.3e-04" prints ".1e". How another author's log (the published one) is shown
        and compared: at the figures they wrote, never more."""
        if self.spec == STEP_SPEC or self.kind is FLAG:
            return self
        bare = printed.lstrip("+-").lower()
        sign = "+" if self.spec.startswith("+") else ""
        figures = decimals(bare)
        if "e" in bare:
            spec = f"{sign}.{figures}e"
        elif "." in bare or self.spec not in ("", "d"):
            spec = f"{sign}.{figures}f"
        else:
            spec = self.spec  # a whole number printed whole
        return Quantity(self.label, self.kind, spec, self.plus_minus)

    def parse(self, printed: str) -> Value:
        """A printed value back as a number: for the published log only, which exists as text."""
        if self.spec == STEP_SPEC:
            return None if printed == "never" else int(printed.removeprefix("step "))
        if self.kind is FLAG:
            return printed == "True"
        is_whole = printed.lstrip("+-").isdigit()
        return int(printed) if is_whole else float(printed)


def significant_figures(x: float) -> int:
    """How many significant figures `x` is written with, as `f"{x:g}"` writes it: the
    trailing zeros of a whole number are not significant (3000 -> 1, 0.25 -> 2, 8 -> 1)."""
    return len(Decimal(f"{x:g}").normalize().as_tuple().digits)


def is_about(value: float, x: float) -> bool:
    """Whether `value`, rounded to as many significant figures as `x` is written with, is
    `x`: "about 3000" is 2500 <= value < 3500, "about 0.1" is 0.095 <= value < 0.15.

    The figures count from the value's own leading digit, so "about 1000" is 950 up to 1500
    (950 is 1000 to one figure; 900 is not). Halves round away from zero, as a reader rounds;
    the value is taken exactly as stored (0.15 is stored a hair below 0.15, so to one figure
    it is 0.1, as `f"{0.15:.1f}"` prints it). A value that is not finite (a step that never
    came) is about nothing."""
    if not math.isfinite(value):
        return False
    written = Decimal(f"{x:g}")
    exact = Decimal(value)
    if exact == 0 or written == 0:
        return exact == written
    last_figure = exact.adjusted() - significant_figures(x) + 1  # its power of ten
    return exact.quantize(Decimal(1).scaleb(last_figure), rounding=ROUND_HALF_UP) == written


_OPS: Mapping[str, tuple[Callable[[Any, Any], bool], str]] = {
    ">=": (operator.ge, "at least"),
    ">": (operator.gt, "above"),
    "<=": (operator.le, "at most"),
    "<": (operator.lt, "below"),
    "==": (operator.eq, "exactly"),
    "~": (is_about, "about"),
}


@dataclass(frozen=True)
class Bound:
    """What a claim asserts about one reading: "final test accuracy at least 90".

    `op` is one of ">=", ">", "<=", "<", "==" and "~" ("about": the value rounds to the
    threshold at the figures the threshold is written with). A bound travels as the pair
    [op, threshold] (`Reading.to_json`, the sweep's fragments), and `Bound(*pair)` reads it.
    """

    op: str
    threshold: float

    def __post_init__(self) -> None:
        if self.op not in _OPS:
            raise ValueError(f"unknown bound {self.op!r}: valid are " + ", ".join(_OPS))
        if self.op == "~" and not math.isfinite(self.threshold):
            raise ValueError(f"'about' needs a finite number, got {self.threshold!r}")

    def holds(self, value: Value) -> bool:
        # A step that never came is later than any bound: "first >= 90% by step 100" fails;
        # and it is about no number.
        number = math.inf if value is None else float(value)
        return bool(_OPS[self.op][0](number, self.threshold))

    def __str__(self) -> str:
        return f"{_OPS[self.op][1]} {self.threshold:g}"


def at_least(x: float) -> Bound:
    return Bound(">=", x)


def above(x: float) -> Bound:
    return Bound(">", x)


def at_most(x: float) -> Bound:
    return Bound("<=", x)


def below(x: float) -> Bound:
    return Bound("<", x)


def exactly(x: float) -> Bound:
    return Bound("==", x)


def about(x: float) -> Bound:
    """The value rounds to `x` at the figures `x` is written with: about(3000) is "3000x
    smaller" as a sentence says it (2500 <= value < 3500), about(8) is 7.5 <= value < 8.5 and
    about(0.25) is 0.245 <= value < 0.255. Write `x` at the sentence's precision: about(3015)
    says far more than "about 3000"."""
    return Bound("~", x)


@dataclass(frozen=True)
class Reading:
    """One number of the log: named, typed, at full precision, printed as the log prints it.

    `key` is the log line it is printed on (a name of the workshop's layout); its `name` is the
    line's key and the quantity's label ("S6 batch norm, final train loss"). `bound` is what
    the claim that quotes it asserts; `sometimes` marks a bound that holds only for some
    minibatch orders, so the claim states it as a rate over seeds rather than as a fact.
    """

    key: str
    quantity: Quantity
    value: Value
    bound: Bound | None = None
    sometimes: bool = False

    def __post_init__(self) -> None:
        __tracebackhide__ = True  # the error is the caller's: a value its kind does not admit
        kind = self.quantity.kind
        if not kind.admits(self.value):
            raise ValueError(
                f"{self.name!r} = {self.value!r} is not a {kind.name}: {declared_as(kind)} "
                f"admits {kind.domain()}. Declare its Quantity with the kind it is "
                f"(valid kinds: {', '.join(declared_as(k) for k in KINDS.values())})"
            )

    @property
    def name(self) -> str:
        return f"{self.key}, {self.quantity.label}"

    @property
    def label(self) -> str:
        return self.quantity.label

    @property
    def kind(self) -> Kind:
        return self.quantity.kind

    @property
    def printed(self) -> str:
        return self.quantity.print(self.value)

    @property
    def number(self) -> str | None:
        """The printed value as a decimal number ("step 100" -> "100"), or None if it prints
        none ("never", "True")."""
        if self.value is None or self.kind is FLAG:
            return None
        return str(self.value) if self.quantity.spec == STEP_SPEC else self.printed

    def as_float(self) -> float:
        """The value as stored in the numbers snapshots: NaN for "never", 1.0 for True."""
        return math.nan if self.value is None else float(self.value)

    def with_value(self, value: Value) -> Reading:
        return Reading(self.key, self.quantity, value, self.bound, self.sometimes)

    def with_bound(self, bound: Bound, sometimes: bool = False) -> Reading:
        return Reading(self.key, self.quantity, self.value, bound, sometimes)

    def value_from_float(self, stored: float) -> Value:
        """A value read back from a numbers snapshot, typed as this reading's kind."""
        if math.isnan(stored):
            return None
        if self.kind is FLAG:
            return bool(stored)
        if self.kind.integer or (self.kind is SETTING and isinstance(self.value, int)):
            return int(stored)
        return stored

    # -- travelling: test reports (xdist) and the session record carry plain data -------------
    def to_json(self) -> dict[str, Any]:
        q = self.quantity
        return {
            "key": self.key,
            "label": q.label,
            "kind": q.kind.name,
            "spec": q.spec,
            "plus_minus": q.plus_minus,
            "value": self.value,
            "printed": self.printed,
            "bound": None if self.bound is None else [self.bound.op, self.bound.threshold],
            "sometimes": self.sometimes,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Reading:
        quantity = Quantity(
            data["label"], kind_named(data["kind"]), data["spec"], bool(data["plus_minus"])
        )
        bound = None if data["bound"] is None else Bound(*data["bound"])
        return cls(data["key"], quantity, data["value"], bound, bool(data["sometimes"]))
