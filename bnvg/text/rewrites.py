"""Under `--snapshot-update --workshop DIR`, the text follows the numbers: every quote whose
number moved in this update is rewritten in place, as the author wrote it.

A quote is rewritten when it says what a cited reading printed before the update (its
snapshot) and no longer says what it prints now (`Moved`). The new number is written in the
quote's own form and precision: "3015" of "3015x" stays a whole number, "3.32e-04" keeps its
mantissa's two decimals, "51.5" of "51.5%" one decimal, "0.0079" four. Nothing else of the
file changes (`bnvg.text.documents.Edit`).

Some quotes are deliberately left, each with its reason, because rewriting the number would
make the text say something nobody verified:

- the claim behind the cited line failed: the sentence itself no longer holds, and the author
  must reword it;
- a range that still covers the new value, or a bound the sentence words as one ("by step
  100", "under 0.05"): neither was a copy of the number, and the check says if it still holds;
- a reading whose print differs by platform (fragile): no one number is the one to quote.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from bnvg.evidence.fragility import FRAGILE, Fragility
from bnvg.evidence.verdicts import Moved
from bnvg.log.readings import Reading
from bnvg.store import replacing
from bnvg.text.citations import KINDS, Citation, CitedLine, Quote, says, where
from bnvg.text.documents import Edit, rewritten
from bnvg.text.prose import NOTHING_CITED
from bnvg.text.uncited import Uncited

FAILED_CLAIM = "its claim failed, so the sentence no longer holds as written: reword it"
STILL_COVERED = "a {what} that still covers the new value ({new})"
A_BOUND = "a bound the sentence words as one, not a copy of the value (now {new})"
NO_LONGER_COVERED = "a {what} that no longer covers the new value ({new}): reword it"
BY_PLATFORM = "its print differs by platform ({prints}): no one value is the one to quote"


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
    """A quote deliberately not rewritten, and why."""

    path: str
    cell: int | None
    line: int
    quoted: str
    log_line: int
    reason: str

    def describe(self) -> str:
        """ "module6.md:14  51.5 (log line 65): left, its claim failed, ..." """
        at = where(self.path, self.cell, self.line)
        return f"{at}  {self.quoted} (log line {self.log_line}): left, {self.reason}"

    def to_json(self) -> dict[str, object]:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Left:
        return cls(**data)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Plan:
    """What an update does to one citation: the rewrites, the quotes left, and the citation
    as it reads once rewritten (the one to check against the new log)."""

    citation: Citation
    rewrites: list[Rewrite] = field(default_factory=list)
    left: list[Left] = field(default_factory=list)


def written_like(quoted: str, value: float) -> str:
    """`value` in the form and precision of `quoted`: "3015" -> "3017", "3.32e-04" ->
    "3.41e-04", "51.5" -> "48.5", "+0.880797" -> "+0.880800"."""
    sign = "+" if quoted.startswith("+") and value >= 0 else ""
    bare = quoted.lstrip("+-")
    if "e" in bare.lower():
        mantissa = bare.lower().split("e")[0]
        digits = len(mantissa.split(".")[1]) if "." in mantissa else 0
        text = f"{value:.{digits}e}"
        return sign + (text.upper() if "E" in bare else text)
    digits = len(bare.split(".")[1]) if "." in bare else 0
    return sign + f"{value:.{digits}f}"


def _before(moved: Moved) -> Reading:
    return moved.reading.with_value(moved.reading.value_from_float(moved.before))


def _of_kind(moved: Iterable[Moved], kind: str | None) -> list[Moved]:
    return [m for m in moved if kind is None or m.reading.kind.name in KINDS[kind]]


def _range_covers(quote: Quote, moved: Sequence[Moved]) -> Moved | None:
    """The moved reading a range quoted: the one whose value before the update it covered."""
    lo, hi = quote.span or (0.0, 0.0)
    return next((m for m in moved if lo <= m.before <= hi), None)


def _is_fragile(moved: Moved, fragility: Fragility) -> str | None:
    """What the platforms print, if the reading's print differs by platform."""
    evidence = fragility.reading(moved.reading.name)
    if evidence is not None and evidence.platform_verdict == FRAGILE:
        return evidence.describe_prints()
    return "fragile" if moved.status == FRAGILE else None


