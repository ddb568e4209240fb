"""Citations of the log in the workshop's prose, and whether the log still says them.

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

A quoted number holds when a cited line says it at the precision written ("0.25" matches
0.250000, "0.693" matches 0.693147, "3015x" matches 3015). Otherwise it is read as a quote of
the nearest reading on the cited lines, and judged by the platforms alone, at the workshop's
own seeds (`ReadingEvidence.platform_verdict`):

- a value must be what the cited line prints on this run's platform or on a platform of the
  evidence: a robust reading (every platform prints it alike) must be quoted as the log
  prints it; a fragile reading quoted as another platform prints it is drift, reported and
  not failed; a failure names what the platforms print ("every platform prints step 50");
- a reading whose claim holds on some platforms and not on others (layer norm's final
  accuracy) fails whenever it is quoted as a fixed value, with its range and how many
  platforms it holds on: no fixed value of it is true;
- a claim's bound may be quoted instead of the value only where the sentence words a bound
  just before the number (`BOUND_WORDS`: "by step 100", "within 10x", "at least 90%",
  "under 0.02", "more than 1000x"); "ends at 90.0%" states a value, and fails where the line
  prints 51.5.

What other seeds do (another minibatch order, other starting weights) is another experiment:
it says how general the lesson is, not what the cited line prints, and it never excuses a
value. It is a note beside the citation ("'S4 plain ratio, times smaller' over other seeds:
about 3000 in 3 of 33 starting weights"), never its failure.

A number the prose quotes in a sentence that cites no line is listed too (`Uncited`,
`uncited_numbers`, at the end): no number of the text goes unexamined.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

from claimlog.evidence.fragility import (
    ROBUST,
    Fragility,
    ReadingEvidence,
    SeedWords,
    Seen,
    version_key,
)
from claimlog.evidence.verdicts import status_of
from claimlog.log.readings import KINDS as READING_KINDS
from claimlog.log.readings import Bound, Reading, declared_as
from claimlog.text.prose import Paragraph, paragraphs

_NUMBER = r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?"
_NUM = r"\d+"
_RANGE = rf"{_NUM}(?:\s*(?:-|\u2013|to)\s*{_NUM})?"  # "35-38", "35\u201338", "35 to 38"
_LIST = rf"{_RANGE}(?:\s*(?:,|and|&)\s*{_RANGE})*"  # "25 and 29", "25, 29 and 40"
CITATION = re.compile(rf"\blines?\s+(?P<list>{_LIST})|results\.log:(?P<one>{_LIST})", re.I)
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
    "by": "<=",
    "within": "<=",
    "at least": ">=",
    "at most": "<=",
    "no more than": "<=",
    "no less than": ">=",
    "more than": ">",
    "less than": "<",
    "fewer than": "<",
    "under": "<",
    "below": "<",
    "above": ">",
    "over": ">",
    "up to": "<=",
    "reach": ">=",
    "reaches": ">=",
    "reached": ">=",
    "reaching": ">=",
    "<": "<",
    ">": ">",
    "<=": "<=",
    ">=": ">=",
    "\u2264": "<=",
    "\u2265": ">=",
}
_BOUND_BEFORE = re.compile(
    r"(?:^|(?<=[\s(]))(?P<word>"
    + "|".join(re.escape(word) for word in sorted(BOUND_WORDS, key=len, reverse=True))
    + r")\s*(?:steps?\s+)?$",
    re.I,
)


def words_a_bound(before: str) -> bool:
    """Whether the words just before a quoted number make it a bound ("by step 100")."""
    return bool(_BOUND_BEFORE.search(before))


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
        numbers[belongs(q.end())].append(
            Quote(q.group(0), kind, bound=bound_worded(before, q.group(0)), offset=at + q.start())
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
                found.append(Citation(path, line, tuple(cited), text, placed, cell))
    return found


# -- does the log say it? -----------------------------------------------------------------------


def rounds_to(quoted: str, value: float) -> bool:
    """Whether `value` reads as `quoted` at the precision the quote is written at."""
    q = quoted.lstrip("+").lower()
    if "e" in q:
        mantissa = q.split("e")[0]
        digits = len(mantissa.split(".")[1]) if "." in mantissa else 0
        return f"{value:.{digits}e}" == q
    digits = len(q.split(".")[1]) if "." in q else 0
    return f"{value:.{digits}f}" == q


def says(reading: Reading, quoted: str) -> bool:
    """Whether a line that prints `reading` says the quoted number: its print or its
    full-precision value reads as the quote ("+/-4" says 4 and -4)."""
    printed = reading.number
    if printed is None or reading.value is None:
        return False
    values = [float(printed), float(reading.value)]
    if reading.quantity.plus_minus:
        values += [-v for v in values]
    return any(rounds_to(quoted, v) for v in values)


def _names_say(names: Sequence[str], quoted: str) -> bool:
    for name in names:
        try:
            if rounds_to(quoted, float(name)):
                return True
        except ValueError:
            continue
    return False


K_OF_N = re.compile(r"\b(\d+)\s+of\s+(?:the\s+)?(\d+)\b")


def _evidence_says(evidence: ReadingEvidence | None, quote: Quote, sentence: str) -> bool:
    """The evidence of a cited reading says the quote: its claim's bound, where the sentence
    words it as a bound ("by step 100"), or a count of how often that bound holds, as a pair
    "k of N" that one of its counts is ("at least 90% in 16 of 33 minibatch orders": a lone
    16, or a 16 of 40, is no count of it)."""
    if evidence is None or evidence.bound is None:
        return False
    if quote.bound is not None and rounds_to(quote.text, float(evidence.bound.threshold)):
        return True
    axes = {seen.axis for seen in evidence.seeds.values()}
    counts = {evidence.holds_in(g) for g in (*axes, "seeds", "platforms")}
    pairs = {(int(k), int(n)) for k, n in K_OF_N.findall(sentence)}
    return any(quote.text in (str(k), str(n)) for k, n in pairs & counts)


def _bound_says(reading: Reading, quote: Quote) -> bool:
    """The quote states the bound the reading's claim verified this session, where the
    sentence words it as a bound ("reaches 90% by step 100", "under 0.02")."""
    bound = reading.bound
    return (
        quote.bound is not None
        and bound is not None
        and rounds_to(quote.text, float(bound.threshold))
    )


@dataclass(frozen=True)
class CitedLine:
    """What one log line says this session: its readings and names, if its claim passed."""

    number: int
    text: str
    readings: tuple[Reading, ...] = ()
    names: tuple[str, ...] = ()
    verified: bool = True


@dataclass(frozen=True)
class Verdict:
    problems: list[str] = field(default_factory=list)
    drift: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # how the quoted lesson holds over seeds


def _of_kind(readings: Sequence[Reading], kind: str | None) -> list[Reading]:
    """The readings a number the sentence calls `kind` may quote (all of them for None)."""
    if kind is None:
        return list(readings)
    return [r for r in readings if r.kind.name in KINDS[kind]]


def _printed_elsewhere(
    quoted: str, kind: str | None, lines: Mapping[int, CitedLine], cited: Sequence[int]
) -> str:
    """ "; 77 is printed at line 25 (S3 parameters, parameters)": where else the log prints
    the quoted number (of the kind said), for a citation of the wrong line."""
    for number, line in sorted(lines.items()):
        if number in cited or not line.verified:
            continue
        found = next((r for r in _of_kind(line.readings, kind) if says(r, quoted)), None)
        if found is not None:
            return f"; {quoted} is printed at line {number} ({found.name})"
    return ""


def _nearest(readings: Sequence[Reading], quoted: str) -> Reading | None:
    value = float(quoted)
    numeric = [r for r in readings if r.number is not None and r.value is not None]
    if not numeric:
        return None

    def distance(r: Reading) -> float:
        v = float(r.number or 0)
        return abs(v - value) / max(abs(v), abs(value), 1e-300)

    return min(numeric, key=distance)


def _by_release(fragility: Fragility, evidence: ReadingEvidence, quoted: str) -> str:
    """ "; no torch release here prints 100.0 (2.12.1: 51.5, 2.13.0: 51.5, ...)": which
    torch releases of the evidence print the quote, where it holds more than one."""
    releases = sorted([fragility.reference_release, *fragility.releases], key=version_key)
    prints = {r: s for r in releases if (s := fragility.on_release(evidence, r)) is not None}
    if len(prints) < 2 or evidence.platform_verdict == ROBUST:
        return ""  # a robust reading prints the same on every release: nothing to add
    which = [
        r for r, s in prints.items() if s.value is not None and rounds_to(quoted, float(s.value))
    ]
    printed = {s.printed for s in prints.values()}
    shown = (
        f"each prints {printed.pop()}"
        if len(printed) == 1
        else ", ".join(f"{r}: {s.printed}" for r, s in prints.items())
    )
    if not which:
        return f"; no torch release here prints {quoted} ({shown})"
    return f"; torch {', '.join(which)} print{'s' if len(which) == 1 else ''} it ({shown})"


def _luck(reading: Reading, quoted: str, evidence: ReadingEvidence, fragility: Fragility) -> str:
    values = [s.as_float() for s in [evidence.reference, *evidence.platforms.values()]]
    finite = [v for v in values if v == v]
    span = f"{min(finite):g} to {max(finite):g}" if finite else "?"
    counts = evidence.holds_in("platforms")
    held = f"{evidence.bound} on {counts[0]} of {counts[1]} platforms" if counts else ""
    return (
        f"quotes {quoted} for {reading.name!r} as a fixed value, but the platforms disagree "
        f"on what its claim says: it was {span} over the platforms the sweep ran"
        + (f" ({held})" if held else "")
        + _by_release(fragility, evidence, quoted)
        + ". Say how often it holds instead"
    )


def _printed_by(evidence: ReadingEvidence, quoted: str) -> str:
    """Which platforms' value of a reading reads as `quoted`: "2 platforms of the sweep"
    ("and the published log" beside, where it printed it too); empty if no platform did.
    The published log alone is no platform: what it says, no torch here computed."""

    def reads_as(seen: Seen) -> bool:
        return seen.value is not None and rounds_to(quoted, float(seen.value))

    swept = sum(1 for seen in evidence.platforms.values() if reads_as(seen))
    if not swept:
        return ""
    said = f"{swept} platform{'s' if swept > 1 else ''} of the sweep"
    published = evidence.published
    return said + (" and the published log" if published and reads_as(published) else "")


def _over_seeds(reading: Reading, evidence: ReadingEvidence | None, seeds: SeedWords) -> str | None:
    """A note on how general a cited reading's lesson is, where some seed broke its bound."""
    if evidence is None or evidence.general or evidence.holds_on_some_platforms_only:
        return None
    return f"{reading.name!r} over other seeds: {evidence.what_holds(seeds)}"


