"""Citations of the log in the workshop's prose, and whether the log still says them.

The workshop's Markdown cites results.log by line: "the layer-1 gradient is 3015x smaller
(line 40)", "see lines 25 and 29", "lines 35-38", "results.log:40". A citation holds when
every cited line exists in the log and every number its sentence quotes appears on one of
the cited lines at the precision written ("0.25" matches 0.250000, "0.693" matches 0.693147,
"3015x" matches 3015).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from bnvg.fragility import NUMBER

_NUM = r"\d+"
_RANGE = rf"{_NUM}(?:\s*(?:-|\u2013|to)\s*{_NUM})?"  # "35-38", "35\u201338", "35 to 38"
_LIST = rf"{_RANGE}(?:\s*(?:,|and|&)\s*{_RANGE})*"  # "25 and 29", "25, 29 and 40"
CITATION = re.compile(rf"\blines?\s+(?P<list>{_LIST})|results\.log:(?P<one>{_LIST})", re.I)
# A quoted number: not glued to a letter before it ("S4", "x1", "L1" are names, not numbers).
QUOTED = re.compile(rf"(?<![A-Za-z_\d.]){NUMBER.pattern}")
SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


@dataclass(frozen=True)
class Citation:
    """One citation of the log in a Markdown file."""

    path: str
    md_line: int  # 1-based line of the Markdown file where the citation stands
    lines: tuple[int, ...]  # the cited log lines
    sentence: str
    quoted: tuple[str, ...]  # the numbers the sentence quotes (citations excluded)


def _expand(listing: str) -> list[int]:
    out: list[int] = []
    for part in re.split(r"\s*(?:,|and|&)\s*", listing):
        bounds = re.split(r"\s*(?:-|\u2013|to)\s*", part)
        lo, hi = int(bounds[0]), int(bounds[-1])
        out.extend(range(lo, hi + 1) if hi >= lo else [lo, hi])
    return out


def _sentences(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each sentence of a paragraph."""
    start = 0
    for m in SENTENCE_END.finditer(text):
        yield start, m.end()
        start = m.end()
    if text[start:].strip():
        yield start, len(text)


def _is_name(text: str, start: int) -> bool:
    """'layer-1', 'depth-8': a number hyphenated to a word names something."""
    return start >= 2 and text[start - 1] == "-" and text[start - 2].isalpha()


def _distance(a: tuple[int, int], b: tuple[int, int]) -> int:
    return max(a[0] - b[1], b[0] - a[1], 0)


def find_citations(path: str, markdown: str) -> list[Citation]:
    """Every citation of the log in one Markdown document (code blocks are skipped)."""
    found: list[Citation] = []
    in_code = False
    paragraph: list[tuple[int, str]] = []

    def flush() -> None:
        if not paragraph:
            return
        text, starts, pos = "", [], 0
        for number, line in paragraph:
            starts.append((pos, number))
            text += line + " "
            pos = len(text)
        for s, e in _sentences(text):
            sentence = text[s:e]
            cites = list(CITATION.finditer(sentence))
            if not cites:
                continue
            # Each quoted number belongs to the citation nearest to it in the sentence.
            numbers: list[list[str]] = [[] for _ in cites]
            for q in QUOTED.finditer(sentence):
                if any(a <= q.start() < b for a, b in (c.span() for c in cites)):
                    continue  # a cited line number, not a quoted value
                if _is_name(sentence, q.start()):
                    continue
                nearest = min(range(len(cites)), key=lambda i: _distance(cites[i].span(), q.span()))
                numbers[nearest].append(q.group(0))
            for c, quoted in zip(cites, numbers, strict=True):
                offset = s + c.start()
                md_line = max(n for p, n in starts if p <= offset)
                cited = _expand(c.group("list") or c.group("one"))
                found.append(
                    Citation(path, md_line, tuple(cited), " ".join(sentence.split()), tuple(quoted))
                )
        paragraph.clear()

    for number, line in enumerate(markdown.splitlines(), start=1):
        if line.lstrip().startswith("```"):
            flush()
            in_code = not in_code
            continue
        if in_code:
            continue
        if not line.strip():
            flush()
        else:
            paragraph.append((number, line))
    flush()
    return found


def matches(quoted: str, printed: str) -> bool:
    """Whether `printed` (a number on a log line) reads as `quoted` at the quote's precision."""
    q, p = quoted.lstrip("+"), printed.lstrip("+")
    if q == p:
        return True
    try:
        value = float(p)
    except ValueError:
        return False
    if "e" in q.lower():
        mantissa = q.lower().split("e")[0]
        digits = len(mantissa.split(".")[1]) if "." in mantissa else 0
        return f"{value:.{digits}e}" == q.lower()
    digits = len(q.split(".")[1]) if "." in q else 0
    return f"{value:.{digits}f}" == q


def unmatched(citation: Citation, log_lines: Sequence[str]) -> tuple[list[int], list[str]]:
    """(cited lines the log does not have, quoted numbers no cited line says)."""
    missing = [n for n in citation.lines if not 1 <= n <= len(log_lines)]
    present = [log_lines[n - 1] for n in citation.lines if 1 <= n <= len(log_lines)]
    printed = [t for line in present for t in NUMBER.findall(line)]
    absent = [q for q in citation.quoted if not any(matches(q, t) for t in printed)]
    return missing, absent
