"""Under `--snapshot-update --workshop DIR`, the text follows the numbers: every quote whose
number moved in this update is rewritten in place, as the author wrote it, and no quote the
new values make false is left as if it held.

A quote is rewritten when it is a copy of a moved reading (`Moved`): it equals what the
reading printed before the update (its snapshot), at the printed precision ("0.6926" of
0.6926, "0.25" of 0.250000, "100" of step 100). A copy follows its reading whatever the words
around it: in "reaches 90% by step 100", a step that moved from 100 to 150 makes it "by step
150". The new number is written in the quote's own form and precision: "3015" of "3015x"
stays a whole number, "3.32e-04" keeps its mantissa's two decimals, "51.5" of "51.5%" one
decimal, "0.0079" four. Nothing else of the file changes (`claimlog.text.documents.Edit`).
A copy of a reading whose print differs by platform (fragile) is rewritten too: the snapshot
holds the reference's numbers, so what it copied was the reference's print, and it becomes
what the reference prints now (its citation passes, as it did, as this run's own print).

Any other quote of a moved reading was never a copy of it: a bound the sentence words as one
("by step 100", "under 0.05"), a range ("between 0.69 and 0.71"), or a rounding (at fewer
digits than the log prints: "0.69" of 0.6926). Its number is the author's, and is never
rewritten. It is left only while the new value, as the log prints it, still bears it out: the
bound holds, the range covers it, the new value still rounds to it.

So an update leaves some quotes as written on purpose, each listed with its reason:

- the claim behind the cited line failed: the sentence itself no longer holds, and the author
  must reword it;
- a bound, a range or a rounding that the new value still bears out;
- a rounding of a reading whose print differs by platform (fragile), which some platform of
  the evidence still prints: no one number is the one to quote. One that no platform prints
  any more is no quote left on purpose: its citation fails, saying what every platform
  supports.

A quote the new value breaks is never among them: it is listed apart as no longer true, with
the new value (a `Left` that is `broken`), and its citation fails (`Plan.problems`) until the
author rewords it. A new number there would make the text say something nobody wrote; the old
one keeps a false sentence.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from claimlog.evidence.fragility import FRAGILE, Fragility
from claimlog.evidence.verdicts import Moved
from claimlog.log.lines import CitedLine
from claimlog.log.readings import Bound, Reading
from claimlog.store import atomic_write
from claimlog.text.checks import apart, printed_by, says, written_like
from claimlog.text.citations import KINDS, Citation, Quote, Uncited, where
from claimlog.text.documents import Edit, rewritten
from claimlog.text.prose import NOTHING_CITED

FAILED_CLAIM = "its claim failed, so the sentence no longer holds as written: reword it"
STILL_COVERED = "a {what} that still covers the new value ({new})"
A_BOUND = "a bound the sentence words as one, not a copy of the value (now {new})"
STILL_ROUNDS = "a rounding of the value, not a copy, that the new value still rounds to ({new})"
BY_PLATFORM = "its print differs by platform ({prints}): no one value is the one to quote"
NO_LONGER_TRUE = "no longer true, the new value is {new}: reword it"


@dataclass(frozen=True)
class Rewrite:
    """One number of the text, rewritten: where, old -> new, and the reading it quotes."""

    path: str
    cell: int | None
    line: int
    column: int
    old: str
    new: str
    log_line: int
    reading: str

    @property
    def edit(self) -> Edit:
        return Edit(self.cell, self.line, self.column, self.old, self.new)

    def describe(self) -> str:
        """ "module6.md:12  51.5 -> 48.5 (log line 65, S6 plain, final test accuracy)" """
        at = where(self.path, self.cell, self.line)
        return f"{at}  {self.old} -> {self.new} (log line {self.log_line}, {self.reading})"

    def to_json(self) -> dict[str, object]:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Rewrite:
        return cls(**data)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Left:
    """A quote the update leaves as written, and why: on purpose, or, where the new value
    breaks it (`broken`), because no new number of it would be true: the author rewords it."""

    path: str
    cell: int | None
    line: int
    quoted: str
    log_line: int
    reason: str
    broken: bool = False  # no longer true: listed apart, and its citation fails

    def describe(self) -> str:
        """ "module6.md:14  51.5 (log line 65): left, its claim failed, ..." """
        at = where(self.path, self.cell, self.line)
        said = self.reason if self.broken else f"left, {self.reason}"
        return f"{at}  {self.quoted} (log line {self.log_line}): {said}"

    def to_json(self) -> dict[str, object]:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Left:
        return cls(**data)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Plan:
    """What an update does to one citation: the rewrites, the quotes left, and the citation
    as it reads once rewritten (the one to check against the new log), without the quotes the
    new values no longer bear out: the plan judged those (`problems`)."""

    citation: Citation
    rewrites: list[Rewrite] = field(default_factory=list)
    left: list[Left] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        """Why the citation fails on this plan's verdict: each quote the new value breaks, with
        the new value. `check` never sees them, so each fails once, saying so."""
        return [
            f"quotes {one.quoted} (log line {one.log_line}): {one.reason}"
            for one in self.left
            if one.broken
        ]


def _before(moved: Moved) -> Reading:
    return moved.reading.with_value(moved.reading.value_from_float(moved.before))


def _of_kind(moved: Iterable[Moved], kind: str | None) -> list[Moved]:
    return [m for m in moved if kind is None or m.reading.kind.name in KINDS[kind]]


def _range_covers(quote: Quote, moved: Sequence[Moved]) -> Moved | None:
    """The moved reading a range quoted: the one whose value before the update it covered."""
    lo, hi = quote.span or (0.0, 0.0)
    return next((m for m in moved if lo <= m.before <= hi), None)


def _printed(reading: Reading) -> float | None:
    """What the log prints of a reading, as a number (None: "never", a flag): what a reader
    holds a quote against."""
    return None if reading.number is None else float(reading.number)


def _bounded(bound: Bound, moved: Sequence[Moved]) -> Moved | None:
    """The moved reading a bound quoted: of those whose print before the update it held for,
    the nearest to its threshold ("under 0.05" of a loss of 0.0079, not of a step of 100). A
    bound that held for none was not true before the update either: `check` judges it."""
    held = [
        (m, before)
        for m in moved
        if (before := _printed(_before(m))) is not None and bound.holds(before)
    ]
    return min(held, key=lambda pair: apart(pair[1], bound.threshold))[0] if held else None


def _copies(quoted: str, reading: Reading) -> bool:
    """Whether `quoted` is what `reading` prints, at the printed precision ("0.6926" of 0.6926,
    "0.25" of 0.250000, "100" of step 100); "0.69" of 0.6926 is a rounding, not a copy."""
    printed = reading.number
    if printed is None:
        return False
    value = float(quoted)
    values = [value, -value] if reading.quantity.plus_minus else [value]
    return any(written_like(printed, v) == printed for v in values)


def _is_fragile(moved: Moved, fragility: Fragility) -> str | None:
    """What the platforms print, if the reading's print differs by platform."""
    evidence = fragility.reading(moved.reading.name)
    if evidence is not None and evidence.platform_verdict == FRAGILE:
        return evidence.describe_prints()
    return "fragile" if moved.status == FRAGILE else None


