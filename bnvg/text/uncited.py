"""The numbers the prose quotes without citing any line of the log.

A citation covers the numbers of its sentence (`bnvg.text.citations`); a number in a sentence
that cites nothing is a number nobody checks. These are listed, so that no number of the text
goes unexamined: the author cites its line, or marks the sentence as citing nothing on purpose
with `NOTHING_CITED` (an HTML comment, invisible wherever the text renders):

    The workshop takes about 90 minutes. <!-- cites nothing -->

Not counted, because they quote no result: names ("S4", "layer 4", "ln 2"), what
`bnvg.text.prose` hides (code, front matter, a heading's section number, a list's marker),
dates ("2026-12-02") and years ("in 2015").
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from bnvg.text.citations import CITATION, quoted_numbers, where
from bnvg.text.prose import paragraphs

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
