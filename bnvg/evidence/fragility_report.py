"""The sweep's table for people: snapshots/evidence/fragility.md.

Section by section, one row per reading: its value here, whether it travels, the values seen
on the other platforms, its band, its spread over minibatch orders, and how often its claim's
bound holds there. Written from the same document as fragility.json, by `python -m bnvg.sweep`.
"""

from __future__ import annotations

from collections.abc import Mapping

from bnvg.evidence.fragility import PUBLISHED, Fragility, ReadingEvidence

LEGEND = """\
- **robust**: printed the same on every platform below, the published log included. On a
  platform new to the evidence, a robust reading printed differently fails.
- **fragile**: printed differently on some platform. On a new platform its moving is drift,
  reported, not failed. Its band (the range seen, widened by half its width on each side,
  clipped to its kind's domain) is shown for people; no verdict reads it.
- **unstable**: its claim's bound holds on some platforms or seeds and not on others. It is
  luck of the draw: quote how often it holds, not a value.

A platform the evidence holds (the reference, or any platform below) is compared exactly
with its own numbers (`bnvg/evidence/verdicts.py`).
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _seen(e: ReadingEvidence) -> str:
    printed = {s.printed for s in e.platforms.values()} | {e.reference.printed}
    # By value, then by text: -0.0000 and +0.0000 are equal numbers, and a set has no order.
    return ", ".join(sorted(printed, key=lambda p: (_as_number(p), p))) if e.moved_in_print else ""


def _as_number(printed: str) -> float:
    """A printed value's number, to order values seen ("never" last)."""
    digits = printed.removeprefix("step ")
    return float(digits) if digits not in ("never", "True", "False") else float("inf")


def _band(e: ReadingEvidence) -> str:
    return (
        ""
        if e.band is None or not e.moved_in_print
        else (f"{e.printed(e.band[0])} to {e.printed(e.band[1])}")
    )


def _seeds(e: ReadingEvidence) -> str:
    spread = e.over_seeds()
    if spread is None or not e.seeds:
        return ""
    lo, mid, hi = (e.printed(v) for v in spread)
    return lo if lo == hi else f"{lo} / {mid} / {hi}"


def _holds(e: ReadingEvidence) -> str:
    if e.bound is None:
        return ""
    parts = []
    for group, what in (("seeds", "seeds"), ("platforms", "platforms")):
        counts = e.holds_in(group)
        if counts and counts[1] > 1:
            parts.append(f"{counts[0]} of {counts[1]} {what}")
    return f"{e.bound}: " + ", ".join(parts)


def render(fragility: Fragility, sections: Mapping[int, str]) -> str:
    """`sections` maps the log line of each section heading to its text, to group the rows."""
    variants = fragility.variants
    seeds = [v for v in variants if "-seed-" in v]
    platforms = [v for v in variants if v not in seeds]
    counts = {
        status: sum(1 for e in fragility.readings.values() if e.status == status)
        for status in ("robust", "fragile", "unstable")
    }
    out = [
        "# Which numbers of the log travel, and which are luck",
        "",
        "Written by the sweep (`python -m bnvg.sweep`, see the README) from the claims run under",
        f"{len(platforms)} other platforms and {len(seeds)} other seeds (minibatch orders "
        f"and starting weights). Reference: `{fragility.reference}`.",
        "",
        "Platforms: " + "; ".join(f"`{v}` = {variants[v]}" for v in platforms) + ".",
        "",
        f"Seeds: {sum('sampler' in v for v in seeds)} minibatch orders (`sampler-seed-k`) and "
        f"{sum('init' in v for v in seeds)} sets of starting weights (`init-seed-k`); the "
        "reference is seed 0 of both.",
        "",
        f"{len(fragility.readings)} readings: "
        + ", ".join(f"{n} {status}" for status, n in counts.items())
        + ".",
        "",
        LEGEND,
    ]
    by_line = sorted(fragility.readings.values(), key=lambda e: (e.line, e.position))
    heading_lines = sorted(sections)
    current = None
    for e in by_line:
        section = max((n for n in heading_lines if n <= e.line), default=None)
        if section != current:
            current = section
            title = sections.get(section, "the header") if section else "the header"
            out += [
                "",
                f"## {title}",
                "",
                "| line | reading | here | status | on other platforms | band "
                "| over seeds (min / median / max) | claim's bound holds |",
                "|---:|---|---:|---|---|---|---|---|",
            ]
        out.append(
            f"| {e.line} | {_cell(e.name)} | {e.reference.printed} | {e.status} | "
            f"{_cell(_seen(e))} | {_band(e)} | {_seeds(e)} | {_holds(e)} |"
        )
    published = [
        e
        for e in by_line
        if PUBLISHED in e.platforms and e.platforms[PUBLISHED].printed != e.reference.printed
    ]
    if published:
        out += ["", "## Where the published log differs from this machine", ""]
        out += [
            f"- line {e.line}, {e.name}: published {e.platforms[PUBLISHED].printed}, "
            f"here {e.reference.printed} ({e.status})"
            for e in published
        ]
    return "\n".join(out) + "\n"
