"""What of a document is prose, as a reader reads it: paragraphs and sentences, with where each
character stands.

The workshop's text is Markdown (MyST included), Quarto or a notebook's Markdown cells. Only
its prose quotes numbers; the rest is hidden here, character for character (each hidden
character becomes a space, so a column of the prose is the column of the source and a quote
can be rewritten in place):

- code: fenced blocks (```` ``` ```` or ``~~~``, Quarto's ```` ```{python} ```` and MyST's
  ```` ```{code-cell} ```` included) and inline code spans;
- the document's YAML front matter;
- HTML: comments and tags (a comment of its own is invisible in every renderer, which is what
  makes `NOTHING_CITED` a marker), and the targets of links and images;
- the parts of a line that number it rather than quote anything: a heading's section number
  ("## 3.2 Training") and a numbered list's marker ("2. Then").

MyST and Quarto directives whose body is prose (```` ```{note} ````, ``:::`` divs) stay prose;
only their fence lines and option lines (``:class: tip``) are hidden.

A heading and each list item stand as paragraphs of their own, as they render.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

# The marker that says "this sentence cites no log line, on purpose": an HTML comment, so it
# renders as nothing in Markdown, MyST, Quarto and Jupyter. It silences the numbers of the
# sentence it stands in, or of the sentence it follows.
NOTHING_CITED = "<!-- cites nothing -->"
_MARKER = re.compile(r"<!--\s*cites nothing\s*-->", re.I)

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*(\{?[\w-]*\}?)")
# Fenced directives whose body is prose, not code (MyST admonitions and figures, say); any
# other info string (python, {python}, {code-cell}, none) marks code.
_PROSE_DIRECTIVE = re.compile(
    r"^\{(?:note|tip|hint|important|warning|caution|attention|danger|error|seealso|"
    r"admonition|margin|sidebar|topic|figure|epigraph|pull-quote|dropdown|card)\}$"
)
_COLON_FENCE = re.compile(r"^\s*:{3,}")
_DIRECTIVE_OPTION = re.compile(r"^\s*:[\w-]+:")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_SECTION_NUMBER = re.compile(r"^(\s{0,3}#{1,6}\s+)(\d+(?:\.\d+)*\.?)(?=\s|$)")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_LIST_NUMBER = re.compile(r"^(\s*)(\d+[.)])(?=\s)")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
_COMMENT = re.compile(r"<!--.*?-->")
_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_LINK_TARGET = re.compile(r"(?<=\])\([^()\s]*(?:\s+\"[^\"]*\")?\)")
_AUTOLINK = re.compile(r"<(?:https?|mailto|file):[^<>\s]*>")
SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


def _blank(text: str, start: int, end: int) -> str:
    return text[:start] + " " * (end - start) + text[end:]


def _mask_line(line: str) -> tuple[str, list[int]]:
    """A prose line with its non-prose parts blanked; and the columns where a marker ends."""
    markers = [m.end() for m in _MARKER.finditer(line)]
    for pattern in (_INLINE_CODE, _COMMENT, _AUTOLINK, _TAG, _LINK_TARGET):
        for m in pattern.finditer(line):
            line = _blank(line, m.start(), m.end())
    for numbering in (_SECTION_NUMBER, _LIST_NUMBER):
        found = numbering.match(line)
        if found:
            line = _blank(line, found.start(2), found.end(2))
    return line, markers


def prose_lines(source: str) -> Iterator[tuple[int, str | None, list[int]]]:
    """Each line of a document, 1-based, masked to its prose; None for a line that is no prose
    at all (code, front matter, a fence), which ends a paragraph; and where markers end."""
    lines = source.splitlines()
    front_matter = bool(lines) and lines[0].strip() == "---"
    fence: str | None = None  # the fence that opened the code block we are in
    for number, line in enumerate(lines, start=1):
        if front_matter:
            if number > 1 and line.strip() in ("---", "..."):
                front_matter = False
            yield number, None, []
            continue
        opened = _FENCE.match(line)
        if fence is not None:
            closing = opened and not opened.group(2) and opened.group(1)[0] == fence[0]
            if closing and opened and len(opened.group(1)) >= len(fence):
                fence = None
            yield number, None, []
            continue
        if opened:
            if not _PROSE_DIRECTIVE.match(opened.group(2)):
                fence = opened.group(1)  # code until the closing fence
            yield number, None, []
            continue
        if _COLON_FENCE.match(line) or _DIRECTIVE_OPTION.match(line):
            yield number, None, []
            continue
        masked, markers = _mask_line(line)
        yield number, masked, markers


@dataclass(frozen=True)
class Paragraph:
    """A paragraph of prose: its lines joined by spaces, and where each line starts in it."""

    text: str
    starts: tuple[tuple[int, int], ...]  # (offset in text, line number), in order
    markers: tuple[int, ...]  # offsets in text where a NOTHING_CITED marker ends

    def locate(self, offset: int) -> tuple[int, int]:
        """(line number, 0-based column) of a character of the paragraph."""
        at, line = max((s, n) for s, n in self.starts if s <= offset)
        return line, offset - at

    def sentences(self) -> Iterator[tuple[int, int]]:
        """(start, end) of each sentence."""
        start = 0
        for m in SENTENCE_END.finditer(self.text):
            yield start, m.end()
            start = m.end()
        if self.text[start:].strip():
            yield start, len(self.text)

    def marked(self, start: int, end: int) -> bool:
        """Whether the sentence at (start, end) carries the marker: inside it, or right
        after it (before the next sentence's first word)."""
        sentence, after = self.text[start:end], self.text[end:]
        first_word = start + len(sentence) - len(sentence.lstrip())
        gap = len(after) - len(after.lstrip())
        return any(first_word < m <= end + gap for m in self.markers)


def paragraphs(source: str) -> Iterator[Paragraph]:
    """The paragraphs of a document's prose: blocks between blank lines and code, a heading
    on its own, and each list item on its own."""
    text, starts, markers = "", list[tuple[int, int]](), list[int]()

    def flush() -> Iterator[Paragraph]:
        nonlocal text, starts, markers
        if starts:
            yield Paragraph(text, tuple(starts), tuple(markers))
        text, starts, markers = "", [], []

    for number, line, ends in prose_lines(source):
        if line is None or not (line.strip() or ends):  # a marker's own line is the paragraph's
            yield from flush()
            continue
        heading = bool(_HEADING.match(line))
        if heading or _LIST_ITEM.match(line):
            yield from flush()
        starts.append((len(text), number))
        markers.extend(len(text) + end for end in ends)
        text += line + " "
        if heading:
            yield from flush()
    yield from flush()
