"""Comparing the lines a claim computed with the lines its snapshot stores, number by number.

A snapshot stores a claim's log lines as the log prints them. Comparing line by line would
say only "this line changed"; comparing their numbers (`bnvg.fragility.tokens`) says which
number changed, from what to what, and whether that number is one that moves between
machines (fragile, within its band: drift) or one that must not (robust: a failure).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass

from bnvg.fragility import NUMBER, Band, Fragility, label_of, skeleton, tokens


@dataclass(frozen=True)
class Difference:
    """One number (or, if the text around the numbers changed, one whole line) that differs."""

    key: str  # the log line's name, e.g. "S9 train mode, batches of 2"
    line: int  # its line number in results.log
    label: str  # the number's name on that line, e.g. "batches of 2"
    stored: str
    here: str
    index: int | None = None  # token index; None when the line's text itself changed
    band: Band | None = None

    @property
    def is_drift(self) -> bool:
        """A fragile number that moved within its band: another machine, not a broken claim."""
        return self.band is not None and float(self.here) in self.band

    def describe(self) -> str:
        where = f"log line {self.line}"
        if self.index is None:
            return (
                f"{self.key} ({where}) now reads {self.here.strip()!r}; "
                f"stored: {self.stored.strip()!r}"
            )
        kind = f", {self.band}, platform-dependent" if self.band else ", a robust number"
        return f"{self.key}, {self.label}: snapshot {self.stored}, here {self.here} ({where}{kind})"


def compare(
    stored: Mapping[str, str],
    computed: Mapping[str, str],
    line_of: Mapping[str, int],
    fragility: Fragility,
) -> list[Difference]:
    """Every difference between a claim's stored and computed lines."""
    diffs: list[Difference] = []
    for key, here in computed.items():
        before = stored.get(key)
        if before == here:
            continue
        line = line_of[key]
        if before is None or skeleton(before) != skeleton(here):
            diffs.append(Difference(key, line, "text", before or "(nothing stored)", here))
            continue
        for i, (old, new) in enumerate(zip(tokens(before), tokens(here), strict=True)):
            if old != new:
                band = fragility.band(key, i)
                diffs.append(Difference(key, line, label_of(here, i), old, new, i, band))
    return diffs


def with_numbers_from(text: str, replacements: Mapping[int, str]) -> str:
    """`text` with token i replaced by replacements[i]; everything else kept as it is."""
    parts: list[str] = []
    end = 0
    for i, match in enumerate(NUMBER.finditer(text)):
        parts += [text[end : match.start()], replacements.get(i, match.group(0))]
        end = match.end()
    return "".join(parts) + text[end:]


def accept_drift(computed: Mapping[str, str], drift: list[Difference]) -> dict[str, str]:
    """`computed` with every drifted number put back to its stored value: what the snapshot
    must match when drift is allowed (the log still shows the computed value)."""
    by_key: dict[str, dict[int, str]] = {}
    for d in drift:
        assert d.index is not None
        by_key.setdefault(d.key, {})[d.index] = d.stored
    return {k: with_numbers_from(v, by_key.get(k, {})) for k, v in computed.items()}


def parse_amber_dict(serialized: str) -> dict[str, str] | None:
    """A stored Amber `dict({...})` of strings back as a dict, or None if it is not one."""
    text = serialized.strip()
    if not (text.startswith("dict({") and text.endswith("})")):
        return None
    try:
        value = ast.literal_eval("{" + text[len("dict({") : -len("})")] + "}")
    except (SyntaxError, ValueError):
        return None
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        return None
    return {str(k): v for k, v in value.items()}
