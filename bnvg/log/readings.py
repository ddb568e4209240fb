"""Readings: the numbers of the log, each with a name, a kind and the precision it is printed at.

A number the workshop quotes is never just text. `Reading("S4 plain ratio, times smaller",
3015.41..., ...)` keeps the value at full precision, says what kind of number it is (a count,
a percentage in 0..100, a loss >= 0, a ratio, a training step) and how the log prints it
(`.0f` -> "3015"). The log's lines are rendered from readings (`bnvg.log.templates`); the
snapshots, the sweep's bands, the reports and the citation check all read readings, never
the rendered text.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Value = float | int | bool | None  # None: a step that never came ("first >=90%: never")


@dataclass(frozen=True)
class Kind:
    """What sort of number a reading is: its domain, and whether it is whole."""

    name: str
    lo: float = -math.inf
    hi: float = math.inf
    integer: bool = False

    def clip(self, lo: float, hi: float) -> tuple[float, float]:
        """A range narrowed to this kind's domain: a band never claims an accuracy of 124%."""
        return max(lo, self.lo), min(hi, self.hi)

    def admits(self, value: Value) -> bool:
        if value is None:
            return self is STEP
        return self.lo <= float(value) <= self.hi and (
            not self.integer or float(value).is_integer()
        )


COUNT = Kind("count", 0, math.inf, integer=True)  # points, parameters
STEP = Kind("step", 1, math.inf, integer=True)  # an SGD step; None when it never came
PERCENT = Kind("percentage", 0, 100)  # accuracies, as the log prints them
LOSS = Kind("loss", 0)  # binary cross-entropy
RATIO = Kind("ratio", 0)  # gradient ratios, "x smaller", shrink factors
MAGNITUDE = Kind("magnitude", 0)  # norms, standard deviations, checksums, gains
FRACTION = Kind("fraction", 0, 1)  # slopes, probabilities, the share of a gradient left
REAL = Kind("real")  # a signed value: a location, a gradient, a learned shift or scale
SETTING = Kind("setting")  # chosen by the workshop, not measured: lr, batch, depth, seed
FLAG = Kind("flag", 0, 1, integer=True)  # true or false

KINDS: Mapping[str, Kind] = {
    k.name: k for k in (COUNT, STEP, PERCENT, LOSS, RATIO, MAGNITUDE, FRACTION, REAL, SETTING, FLAG)
}


def kind_named(name: str) -> Kind:
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(
            f"unknown kind {name!r}: valid kinds are " + ", ".join(map(repr, KINDS))
        ) from None


STEP_SPEC = "step"  # prints a step as "step 100", and None as "never"


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

    def parse(self, printed: str) -> Value:
        """A printed value back as a number: for the published log only, which exists as text."""
        if self.spec == STEP_SPEC:
            return None if printed == "never" else int(printed.removeprefix("step "))
        if self.kind is FLAG:
            return printed == "True"
        is_whole = printed.lstrip("+-").isdigit()
        return int(printed) if is_whole else float(printed)


_OPS: Mapping[str, tuple[Callable[[Any, Any], bool], str]] = {
    ">=": (operator.ge, "at least"),
    ">": (operator.gt, "above"),
    "<=": (operator.le, "at most"),
    "<": (operator.lt, "below"),
    "==": (operator.eq, "exactly"),
}


@dataclass(frozen=True)
class Bound:
    """What a claim asserts about one reading: "final test accuracy at least 90"."""

    op: str
    threshold: float

    def __post_init__(self) -> None:
        if self.op not in _OPS:
            raise ValueError(f"unknown bound {self.op!r}: valid are " + ", ".join(_OPS))

    def holds(self, value: Value) -> bool:
        # A step that never came is later than any bound: "first >= 90% by step 100" fails.
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


@dataclass(frozen=True)
class Reading:
    """One number of the log: named, typed, at full precision, printed as the log prints it.

    `key` is the log line it is printed on (a name of `bnvg.log.layout`); its `name` is the
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
        if not self.quantity.kind.admits(self.value):
            raise ValueError(
                f"{self.name} = {self.value!r} is not a {self.quantity.kind.name} "
                f"(its domain is {self.quantity.kind.lo:g} to {self.quantity.kind.hi:g})"
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
