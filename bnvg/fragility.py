"""Which numbers of the log travel between machines, and how far the others may drift.

A log line's numbers are its *tokens* (`tokens`): "final train loss = 0.0079, final test
acc = 100.0%" has 0.0079 and 100.0. The sweep (`sweep/`) runs the claims under rounding
variants of one machine (every torch CPU capability it supports, one and two threads) and
under other minibatch-sampler seeds, and `build_table` records, token by token, the values
each variant printed. It also takes the published log (another torch release) as a variant.

- A token that printed the same under every rounding variant and in the published log is
  **robust**: it is compared exactly, at the precision the log prints.
- A token that moved is **fragile**: it gets a `Band`, the range it was seen in widened by
  half its width on each side, and a value inside the band that differs from the snapshot is
  *drift* (reported, not failed, unless --strict-numbers), one outside it a failure.

Seed variants are recorded beside, to show which results are luck of the draw, but do not
make a number fragile: a different seed is a different experiment, not another machine.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
TABLE_JSON = "fragility.json"
TABLE_MD = "fragility.md"


def tokens(text: str) -> list[str]:
    """The numbers of a log line, as printed, in order."""
    return NUMBER.findall(text)


def skeleton(text: str) -> str:
    """The line with every number replaced by '#' and runs of spaces by one: two lines that
    differ only in their numbers (and the padding that aligns them) have the same skeleton."""
    return " ".join(NUMBER.sub("#", text).split())


def label_of(text: str, index: int) -> str:
    """A name for token `index` of a line: the words just before it ("final train loss"),
    or, where only '=' stands between it and the last number, the clause it ends
    ("batches of 2" in "train mode, batches of 2 = 69.5%")."""
    matches = list(NUMBER.finditer(text))
    start = matches[index - 1].end() if index else 0
    segment = text[start : matches[index].start()]
    if not re.search(r"[A-Za-z]", segment):
        segment = re.split(r"[,;:|(\[]", text[: matches[index].start()])[-1]
    words = [
        w
        for w in re.sub(r"[=<>]+|->", " ", segment).split()
        if not NUMBER.fullmatch(w.strip("%,:()[]'"))
    ]
    label = re.sub(r"^[^A-Za-z]+|[\s,:(]+$", "", " ".join(words))
    if not label:  # nothing names it before: "(3015x smaller)" is named by what follows
        after = re.split(r"[,;:|()\[\]]", text[matches[index].end() :])[0]
        label = " ".join(w for w in after.split() if re.search(r"[A-Za-z]", w))
    return label or f"number {index + 1}"


@dataclass(frozen=True)
class Band:
    """The range a fragile number may take on another machine."""

    lo: float
    hi: float
    seen: tuple[str, ...]  # every value the sweep and the published log printed

    def __contains__(self, value: float) -> bool:
        return self.lo <= value <= self.hi

    def __str__(self) -> str:
        return f"band {self.lo:g} to {self.hi:g}"


@dataclass(frozen=True)
class Fragility:
    """The committed sweep table: for each log line, which tokens moved and where to."""

    lines: Mapping[str, Mapping[str, Any]]  # slot key -> {"tokens": [...], ...}

    def band(self, key: str, index: int) -> Band | None:
        """The band of token `index` of line `key`, or None if that token is robust."""
        entry = self.lines.get(key)
        if entry is None or index >= len(entry["tokens"]):
            return None
        token = entry["tokens"][index]
        if not token.get("fragile"):
            return None
        lo, hi = token["band"]
        return Band(lo, hi, tuple(token["rounding"].values()) + tuple(token.get("published", ())))

    def fragile_keys(self) -> set[str]:
        return {key for key, e in self.lines.items() if any(t.get("fragile") for t in e["tokens"])}


EMPTY = Fragility(lines={})


def load(snapshot_dir: Path) -> Fragility:
    """The committed table beside the snapshots; without one every number is robust."""
    path = snapshot_dir / TABLE_JSON
    if not path.exists():
        return EMPTY
    try:
        data = json.loads(path.read_text())
        return Fragility(lines=data["lines"])
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(
            f"{path} is damaged ({error}); regenerate it with the sweep (see README)"
        ) from None


# -- building the table from the sweep's logs ---------------------------------------------------


def _widened(values: Sequence[float]) -> tuple[float, float]:
    lo, hi = min(values), max(values)
    margin = (hi - lo) / 2
    return lo - margin, hi + margin


def build_table(
    slot_lines: Mapping[str, int],
    reference: str,
    rounding: Mapping[str, Sequence[str]],
    seeds: Mapping[str, Sequence[str]],
    published: Sequence[str] | None = None,
    skip: Iterable[str] = ("versions",),
) -> dict[str, Any]:
    """Compare every variant's log with the reference's, token by token.

    `slot_lines` maps each claim-owned line's key to its 1-based line number; logs are given
    as lists of lines; `reference` names the rounding variant that is this machine's default.
    A line a variant could not verify (its claim failed there) is recorded as failed.
    """
    skipped = set(skip)
    table: dict[str, Any] = {}
    ref_lines = rounding[reference]
    for key, number in slot_lines.items():
        if key in skipped:
            continue
        ref_text = ref_lines[number - 1]
        entry: dict[str, Any] = {"line": number, "text": ref_text, "tokens": [], "failed": {}}
        for logs in (rounding, seeds):
            for name, log in logs.items():
                if skeleton(log[number - 1]) != skeleton(ref_text):
                    entry["failed"][name] = log[number - 1].strip()
        pub_tokens: list[str] = []
        if published is not None:
            pub_text = published[number - 1]
            # The published copy collapsed runs of spaces; its numbers are what matter.
            if len(tokens(pub_text)) == len(tokens(ref_text)):
                pub_tokens = tokens(pub_text)
        for i, ref_token in enumerate(tokens(ref_text)):
            token: dict[str, Any] = {"label": label_of(ref_text, i), "reference": ref_token}
            for group, logs in (("rounding", rounding), ("seeds", seeds)):
                token[group] = {
                    name: tokens(log[number - 1])[i]
                    for name, log in logs.items()
                    if name not in entry["failed"]
                }
            if pub_tokens:
                token["published"] = [pub_tokens[i]]
            platform_values = [*token["rounding"].values(), *token.get("published", [])]
            moved = len(set(platform_values)) > 1
            token["fragile"] = moved
            if moved:
                token["band"] = list(_widened([float(v) for v in platform_values]))
            seed_values = list(token["seeds"].values())
            token["seed_range"] = (
                [min(map(float, seed_values)), max(map(float, seed_values))]
                if seed_values
                else None
            )
            entry["tokens"].append(token)
        table[key] = entry
    return table


def render_markdown(table: Mapping[str, Any], variants: Mapping[str, str]) -> str:
    """The table as Markdown: every logged number, whether it moved, and its range."""
    out = [
        "# Which numbers of the log travel",
        "",
        "Written by the sweep (`pytest sweep/`, see the README). Rounding variants of this",
        "machine and the published log (another torch release) decide which numbers are",
        "**fragile**; other sampler seeds show which results are luck of the draw.",
        "",
        "Variants: " + "; ".join(f"`{name}` = {what}" for name, what in variants.items()),
        "",
        "| line | log line | number | here | fragile | seen on other platforms | band | "
        "over seeds |",
        "|---:|---|---|---:|:---:|---|---|---|",
    ]
    for key, entry in table.items():
        for token in entry["tokens"]:
            seen = sorted(
                set(token["rounding"].values()) | set(token.get("published", [])), key=float
            )
            band = f"{token['band'][0]:.4g} to {token['band'][1]:.4g}" if token["fragile"] else ""
            seeds = token["seed_range"]
            over_seeds = (
                ""
                if seeds is None
                else (f"{seeds[0]:g}" if seeds[0] == seeds[1] else f"{seeds[0]:g} to {seeds[1]:g}")
            )
            out.append(
                f"| {entry['line']} | {key} | {token['label']} | {token['reference']} | "
                f"{'yes' if token['fragile'] else ''} | {', '.join(seen)} | {band} | {over_seeds} |"
            )
        for name, text in entry["failed"].items():
            out.append(
                f"| {entry['line']} | {key} | *claim not verified under `{name}`* "
                f"| | | | | {text[:60]} |"
            )
    return "\n".join(out) + "\n"
