"""A template: a log line's wording, with a named field for every number it prints.

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

from bnvg.log.readings import FLAG, STEP_SPEC, Quantity, Value

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