def check(
    citation: Citation,
    lines: Mapping[int, CitedLine],
    context: Mapping[int, Sequence[CitedLine]],
    fragility: Fragility,
    n_lines: int,
    elsewhere_platform: bool = False,
    seeds: SeedWords | None = None,
) -> Verdict:
    """Whether the log this session verified says what `citation` quotes. On a platform new
    to the evidence (`elsewhere_platform`: another fingerprint computes otherwise), a quote of
    what the reference prints is drift where this run prints otherwise and the evidence is
    fresh, as the reading itself is (`claimlog.evidence.verdicts`). A note on how general a
    lesson is names the seed axes in the workshop's words (`seeds`)."""
    verdict = Verdict()
    cited = [lines[n] for n in citation.lines if n in lines]
    for n in citation.lines:
        if not 1 <= n <= n_lines:
            verdict.problems.append(f"cites line {n}, but results.log has {n_lines} lines")
        elif not lines[n].verified:
            verdict.problems.append(
                f"cites line {n}, which this run did not verify (its claim failed or did not run)"
            )
    readings = [r for line in cited if line.verified for r in line.readings]
    heard = [r for n in citation.lines for line in context.get(n, ()) for r in line.readings]
    names = [name for line in cited for name in line.names]
    for quote in citation.quotes:
        if quote.span is not None:
            verdict.problems.extend(_range_problems(quote.span, readings, fragility))
            continue
        quoted, said_kind = quote.text, quote.kind
        pool = _of_kind(readings, said_kind)
        match = next((r for r in pool if says(r, quoted)), None)
        if match is not None:
            evidence = fragility.reading(match.name)
            if evidence is not None and evidence.holds_on_some_platforms_only:
                verdict.problems.append(_luck(match, quoted, evidence, fragility))
            elif (note := _over_seeds(match, evidence, seeds or {})) is not None:
                verdict.notes.append(note)
            continue
        if (
            any(says(r, quoted) for r in _of_kind(heard, said_kind))
            or (said_kind is None and _names_say(names, quoted))
            or any(_bound_says(r, quote) for r in readings)
            or any(
                _evidence_says(fragility.reading(r.name), quote, citation.sentence)
                for r in readings
            )
        ):
            continue
        # The nearest reading of the kind the sentence says, the headings it is read under
        # included ("after 4000 steps" quotes the heading's steps).
        candidates = pool + (_of_kind(heard, said_kind) if said_kind else [])
        # What the sentence says first, measured ("51.5%" is an accuracy before the 90% bar).
        primary = [r for r in candidates if said_kind and r.kind.name == KINDS[said_kind][0]]
        nearest = _nearest(primary or candidates, quoted)
        elsewhere = _printed_elsewhere(quoted, said_kind, lines, citation.lines)
        other = next(((c, r) for c in cited for r in c.readings if says(r, quoted)), None)
        if said_kind is not None and not pool and other is not None:
            # The number is there, but the cited lines print nothing of the kind the sentence
            # says: name both kinds, and how the author declares the one it says.
            line, printed = other
            wanted = READING_KINDS[KINDS[said_kind][0]]
            verdict.problems.append(
                f"quotes {quoted} as {'an' if said_kind[0] in 'aeiou' else 'a'} {said_kind}, "
                f"and line {line.number} prints {printed.printed} as {printed.name!r}, but "
                f"declared of kind {printed.kind.name} ({declared_as(printed.kind)}), not "
                f"{wanted.name}: declare its Quantity with {declared_as(wanted)} if it is "
                f"one, or word the sentence for what it is"
            )
            continue
        if nearest is None:
            shown = "; ".join(f"line {c.number} says {c.text.strip()!r}" for c in cited)
            article = "an" if said_kind and said_kind[0] in "aeiou" else "a"
            as_what = f" as {article} {said_kind}" if said_kind else ""
            verdict.problems.append(
                f"quotes {quoted}{as_what}, which no cited line says: {shown}" + elsewhere
            )
            continue
        evidence = fragility.reading(nearest.name)
        printed_by = "" if evidence is None else _printed_by(evidence, quoted)
        if evidence is not None and evidence.holds_on_some_platforms_only:
            verdict.problems.append(_luck(nearest, quoted, evidence, fragility))
        elif evidence is not None and evidence.moved_in_print and printed_by:
            verdict.drift.append(
                f"quotes {quoted} for {nearest.name!r}: here {nearest.printed}; fragile, "
                f"printed {quoted} by {printed_by} (platform-dependent)"
                + _by_release(fragility, evidence, quoted)
            )
        elif (
            elsewhere_platform
            and evidence is not None
            and evidence.reference.value is not None
            and rounds_to(quoted, float(evidence.reference.value))
        ):
            verdict.drift.append(
                f"quotes {quoted} for {nearest.name!r}: here {nearest.printed}, on a platform "
                f"new to the evidence, which computes otherwise; the reference prints {quoted}"
            )
        else:
            moved = evidence is not None and evidence.moved_in_print
            kind = status_of(evidence)
            seen = "" if evidence is None else f"; {evidence.describe_prints()}"
            releases = "" if evidence is None else _by_release(fragility, evidence, quoted)
            honest = "" if evidence is None or not moved else _what_to_say(evidence, quoted)
            verdict.problems.append(
                f"quotes {quoted} for {nearest.name!r}: here {nearest.printed} ({kind}{seen})"
                + releases
                + honest
                + elsewhere
            )
    return verdict


