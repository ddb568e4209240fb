"""Citations of the log in the workshop's prose, read as a reader reads them.

The workshop's Markdown cites results.log by line: "the layer-1 gradient is 3015x smaller
(line 40)", "see lines 25 and 29", "lines 35-38", "results.log:40". Prose is the one text
here that people write, so it is the one text parsed; the log is read as readings.

Reading prose as a reader does:

- a citation covers the numbers written since the previous citation in its sentence (those
  after the last citation belong to it too): in "3.99e-02 (line 38) against 2.07e-01 with
  batch norm (line 48)", 2.07e-01 is line 48's;
- names are not quoted numbers: "S4", "x1", "layer-1", "h_k+1", "layer 4's", "ln 2";
- a cited line says its readings, its names (a row's layer number), and what the headings it
  is read under say (the steps and learning rate of its section); "+/-4" says 4.

Whether the log still says what a citation quotes is `claimlog.text.checks`'s to judge.

A number the prose quotes in a sentence that cites no line is listed too (`Uncited`,
`uncited_numbers`, at the end): no number of the text goes unexamined.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from claimlog.log.readings import Bound
from claimlog.text.prose import Paragraph, paragraphs

_NUMBER = r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?"
_NUM = r"\d+"
_RANGE = rf"{_NUM}(?:\s*(?:-|\u2013|to)\s*{_NUM})?"  # "35-38", "35\u201338", "35 to 38"
_LIST = rf"{_RANGE}(?:\s*(?:,|and|&)\s*{_RANGE})*"  # "25 and 29", "25, 29 and 40"
# "(line 40)", "results.log:40"; and "(published line 9)", "the published log, line 9": a
# citation of the number its original author printed, checked against the published log.
CITATION = re.compile(
    rf"(?P<published>\bpublished(?:\s+log)?(?:'s)?,?\s+)?\blines?\s+(?P<list>{_LIST})"
    rf"|results\.log:(?P<one>{_LIST})",
    re.I,
)
# A quoted number is not glued to what comes before it: "S4", "x1", "h_k+1", "layer-1".
QUOTED = re.compile(rf"(?<![A-Za-z_\d.+\-]){_NUMBER}")
# Words after which a number is a name: "layer 4's gradient", "ln 2", "module 2".
NAME_WORD = re.compile(r"\b(?:layer|ln|module|section|figure|neuron)\s*$", re.I)
# A range of values, quoted as one: "between 0.005 and 0.011", "0.005\u20130.011" (an en dash;
# a hyphen joins names: "layer-1").
VALUE_RANGE = re.compile(
    rf"\bbetween\s+(?P<lo>{_NUMBER})\s+and\s+(?P<hi>{_NUMBER})"
    rf"|(?<![\w.])(?P<a>{_NUMBER})\s*\u2013\s*(?P<b>{_NUMBER})"
)

# What a sentence says a number is, from the words around it, and the kinds of reading
# (`claimlog.log.readings.Kind`) such a number may be: "at step 150" is a step, "51.5%" a
# percentage (or the workshop's 90% bar, a setting), "3015x" a ratio, "lr 0.5" and "4000
# steps" settings, "the loss ends at 0.0079" a loss, "77 parameters" a count.
KINDS = {
    "step": ("step",),
    "percentage": ("percentage", "setting"),
    "accuracy": ("percentage",),  # "ends at 90.0%", "90.0% test accuracy": measured, no bar
    "ratio": ("ratio",),
    "setting": ("setting",),
    "loss": ("loss",),
    "count": ("count",),
}
_BEFORE = (
    ("step", re.compile(r"\bsteps?\s*$", re.I)),
    ("setting", re.compile(r"\b(?:lr|learning rate)\s*(?:=|of|at)?\s*$", re.I)),
    ("loss", re.compile(r"\bloss(?:\s+(?:=|of|is|at|to|falls to|ends at|ends near))?\s*$", re.I)),
)
_AFTER = (
    ("accuracy", re.compile(r"\s*%\s+(?:(?:final|test|train|training)\s+)*accuracy\b", re.I)),
    ("percentage", re.compile(r"\s*%")),
    ("ratio", re.compile(r"x(?![A-Za-z0-9])")),
    ("setting", re.compile(r"\s+steps\b", re.I)),
    ("count", re.compile(r"\s+(?:parameters|points|samples)\b", re.I)),
)


# Words that make the number after them a bound, not a value, each with the bound it words
# (`claimlog.log.readings.Bound`): "by step 100" (at most 100), "within 10x", "at least 90%",
# "under 0.02" (below), "more than 1000x" (above), "reaches 90%" (a bar crossed: at least).
# docs/authoring.md lists them.
BOUND_WORDS: Mapping[str, str] = {
    **dict.fromkeys(("by", "within", "at most", "no more than", "up to", "<=", "\u2264"), "<="),
    **dict.fromkeys(("at least", "no less than", "reach", "reaches", "reached"), ">="),
    **dict.fromkeys(("reaching", ">=", "\u2265"), ">="),
    **dict.fromkeys(("more than", "above", "over", ">"), ">"),
    **dict.fromkeys(("less than", "fewer than", "under", "below", "<"), "<"),
}
_BOUND_BEFORE = re.compile(
    r"(?:^|(?<=[\s(]))(?P<word>"
    + "|".join(re.escape(word) for word in sorted(BOUND_WORDS, key=len, reverse=True))
    + r")\s*(?:steps?\s+)?$",
    re.I,
)


def bound_worded(before: str, quoted: str) -> Bound | None:
    """The bound the words just before a quoted number make it ("by step 100": at most 100),
    or None where they make it a value."""
    found = _BOUND_BEFORE.search(before)
    return None if found is None else Bound(BOUND_WORDS[found["word"].lower()], float(quoted))


# Words before a percentage that make it a measured result, never the 90% bar: "ends at".
_MEASURED = re.compile(r"\b(?:ends|ending|ended|finishes|scores?|scored)\s+(?:at\s+)?$", re.I)


def kind_said(before: str, after: str) -> str | None:
    """What the words around a quoted number say it is (see `KINDS`), or None."""
    for kind, pattern in _AFTER:
        if pattern.match(after):
            return "accuracy" if kind == "percentage" and _MEASURED.search(before) else kind
    for kind, pattern in _BEFORE:
        if pattern.search(before):
            return kind
    return None


@dataclass(frozen=True)
class Quote:
    """One number a citation covers, as written, with what the sentence says it is (see
    `KINDS`; None where it does not say); or a range quoted as one ("between 0.005 and
    0.011"), with its two ends as written. `where`: (line, column) of each number as written
    in its document (the range's two ends), for rewriting it in place."""

    text: str
    kind: str | None = None
    ends: tuple[str, str] | None = None
    # The bound the sentence words it as ("by step 100": at most 100), or None for a value.
    bound: Bound | None = None
    offset: int = 0  # in its paragraph, until placed
    end_offsets: tuple[int, int] | None = None
    where: tuple[tuple[int, int], ...] = ()
    # The word the sentence writes just before the number, lower case ("seed" in "seed 80",
    # "depth" in "depth = 8"): what names a setting it quotes.
    word: str = ""

    @property
    def span(self) -> tuple[float, float] | None:
        """A range's (low, high), or None for a single number."""
        if self.ends is None:
            return None
        lo, hi = (float(end) for end in self.ends)
        return min(lo, hi), max(lo, hi)

    def placed(self, paragraph: Paragraph) -> Quote:
        """This quote, with where its numbers stand in the document."""
        offsets = self.end_offsets if self.end_offsets is not None else (self.offset,)
        return replace(self, where=tuple(paragraph.locate(o) for o in offsets))


@dataclass(frozen=True)
class Citation:
    """One citation of the log in a document of the workshop's text."""

    path: str
    md_line: int  # 1-based line where the citation stands (in its cell, in a notebook)
    lines: tuple[int, ...]  # the cited log lines
    sentence: str
    quotes: tuple[Quote, ...]  # the numbers it covers
    cell: int | None = None  # the notebook cell it stands in, 1-based; None in a text file
    # It cites the published log ("published line 9"): what the original author printed.
    published: bool = False

    @property
    def quoted(self) -> tuple[str, ...]:
        """The numbers it covers, as written."""
        return tuple(q.text for q in self.quotes)

    @property
    def where(self) -> str:
        """ "module.md:12", or "module.ipynb, cell 3, line 2"."""
        return where(self.path, self.cell, self.md_line)


def where(path: str, cell: int | None, line: int) -> str:
    """Where a line of the workshop's text stands, for people."""
    return f"{path}:{line}" if cell is None else f"{path}, cell {cell}, line {line}"


def _expand(listing: str) -> list[int]:
    out: list[int] = []
    for part in re.split(r"\s*(?:,|and|&)\s*", listing):
        bounds = re.split(r"\s*(?:-|\u2013|to)\s*", part)
        lo, hi = int(bounds[0]), int(bounds[-1])
        out.extend(range(lo, hi + 1) if hi >= lo else [lo, hi])
    return out


def quoted_numbers(sentence: str, skip: Sequence[tuple[int, int]] = ()) -> Iterator[re.Match[str]]:
    """The numbers a sentence quotes, outside the spans `skip`: not names ("S4", "x1",
    "layer-1", "layer 4's", "ln 2")."""
    for q in QUOTED.finditer(sentence):
        if any(start <= q.start() < end for start, end in skip):
            continue
        if NAME_WORD.search(sentence[: q.start()]):
            continue
        yield q


# The word just before a number, an "=", ":" or "of" between them allowed ("seed 42", "lr = 0.5").
WORD_BEFORE = re.compile(r"([A-Za-z]+)\s*(?:=|:|of)?\s*$")


def _quotes(sentence: str, cites: Sequence[re.Match[str]], at: int) -> list[list[Quote]]:
    """The numbers each citation covers, each with what the sentence says it is: those since
    the previous citation; the numbers after the last citation belong to the last. `at` is
    the sentence's offset in its paragraph, which each quote keeps."""
    numbers: list[list[Quote]] = [[] for _ in cites]

    def belongs(end: int) -> int:
        after = [i for i, c in enumerate(cites) if c.start() >= end]
        return after[0] if after else len(cites) - 1

    cited = [(c.start(), c.end()) for c in cites]
    ranges = [
        m
        for m in VALUE_RANGE.finditer(sentence)
        if not any(start <= m.start() < end for start, end in cited)
    ]
    for m in ranges:
        ends = (m.group("lo") or m.group("a"), m.group("hi") or m.group("b"))
        low = m.start("lo") if m.group("lo") else m.start("a")
        high = m.start("hi") if m.group("hi") else m.start("b")
        numbers[belongs(m.end())].append(
            Quote(
                m.group(0),
                ends=ends,
                offset=at + m.start(),
                end_offsets=(at + low, at + high),
            )
        )
    spans = cited + [(m.start(), m.end()) for m in ranges]
    for q in quoted_numbers(sentence, spans):
        before = sentence[: q.start()]
        kind = kind_said(before, sentence[q.end() :])
        word = WORD_BEFORE.search(before)
        numbers[belongs(q.end())].append(
            Quote(
                q.group(0),
                kind,
                bound=bound_worded(before, q.group(0)),
                offset=at + q.start(),
                word=word.group(1).lower() if word else "",
            )
        )
    return numbers


def find_citations(path: str, source: str, cell: int | None = None) -> list[Citation]:
    """Every citation of the log in one document's prose (`claimlog.text.prose`: code, front
    matter and markup are not prose); `cell`, the notebook cell the source is, if any."""
    found: list[Citation] = []
    for paragraph in paragraphs(source):
        for s, e in paragraph.sentences():
            sentence = paragraph.text[s:e]
            cites = list(CITATION.finditer(sentence))
            if not cites:
                continue  # its numbers cite nothing (`claimlog.text.citations`)
            for c, quoted in zip(cites, _quotes(sentence, cites, s), strict=True):
                line, _ = paragraph.locate(s + c.start())
                placed = tuple(q.placed(paragraph) for q in quoted)
                cited = _expand(c.group("list") or c.group("one"))
                text = " ".join(sentence.split())
                published = c.group("published") is not None
                found.append(Citation(path, line, tuple(cited), text, placed, cell, published))
    return found


# -- numbers the prose quotes without citing any line ------------------------------------------
# A citation covers the numbers of its sentence; a number in a sentence that cites nothing is
# a number nobody checks. These are listed, so that no number of the text goes unexamined:
# the author cites its line, or marks the sentence as citing nothing on purpose with
# `NOTHING_CITED` (an HTML comment, invisible wherever the text renders):
#
#     The workshop takes about 90 minutes. <!-- cites nothing -->
#
# Not counted, because they quote no result: names ("S4", "layer 4", "ln 2"), what
# `claimlog.text.prose` hides (code, front matter, a heading's section number, a list's marker),
# dates ("2026-12-02") and years ("in 2015").
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
# A year: four digits from 1900 to 2099, standing alone ("in 2015", "(Ioffe & Szegedy, 2015)"),
# not a quantity ("2000 steps", "1990x").
_YEAR = re.compile(r"(?<![\d.])(?:19|20)\d{2}(?!\d|\.\d|\s*(?:x|%|steps?\b|epochs?\b|points\b))")


@dataclass(frozen=True)
class Uncited:
    """A number of the prose in a sentence that cites no line."""

    path: str
    cell: int | None
    line: int
    number: str
    sentence: str

    @property
    def where(self) -> str:
        return where(self.path, self.cell, self.line)

    def describe(self) -> str:
        """ "module3.md:12  90 in 'The workshop takes about 90 minutes.'" """
        return f"{self.where}  {self.number} in {self.sentence!r}"


def uncited_numbers(path: str, source: str, cell: int | None = None) -> Iterator[Uncited]:
    """The numbers of a document's prose (a notebook's `cell`) that no citation covers."""
    for paragraph in paragraphs(source):
        for start, end in paragraph.sentences():
            sentence = paragraph.text[start:end]
            if CITATION.search(sentence) or paragraph.marked(start, end):
                continue
            skip = [(m.start(), m.end()) for m in _DATE.finditer(sentence)]
            skip += [(m.start(), m.end()) for m in _YEAR.finditer(sentence)]
            for number in quoted_numbers(sentence, skip):
                line, _ = paragraph.locate(start + number.start())
                said = " ".join(sentence.split())
                yield Uncited(path, cell, line, number.group(0), said)