def _left_by_platform(
    moved: Moved, quoted: str, fragility: Fragility
) -> tuple[Moved, str | None] | None:
    """A quote of a reading whose print differs by platform, not rewritten: left on purpose
    while some platform of the evidence still prints it (its citation passes, as drift). Where
    none does any more, it is no quote the update leaves: its citation judges it, and fails
    saying what every platform supports (None)."""
    evidence = fragility.reading(moved.reading.name)
    if evidence is None or not printed_by(evidence, quoted):
        return None
    return moved, BY_PLATFORM.format(prints=evidence.describe_prints())


def _copied(quote: Quote, candidates: Sequence[Moved]) -> Moved | None:
    """The moved reading the quote copies: it is what the reading printed before the update,
    at the printed precision. A copy follows its reading, whatever words stand before it."""
    if quote.span is not None:
        return None
    return next((m for m in candidates if _copies(quote.text, _before(m))), None)


def _judged(
    quote: Quote, candidates: Sequence[Moved], fragility: Fragility
) -> tuple[Moved, str | None] | None:
    """A quote of a moved reading that the update does not rewrite (no copy): the reading,
    and why the quote is left as written, or None for the reason where the new value, as the
    log prints it, breaks the quote. None for a quote of no reading that moved (`check` judges
    it, as in any run)."""
    if quote.span is not None:
        covered = _range_covers(quote, candidates)
        if covered is None:
            return None
        lo, hi = quote.span
        now = _printed(covered.reading)
        holds = now is not None and lo <= now <= hi
        reason = STILL_COVERED.format(what="range", new=covered.reading.printed)
        return covered, reason if holds else None
    if quote.bound is not None:  # "under 0.05": the author's bound, held to the new value
        bounded = _bounded(quote.bound, candidates)
        if bounded is None:
            return None
        holds = quote.bound.holds(_printed(bounded.reading))
        return bounded, A_BOUND.format(new=bounded.reading.printed) if holds else None
    rounded = next((m for m in candidates if says(_before(m), quote.text)), None)
    if rounded is None:
        return None
    if _is_fragile(rounded, fragility) is not None:
        return _left_by_platform(rounded, quote.text, fragility)
    holds = says(rounded.reading, quote.text)
    return rounded, STILL_ROUNDS.format(new=rounded.reading.printed) if holds else None