def _platform_prints(evidence: ReadingEvidence) -> dict[str, float]:
    """What every platform of the evidence prints, at the workshop's seeds, by platform."""
    seen = {evidence.reference_platform or "the reference": evidence.reference}
    seen.update(evidence.platforms)
    return {name: float(s.printed) for name, s in seen.items() if s.value is not None}


def _what_to_say(evidence: ReadingEvidence, quoted: str) -> str:
    """Where a fragile quote comes from when no platform prints it, and what every platform
    supports: the value at the precision they agree on, or the range they span."""
    prints = _platform_prints(evidence)
    if not prints:
        return ""
    said = ""
    published = evidence.published
    if published is not None and rounds_to(quoted, float(published.as_float())):
        said += f"; only the published log printed {quoted}, no platform here does"
    lo, hi = min(prints.values()), max(prints.values())
    decimals = len(quoted.split(".")[1]) if "." in quoted and "e" not in quoted.lower() else 0
    agreed = next(
        (
            f"{lo:.{d}f}"
            for d in range(decimals, -1, -1)
            if len({f"{v:.{d}f}" for v in prints.values()}) == 1
        ),
        None,
    )
    printed_lo, printed_hi = evidence.printed(lo), evidence.printed(hi)
    said += "; every platform supports " + (f'"about {agreed}" or ' if agreed is not None else "")
    return said + f'"between {printed_lo} and {printed_hi}"'