def plan(
    citation: Citation,
    moved: Sequence[Moved],
    lines: Mapping[int, CitedLine],
    fragility: Fragility,
) -> Plan:
    """What an update does to `citation`, given the readings that moved in it."""
    on_cited = [m for m in moved if m.line in citation.lines]
    result = Plan(citation)
    failed = [n for n in citation.lines if n in lines and not lines[n].verified]
    if failed:
        for quote in citation.quotes:
            result.left.append(
                Left(
                    citation.path,
                    citation.cell,
                    citation.md_line,
                    quote.text,
                    failed[0],
                    FAILED_CLAIM,
                )
            )
        return result
    quotes: list[Quote] = []
    for quote in citation.quotes:
        candidates = _of_kind(on_cited, quote.kind)
        line, column = quote.where[0] if quote.where else (citation.md_line, -1)
        if quote.span is not None:
            inside = _range_covers(quote, candidates)
            if inside is not None:  # it quoted a moved reading: say whether it still holds
                lo, hi = quote.span
                holds = lo <= float(inside.reading.number or 0) <= hi
                reason = STILL_COVERED if holds else NO_LONGER_COVERED
                result.left.append(
                    Left(
                        citation.path,
                        citation.cell,
                        line,
                        quote.text,
                        inside.line,
                        reason.format(what="range", new=inside.reading.printed),
                    )
                )
            quotes.append(quote)
            continue
        if quote.bound and candidates:  # "under 0.05": the claim's bound, judged as such
            reason = A_BOUND.format(new=candidates[0].reading.printed)
            result.left.append(
                Left(citation.path, citation.cell, line, quote.text, candidates[0].line, reason)
            )
            quotes.append(quote)
            continue
        was = next(
            (
                m
                for m in candidates
                if says(_before(m), quote.text) and not says(m.reading, quote.text)
            ),
            None,
        )
        if was is None:
            quotes.append(quote)
            continue
        prints = _is_fragile(was, fragility)
        if prints is not None:
            reason = BY_PLATFORM.format(prints=prints)
            result.left.append(
                Left(citation.path, citation.cell, line, quote.text, was.line, reason)
            )
            quotes.append(quote)
            continue
        new = written_like(quote.text, float(was.reading.as_float()))
        if not says(was.reading, new):  # the quote's precision reads the print, not the value
            new = written_like(quote.text, float(was.reading.number or 0))
        result.rewrites.append(
            Rewrite(
                citation.path,
                citation.cell,
                line,
                column,
                quote.text,
                new,
                was.line,
                was.reading.name,
            )
        )
        quotes.append(replace(quote, text=new))
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
        with replacing(path) as tmp, open(tmp, "wb") as f:
            f.write(text.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())  # on disk before the rename puts it in place
    return list(texts)


def describe_rewrites(
    rewrites: Sequence[Rewrite], left: Sequence[Left], written: bool
) -> list[str]:
    """What an update did to the text's quotes, and the quotes it left, for people."""
    out: list[str] = []
    if rewrites:
        documents = len({r.path for r in rewrites})
        n = len(rewrites)
        done = "rewrote" if written else "would rewrite (not written: the update did not complete)"
        out.append(
            f"{done} {n} quote{'s' if n > 1 else ''} whose numbers moved, in {documents} "
            f"document{'s' if documents > 1 else ''} (review them with git diff):"
        )
        out += [f"  {r.describe()}" for r in rewrites]
    if left:
        n = len(left)
        out.append(f"left {n} quote{'s' if n > 1 else ''} as written, on purpose:")
        out += [f"  {one.describe()}" for one in left]
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