def plan(
    citation: Citation,
    moved: Sequence[Moved],
    lines: Mapping[int, CitedLine],
    fragility: Fragility,
) -> Plan:
    """What an update does to `citation`, given the readings that moved in it."""
    on_cited = [m for m in moved if m.line in citation.lines]
    result, at = Plan(citation), (citation.path, citation.cell)  # where each quote stands
    failed = [n for n in citation.lines if n in lines and not lines[n].verified]
    if failed:
        result.left.extend(
            Left(*at, citation.md_line, q.text, failed[0], FAILED_CLAIM) for q in citation.quotes
        )
        return result
    quotes: list[Quote] = []
    for quote in citation.quotes:
        candidates = _of_kind(on_cited, quote.kind)
        line, column = quote.where[0] if quote.where else (citation.md_line, -1)
        was = _copied(quote, candidates)
        if was is not None:
            new = written_like(quote.text, float(was.reading.as_float()))
            if not says(was.reading, new):  # the quote's precision reads the print, not the value
                new = written_like(quote.text, float(was.reading.number or 0))
            if new == quote.text:  # moved past the precision the quote is written at
                quotes.append(quote)
                continue
            result.rewrites.append(
                Rewrite(*at, line, column, quote.text, new, was.line, was.reading.name)
            )
            quotes.append(replace(quote, text=new))
            continue
        judged = _judged(quote, candidates, fragility)
        if judged is not None:
            of, reason = judged
            broken = reason is None
            if reason is None:
                reason = NO_LONGER_TRUE.format(new=of.reading.printed)
            result.left.append(Left(*at, line, quote.text, of.line, reason, broken))
            if broken:
                continue  # judged here: the citation fails on the plan's verdict, not twice
        quotes.append(quote)
    return replace(result, citation=replace(citation, quotes=tuple(quotes)))


def rewrite_documents(rewrites: Sequence[Rewrite], root: Path) -> list[Path]:
    """Make every rewrite in its document (`path` relative to `root`), each document written
    whole by one atomic rename; return the documents written. Every new text is made before
    the first is written, so a document changed since it was read stops the lot."""
    by_document: dict[Path, list[Edit]] = {}
    for rewrite in rewrites:
        by_document.setdefault(root / rewrite.path, []).append(rewrite.edit)
    texts = {path: rewritten(path, edits) for path, edits in sorted(by_document.items())}
    for path, text in texts.items():
        atomic_write(path, text)
    return list(texts)


def describe_rewrites(
    rewrites: Sequence[Rewrite], left: Sequence[Left], written: bool
) -> list[str]:
    """What an update did (or, not `written`, would do) to the text's quotes, and the quotes
    it left on purpose, for people. A quote the new values no longer bear out is none of
    them: its citation fails, and the update says it with the rest of what failed."""
    out: list[str] = []
    if rewrites:
        documents = len({r.path for r in rewrites})
        n = len(rewrites)
        done = "rewrote" if written else "would rewrite"
        out.append(
            f"{done} {n} quote{'s' if n > 1 else ''} whose numbers moved, in {documents} "
            f"document{'s' if documents > 1 else ''} (review them with git diff):"
        )
        out += [f"  {r.describe()}" for r in rewrites]
    kept = [one for one in left if not one.broken]
    if kept:
        n = len(kept)
        out.append(f"left {n} quote{'s' if n > 1 else ''} as written, on purpose:")
        out += [f"  {one.describe()}" for one in kept]
    return out


def describe_uncited(uncited: Mapping[str, Sequence[Uncited]]) -> list[str]:
    """How many numbers of each document cite no line, for people."""
    counted = {path: len(found) for path, found in uncited.items() if found}
    if counted:
        return [
            f"{path}: {n} number{'s' if n > 1 else ''} cite{'s' if n == 1 else ''} no line"
            for path, n in counted.items()
        ] + [
            "(the claims report lists them: cite a line, or end the sentence with "
            f"{NOTHING_CITED} if it cites nothing on purpose)"
        ]
    if uncited:
        n = len(uncited)
        return [f"every number of the prose of its {n} document{'s' if n > 1 else ''} cites a line"]
    return []