def _range_problems(
    span: tuple[float, float], readings: Sequence[Reading], fragility: Fragility
) -> list[str]:
    """A range quoted as one: it holds when it covers the cited reading here and on every
    platform of the evidence (at the workshop's seeds)."""
    lo, hi = span
    numeric = [r for r in readings if r.number is not None]
    if not numeric:
        return [f"quotes the range {lo:g} to {hi:g}, but no cited line prints a number"]
    mid = (lo + hi) / 2
    reading = min(numeric, key=lambda r: abs(float(r.number or 0) - mid))
    here = float(reading.number or 0)
    evidence = fragility.reading(reading.name)
    prints = {} if evidence is None else _platform_prints(evidence)
    missed = {name: v for name, v in prints.items() if not lo <= v <= hi}
    said = []
    if not lo <= here <= hi:
        said.append(f"this run prints {reading.printed}")
    if missed:
        shown = "; ".join(f"{name}: {v:g}" for name, v in sorted(missed.items()))
        said.append(f"it misses {len(missed)} of {len(prints)} platforms of the evidence: {shown}")
    if not said:
        return []
    return [f"quotes the range {lo:g} to {hi:g} for {reading.name!r}: " + "; ".join(said)]


# -- coverage both ways ------------------------------------------------------------------------


@dataclass(frozen=True)
class Coverage:
    """Which lines of the log the workshop's text cites, which it never cites, and which it
    cites that no passing claim verified this session."""

    cited: tuple[int, ...]
    never: tuple[int, ...]  # claim lines no citation names
    unverified: tuple[int, ...]  # cited lines whose claim failed or did not run

    def describe(self) -> list[str]:
        """The coverage, for people: three lines."""
        return [
            f"the text cites {len(self.cited)} lines of the log: {_ranges(self.cited)}",
            f"it never cites {len(self.never)} lines the claims verify: {_ranges(self.never)}",
            f"it cites {len(self.unverified)} lines no passing claim verified this session"
            + (f": {_ranges(self.unverified)}" if self.unverified else ""),
        ]


def coverage(
    cited: Iterable[int], lines: Mapping[int, CitedLine], claim_lines: Iterable[int]
) -> Coverage:
    """The coverage of citations of `cited` line numbers, against this session's log
    (`lines`) and the lines claims write (`claim_lines`)."""
    named = sorted(set(cited))
    return Coverage(
        cited=tuple(named),
        never=tuple(sorted(set(claim_lines) - set(named))),
        unverified=tuple(n for n in named if n not in lines or not lines[n].verified),
    )


def _ranges(numbers: Sequence[int]) -> str:
    """ "10-16, 25, 29": consecutive numbers as ranges."""
    if not numbers:
        return "none"
    spans: list[list[int]] = []
    for n in numbers:
        if spans and n == spans[-1][-1] + 1:
            spans[-1].append(n)
        else:
            spans.append([n])
    return ", ".join(f"{s[0]}-{s[-1]}" if len(s) > 1 else str(s[0]) for s in spans)


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
