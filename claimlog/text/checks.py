"""Whether the log still says what a citation of the workshop's prose quotes.

A citation (`claimlog.text.citations`) is checked against the log this session verified,
as a reader reads it. A quoted number holds when a cited line says it at the precision
written ("0.25" matches 0.250000, "0.693" matches 0.693147, "3015x" matches 3015). Otherwise
it is read as a quote of the nearest reading on the cited lines, and judged by the platforms
alone, at the workshop's own seeds (`ReadingEvidence.platform_verdict`):

- a value must be what the cited line prints on this run's platform or on a platform of the
  evidence: a robust reading (every platform prints it alike) must be quoted as the log
  prints it; a fragile reading quoted as another platform prints it is drift, reported and
  not failed; a failure names what the platforms print ("every platform prints step 50");
- a reading whose claim holds on some platforms and not on others (layer norm's final
  accuracy) fails whenever it is quoted as a fixed value, with its range and how many
  platforms it holds on: no fixed value of it is true;
- a claim's bound may be quoted instead of the value only where the sentence words a bound
  just before the number (`claimlog.text.citations.BOUND_WORDS`: "by step 100", "within
  10x", "at least 90%"); "ends at 90.0%" states a value, and fails where the line prints 51.5.

A number is matched to the cited readings one at a time, by kind and value
(`may_misquote`): a number of the sentence that fits none of them ("cut 80/10/10" beside a
seed of 42) is the sentence's own, listed as uncited, not a wrong quote. A line whose claim
failed is judged by its readings that still print as recorded (`CitedLine.standing`): a
quote of one holds, and a quote they do not bear out fails as a citation of a line this run
did not verify, never as a wrong quote of a number nobody verified.

What other seeds do (another minibatch order, other starting weights) is another experiment:
it says how general the lesson is, not what the cited line prints, and it never excuses a
value. It is a note beside the citation ("'S4 plain ratio, times smaller' over other seeds:
about 3000 in 3 of 33 starting weights"), never its failure.

And both ways: the lines the text cites, and those it never does (`coverage`).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from claimlog.evidence.fragility import (
    ROBUST,
    Fragility,
    ReadingEvidence,
    SeedWords,
    Seen,
    version_key,
)
from claimlog.evidence.verdicts import status_of
from claimlog.log.lines import CitedLine
from claimlog.log.readings import FLAG, SETTING, Reading, decimals, declared_as
from claimlog.log.readings import KINDS as READING_KINDS
from claimlog.text.citations import KINDS, Citation, Quote


def written_like(quoted: str, value: float) -> str:
    """`value` in the form and precision of `quoted`: "3015" -> "3017", "3.32e-04" ->
    "3.41e-04", "51.5" -> "48.5", "+0.880797" -> "+0.880800"."""
    sign = "+" if quoted.startswith("+") and value >= 0 else ""
    bare = quoted.lstrip("+-")
    digits = decimals(bare)
    if "e" in bare.lower():
        text = f"{value:.{digits}e}"
        return sign + (text.upper() if "E" in bare else text)
    return sign + f"{value:.{digits}f}"


def rounds_to(quoted: str, value: float) -> bool:
    """Whether `value` reads as `quoted` at the precision the quote is written at (an
    explicit "+" or the case of an "e" apart)."""
    return written_like(quoted, value).lstrip("+").lower() == quoted.lstrip("+").lower()


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
class Verdict:
    problems: list[str] = field(default_factory=list)
    drift: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # how the quoted lesson holds over seeds
    # Numbers of the sentence that fit no reading of the cited lines (orders of magnitude
    # from each): the sentence's own ("n + 1 bigrams"), uncited rather than wrong quotes.
    uncited: list[str] = field(default_factory=list)


def _of_kind(readings: Sequence[Reading], kind: str | None) -> list[Reading]:
    """The readings a number the sentence calls `kind` may quote (all of them for None)."""
    return [r for r in readings if kind is None or r.kind.name in KINDS[kind]]


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


# A quoted number this many times larger or smaller than every reading of the cited lines
# quotes none of them: it is the sentence's own.
FITS_NONE = 10.0


def fits_none(reading: Reading, quoted: str) -> bool:
    """Whether `quoted` is orders of magnitude from `reading` (`FITS_NONE`), so that it
    cannot be a wrong quote of it: "n + 1" beside 228146 bigrams."""
    value, here = abs(float(quoted)), abs(float(reading.number or 0))
    if value == 0 or here == 0:
        return False  # zero is as near to a small reading as a quote of it can be
    return max(value, here) / min(value, here) > FITS_NONE


def may_misquote(reading: Reading, quote: Quote) -> bool:
    """Whether a number whose kind the sentence does not say may be a wrong quote of
    `reading`, by kind and value: a value of the reading's kind (no "-3" for a loss, no 80
    for a fraction), not orders of magnitude from it; and a setting only where the sentence
    names it just before the number ("seed 80", "depth 9"). A setting is chosen, never
    measured, so nothing moves it: the 80 of "cut 80/10/10" is no quote of a seed of 42, and
    the 0.2 of "weights times 0.2" none of a threshold of 0.99."""
    if not reading.kind.admits(float(quote.text)) or fits_none(reading, quote.text):
        return False
    if reading.kind.name in (SETTING.name, FLAG.name):
        return bool(quote.word) and quote.word in reading.label.lower().split()
    return True


def apart(a: float, b: float) -> float:
    """How far apart two numbers are, relative to the larger of them."""
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


def _nearest(
    readings: Sequence[Reading], quoted: str, taken: Sequence[Reading] = ()
) -> Reading | None:
    """The reading a wrong quote most likely meant: the nearest in value, among those no
    other number of the citation quotes already (one number, one reading)."""
    value = float(quoted)
    numeric = [r for r in readings if r.number is not None and r.value is not None]
    numeric = [r for r in numeric if r not in taken] or numeric
    if not numeric:
        return None
    return min(numeric, key=lambda r: apart(float(r.number or 0), value))


def _reads_as(seen: Seen, quoted: str) -> bool:
    """Whether a value the sweep saw (not "never") reads as `quoted`."""
    return seen.value is not None and rounds_to(quoted, float(seen.value))


def _by_release(fragility: Fragility, evidence: ReadingEvidence, quoted: str) -> str:
    """ "; no torch release here prints 100.0 (2.12.1: 51.5, 2.13.0: 51.5, ...)": which
    torch releases of the evidence print the quote, where it holds more than one."""
    releases = sorted([fragility.reference_release, *fragility.releases], key=version_key)
    prints = {r: s for r in releases if (s := fragility.on_release(evidence, r)) is not None}
    if len(prints) < 2 or evidence.platform_verdict == ROBUST:
        return ""  # a robust reading prints the same on every release: nothing to add
    which = [r for r, s in prints.items() if _reads_as(s, quoted)]
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


def printed_by(evidence: ReadingEvidence, quoted: str) -> str:
    """Which platforms' value of a reading reads as `quoted`: "2 platforms of the sweep"
    ("and the published log" beside, where it printed it too); empty if no platform did.
    The published log alone is no platform: what it says, no torch here computed."""
    swept = sum(1 for seen in evidence.platforms.values() if _reads_as(seen, quoted))
    if not swept:
        return ""
    said = f"{swept} platform{'s' if swept > 1 else ''} of the sweep"
    published = evidence.published
    return said + (" and the published log" if published and _reads_as(published, quoted) else "")


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
    beyond: list[str] = []
    unverified: dict[int, str] = {}  # said only where the quotes need what the run did not verify
    for n in citation.lines:
        if not 1 <= n <= n_lines:
            beyond.append(f"cites line {n}, but results.log has {n_lines} lines")
        elif not lines[n].verified:
            unverified[n] = (
                f"cites line {n}, which this run did not verify (its claim failed or did not run)"
            )
    # A failed claim's readings that print as recorded stand; the others are unknown here.
    readings = [r for line in cited for r in (line.readings if line.verified else line.standing)]
    heard = [r for n in citation.lines for line in context.get(n, ()) for r in line.readings]
    names = [name for line in cited for name in line.names]
    # The readings some number of the citation quotes as printed: no other number is taken
    # for a wrong quote of one of them ("80/10/10" reports the 10 once).
    taken = [
        r
        for quote in citation.quotes
        if quote.span is None
        for r in _of_kind(readings, quote.kind)
        if says(r, quote.text)
    ]
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
        elsewhere = _printed_elsewhere(quoted, said_kind, lines, citation.lines)
        if said_kind is None:
            fitting = [r for r in candidates if may_misquote(r, quote)]
            if candidates and not fitting and not elsewhere:
                if quoted not in verdict.uncited:  # the sentence's own number, said once
                    verdict.uncited.append(quoted)
                continue
            candidates = fitting
        # What the sentence says first, measured ("51.5%" is an accuracy before the 90% bar).
        primary = [r for r in candidates if said_kind and r.kind.name == KINDS[said_kind][0]]
        nearest = _nearest(primary or candidates, quoted, taken)
        if nearest is not None and fits_none(nearest, quoted):
            if quoted not in verdict.uncited:  # no reading's: the sentence's own number
                verdict.uncited.append(quoted)
            continue
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
        printers = "" if evidence is None else printed_by(evidence, quoted)
        if evidence is not None and evidence.holds_on_some_platforms_only:
            verdict.problems.append(_luck(nearest, quoted, evidence, fragility))
        elif evidence is not None and evidence.moved_in_print and printers:
            verdict.drift.append(
                f"quotes {quoted} for {nearest.name!r}: here {nearest.printed}; fragile, "
                f"printed {quoted} by {printers} (platform-dependent)"
                + _by_release(fragility, evidence, quoted)
            )
        elif elsewhere_platform and evidence is not None and _reads_as(evidence.reference, quoted):
            verdict.drift.append(
                f"quotes {quoted} for {nearest.name!r}: here {nearest.printed}, on a platform "
                f"new to the evidence, which computes otherwise; the reference prints {quoted}"
            )
        else:
            moved = evidence is not None and evidence.moved_in_print
            kind = status_of(evidence, nearest.name in fragility.stale)
            seen = "" if evidence is None else f"; {evidence.describe_prints()}"
            releases = "" if evidence is None else _by_release(fragility, evidence, quoted)
            honest = "" if evidence is None or not moved else _what_to_say(evidence, quoted)
            verdict.problems.append(
                f"quotes {quoted} for {nearest.name!r}: here {nearest.printed} ({kind}{seen})"
                + releases
                + honest
                + elsewhere
            )
    if verdict.problems or verdict.drift:
        if unverified:
            # A quote the standing readings do not bear out may be one of a failed claim's
            # moved numbers, which this run did not verify: the quote is not judged wrong,
            # the lines are what fails.
            verdict.problems[:] = list(unverified.values())
            verdict.drift.clear()
    else:  # every quote holds: only a line with nothing standing fails
        verdict.problems.extend(m for n, m in unverified.items() if not lines[n].standing)
    verdict.problems[:0] = beyond
    return verdict


def check_published(
    citation: Citation, published: Mapping[int, Sequence[Reading]], n_lines: int
) -> list[str]:
    """The problems of a citation of the published log ("the lecture's own run printed 2.07
    (published line 9)"): each number it quotes must be one the published log prints on a
    cited line, at no more figures than its author printed (`published`: the published log's
    readings, by line; a line its author did not print has none)."""
    problems: list[str] = []
    for n in citation.lines:
        if not 1 <= n <= n_lines:
            problems.append(f"cites published line {n}, but the log has {n_lines} lines")
        elif not published.get(n):
            problems.append(f"cites published line {n}, where the published log prints no number")
    printed = [r for n in citation.lines for r in published.get(n, ())]
    for quote in citation.quotes:
        if quote.span is not None:
            problems.append(
                f"quotes the range {quote.text} from the published log, which prints values"
            )
            continue
        if printed and not any(_printed_as(r, quote.text) for r in printed):
            shown = ", ".join(f"{r.printed} ({r.name})" for r in printed)
            problems.append(f"quotes {quote.text}, which the published log does not print: {shown}")
    return problems


def _printed_as(reading: Reading, quoted: str) -> bool:
    """A published number says the quote at no more figures than its author printed."""
    return says(reading, quoted) and decimals(quoted) <= decimals(reading.printed)


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
    by_run = itertools.groupby(enumerate(numbers), key=lambda pair: pair[1] - pair[0])
    spans = [[n for _, n in run] for _, run in by_run]
    return ", ".join(f"{s[0]}-{s[-1]}" if len(s) > 1 else str(s[0]) for s in spans) or "none"
