"""A workshop's log, line by line: what each line says, where it stands, how it is read back.

A workshop cites its log by line number ("lines 25 and 29"), so the layout is fixed. Every
line is a `Line`: a `Template` and what fills it.

- A *claimed* line is filled by the claim that owns it (`@pytest.mark.log_lines(key)`) with
  the readings it verified; if its claim failed or did not run, the line keeps its place with
  a marker, so every other line keeps its number.
- Every other line is filled by the layout, from the recipe: wording, and the settings it
  prints (the learning rate in a section heading). These are readings too, of kind
  "setting", so a citation of a heading's "lr = 0.5" reads a number, not text.

Headings (`heading="section"` or `"block"`) are the context of the lines below them: a
citation of a training run's line may quote the steps its section heading prints.

A `Log` is the whole layout, in order: the engine asks the workshop's own
(`Declaration.log`), which the session hands to whatever reads a line.

**A line's wording** (`Template`): A workshop cites its log by line number and quotes
numbers at the precision printed, so its templates are part of the contract: a changed width
or precision would move a quoted number. Each number is a field with a `Quantity`: the label
that names it in every message and report, its kind, and the precision the script prints it
at:

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
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from claimlog.log.readings import (
    FLAG,
    SETTING,
    STEP_SPEC,
    Bound,
    Quantity,
    Reading,
    Value,
    kind_doubt,
)

# -- a line's wording ---------------------------------------------------------------------
_FORMATTER = string.Formatter()
_NUMBER = r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?"
# In a published log: a line, or a number of a line, that its author did not print.
UNPRINTED = "?"


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
            if name in self.numbers:  # a number as printed, or UNPRINTED where it was not
                pattern = _number_pattern(self.numbers[name])
                out.append(rf"\s*(?P<{name}>{pattern}|{re.escape(UNPRINTED)})")
            elif name in self.parts:
                out.append(r"\s*" + self.parts[name]._regex(text))
            else:
                known = text.get(name)
                words = r"\s+".join(map(re.escape, known.split())) if known is not None else r"\S+"
                out.append(r"\s*" + words)
        return "".join(out)

    def shape(self, text: Mapping[str, str]) -> str:
        """The line as a published log must write it, each number a placeholder naming it:
        "  final train loss = <final train loss>, ...", for a message that says what a line
        should hold."""
        out: list[str] = []
        for literal, name, _, _ in _FORMATTER.parse(self.text):
            out.append(literal)
            if name is None:
                continue
            if name in self.numbers:
                out.append(f"<{self.numbers[name].label}>")
            elif name in self.parts:
                out.append(self.parts[name].shape(text))
            else:
                out.append(text.get(name, f"<{name}>"))
        return "".join(out).strip()


def _number_pattern(quantity: Quantity) -> str:
    if quantity.spec == STEP_SPEC:
        return r"step \d+|never"
    if quantity.kind is FLAG:
        return "True|False"
    return _NUMBER


# -- the lines of a log ---------------------------------------------------------------------
Heading = Literal["section", "block", "document"]


HEADER = "the log's header"  # the lines above the first section heading


@dataclass(frozen=True)
class LogLine:
    """One filled line: its text, and the readings it prints (in the order it prints them)."""

    key: str
    text: str
    readings: tuple[Reading, ...]
    names: tuple[str, ...] = ()  # the text fields' values: a layer's number, a variant's name

    @staticmethod
    def plot(name: str) -> LogLine:
        """The line for the figure `name` (`Line.plot`), filled."""
        return Line.plot(name).fill()

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

    @classmethod
    def fixed(
        cls,
        template: Template,
        key: str | None = None,
        heading: Heading | None = None,
        **settings: Value,
    ) -> Line:
        """A line the layout fills itself, from the recipe's `settings`."""
        return cls(template, key, settings=settings, heading=heading)

    @classmethod
    def by_claim(
        cls, template: Template, key: str, text: Mapping[str, str] | None = None, **settings: Value
    ) -> Line:
        """A line that the claim owning `key` fills with the readings it verified (`text`:
        its names, such as a layer's number; `settings`: the recipe's values it prints)."""
        return cls(template, key, text=text or {}, settings=settings, claimed=True)

    @classmethod
    def words(cls, words: str, heading: Heading | None = None) -> Line:
        """A line of words without numbers, which nobody needs to name."""
        return cls(Template(words), heading=heading)

    # -- the engine's own lines: every workshop's log has them alike -------------------------
    @classmethod
    def versions(cls, seed: int | None = None) -> Line:
        """The header's line that names what computed the log ("torch 2.13.0+cpu | numpy
        2.2.6 | seed 0"): the claim that owns it writes it with `results_log.versions` (where a
        log has it, `--other-torch-build` lets it alone differ, and the sweep's upgrade
        report shows it moving with every release)."""
        if seed is None:
            return cls.by_claim(_VERSIONS, VERSIONS)
        return cls.by_claim(_VERSIONS_AND_SEED, VERSIONS, seed=seed)

    @classmethod
    def plot(cls, name: str) -> Line:
        """The line that says a figure was drawn ("  [plot saved: diagrams/x.png]"), owned by
        the claim that draws it and filled with `LogLine.plot`: the claims report shows the
        picture beside it."""
        return cls.by_claim(_PLOT_SAVED, f"{PLOT}{name}", {"name": name})

    def fill(self, text: Mapping[str, str] | None = None, /, **values: Value) -> LogLine:
        """This line with the claim's `values` (by field name) and the layout's settings.
        A wrong field, or a value outside its quantity's kind, is the caller's error: pytest
        shows it at the caller's line, not inside claimlog."""
        __tracebackhide__ = True
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
        readings = []  # a loop, not a generator: its frame would show in the traceback
        for name, quantity in self.template.quantities():
            readings.append(Reading(str(self.key), quantity, given[name]))
        return LogLine(
            str(self.key),
            self.template.render(given, names),
            tuple(readings),
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


class PublishedLogError(ValueError):
    """The published log does not have the layout the templates expect."""


@dataclass(frozen=True)
class Log:
    """Every line of a workshop's log, in order (line n of the log is element n - 1)."""

    lines: tuple[Line, ...]
    home: str = "the workshop's layout"  # where an author reads the names, for messages

    @cached_property
    def _index(self) -> Mapping[str, int]:
        return {line.key: n for n, line in enumerate(self.lines, start=1) if line.key}

    def claimed_keys(self) -> tuple[str, ...]:
        """The names of the lines the claims fill, in log order."""
        return tuple(line.key for line in self.lines if line.claimed and line.key)

    def line_named(self, key: str) -> Line:
        return self.lines[self.line_number(key) - 1]

    def line_number(self, key: str) -> int:
        """The 1-based line of results.log that the line `key` is."""
        try:
            return self._index[key]
        except KeyError:
            raise ValueError(f"no log line is called {key!r}; see {self.home}") from None

    def fixed_lines(self) -> dict[int, LogLine]:
        """Every line the layout fills itself (no claim owns it), by line number."""
        return {
            n: line.fill() if line.key else LogLine("", line.template.render({}, {}), ())
            for n, line in enumerate(self.lines, start=1)
            if not line.claimed
        }

    def section_headings(self) -> dict[int, str]:
        """The text of every section heading ("[S6] training runs (...)"), by line number."""
        fixed = self.fixed_lines()
        return {
            n: fixed[n].text for n, line in enumerate(self.lines, 1) if line.heading == "section"
        }

    def section_of(self, number: int) -> str:
        """The heading of the section line `number` lies in ("[S6] training runs (...)"), or
        `HEADER` for a line above the first heading: how reports group what a line says,
        in the workshop's own words."""
        above = [(n, text) for n, text in self.section_headings().items() if n <= number]
        return max(above, default=(0, HEADER))[1]

    def context_of(self, number: int) -> tuple[int, ...]:
        """The heading lines that line `number` is read under: the document's header, its
        section's heading and, within the section, its block's heading."""
        document: list[int] = []
        section: int | None = None
        block: int | None = None
        for n, line in enumerate(self.lines[:number], start=1):
            if line.heading == "document":
                document.append(n)
            elif line.heading == "section":
                section, block = n, None
            elif line.heading == "block":
                block = n
        return tuple(document + [n for n in (section, block) if n is not None and n != number])

    def kind_doubts(self) -> list[str]:
        """Every number whose label contradicts its declared kind, by line: "log line 9
        ('S6 plain'): its label 'final loss' says 'loss', but it is declared Kind.PERCENT".
        Said as the session starts, before any claim reads it."""
        doubts: list[str] = []
        for n, line in enumerate(self.lines, start=1):
            for _, quantity in line.template.quantities():
                if (doubt := kind_doubt(quantity)) is not None:
                    doubts.append(f"log line {n} ({line.key!r}): {doubt}")
        return doubts

    def versions_line(self) -> int | None:
        """The number of the log's versions line (`VERSIONS`), if it has one."""
        return self._index.get(VERSIONS)

    def reading_back(self) -> str:
        """What reading a published log back depends on besides its text, as one string:
        each line's key, the pattern it is read with and its quantities. Reading compiles a
        pattern per line (a tenth of a warm session), so a session keeps what it read under
        this and the text (`claimlog.plugin.session.SessionCache.read_log`)."""
        return repr(
            [
                (line.key, line.template._regex(line.text), list(line.template.quantities()))
                for line in self.lines
            ]
        )

    def read_published(self, path: Path) -> dict[str, Reading]:
        """Every number the published log prints, by reading name, each at the precision its
        author printed it ("2.07" stays "2.07" where results.log prints "2.0700").

        The published log is results.log as its author's own run printed it, line for line,
        so that its line numbers are the log's. It may be partial: `UNPRINTED` ("?") stands
        for a whole line, or for one number of a line, that its author never printed; such a
        number is simply absent here, never filled in. Wording is read loosely (indentation
        dropped, runs of spaces collapsed); lines without numbers are not read at all.

        Raises `PublishedLogError` naming the file, the line and what it should hold."""
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as error:
            raise PublishedLogError(f"cannot read the published log {path}: {error}") from None
        lines = text.splitlines()
        if len(lines) != len(self.lines):
            raise PublishedLogError(
                f"{path} has {len(lines)} lines; the layout of results.log has "
                f"{len(self.lines)}: every line keeps its number, so write {UNPRINTED} on a "
                "line its author did not print"
            )
        found: dict[str, Reading] = {}
        for number, (published, line) in enumerate(zip(lines, self.lines, strict=True), 1):
            quantities = list(line.template.quantities())
            if not line.key or not quantities or published.strip() == UNPRINTED:
                continue
            match = line.template.pattern(line.text).fullmatch(published)
            if match is None:
                raise PublishedLogError(
                    f"{path}:{number} does not read as the log line {line.key!r}: "
                    f"{published.strip()!r}; expected "
                    f"{line.template.shape(line.text)!r}, each number as its author printed "
                    f"it or {UNPRINTED}, or {UNPRINTED} alone for a line not printed"
                )
            for name, quantity in quantities:
                printed = match.group(name)
                if printed == UNPRINTED:
                    continue
                as_printed = quantity.as_printed(printed)
                try:
                    reading = Reading(line.key, as_printed, as_printed.parse(printed))
                except ValueError as error:  # outside its kind's domain
                    raise PublishedLogError(f"{path}:{number}: {error}") from None
                found[reading.name] = reading
        return found


# -- the lines the engine provides -------------------------------------------------------------
# The one line name the engine knows: a workshop's header line that names the torch which
# computed the log ("torch 2.13.0+cpu | numpy 2.2.6 | seed 0"). Optional: where a log has it,
# another build of the same torch release may differ there alone (--other-torch-build), and
# the sweep's upgrade report shows it moving with every release.
VERSIONS = "versions"
PLOT = "plot "  # a figure's line is called "plot x.png"
_VERSIONS = Template("torch {torch} | numpy {numpy}")
_VERSIONS_AND_SEED = Template(
    "torch {torch} | numpy {numpy} | seed {seed}", {"seed": Quantity("seed", SETTING)}
)
_PLOT_SAVED = Template("  [plot saved: diagrams/{name}]")


@dataclass(frozen=True)
class CitedLine:
    """What one log line says this session: its readings and names, if its claim passed.
    A line whose claim failed keeps, as `standing`, the readings it computed that print
    what the record prints: the claim's failure is not theirs, and a quote of one holds."""

    number: int
    text: str
    readings: tuple[Reading, ...] = ()
    names: tuple[str, ...] = ()
    verified: bool = True
    standing: tuple[Reading, ...] = ()
