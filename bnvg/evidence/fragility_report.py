"""The sweep's table for people: snapshots/evidence/fragility.md.

Section by section, one row per reading: its value here and in the published log, whether it
travels, the values seen on the other platforms, its band, its spread over the seeds, and how
often its claim's bound holds, each run judged by its own numbers. Written from the same
document as fragility.json, by `python -m bnvg.sweep`.
"""

from __future__ import annotations

from collections.abc import Mapping

from bnvg.evidence.fragility import Fragility, ReadingEvidence

LEGEND = """\
- **robust**: printed the same on every platform below. On a platform new to the evidence, a
  robust reading printed differently fails.
- **fragile**: printed differently on some platform. On a new platform its moving is drift,
  reported, not failed. Its band (the range seen, widened by half its width on each side,
  clipped to its kind's domain) is shown for people; no verdict reads it.
- **unstable**: its claim's bound holds on some platforms or seeds and not on others, each
  run judged by its own numbers. It is luck of the draw: quote how often it holds, not a value.

A status says in brackets what moves the reading: "kernels" (another CPU, other kernels or
threads, on the reference's torch) or "torch" (another torch release under the reference
kernels). A torch column is blank where that release prints what the reference prints.

A platform the evidence holds (the reference, or any platform below) is compared exactly
with its own numbers (`bnvg/evidence/verdicts.py`).
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


MOVES_WITH = {"platform": "kernels", "release": "torch"}


def _seen(e: ReadingEvidence) -> str:
    """The values printed on the platforms of the reference's torch, if they differ."""
    printed = {s.printed for s in e.platforms.values() if s.axis == "platform"}
    if printed <= {e.reference.printed}:
        return ""
    # By value, then by text: -0.0000 and +0.0000 are equal numbers, and a set has no order.
    return ", ".join(sorted(printed | {e.reference.printed}, key=lambda p: (_as_number(p), p)))


def _status(e: ReadingEvidence) -> str:
    moved = [MOVES_WITH[axis] for axis in e.moves_with]
    return e.status + (f" ({', '.join(moved)})" if moved else "")


def _on_release(fragility: Fragility, e: ReadingEvidence, release: str) -> str:
    seen = fragility.on_release(e, release)
    return "" if seen is None or seen.printed == e.reference.printed else seen.printed


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
    groups = (("sampler", "minibatch orders"), ("init", "starting weights"))
    for group, what in (*groups, ("platforms", "platforms")):
        counts = e.holds_in(group)
        if counts and counts[1] > 1:
            parts.append(f"{counts[0]} of {counts[1]} {what}")
    return f"{e.bound}: " + ", ".join(parts)


def render(fragility: Fragility, sections: Mapping[int, str]) -> str:
    """`sections` maps the log line of each section heading to its text, to group the rows."""
    variants = fragility.variants
    platforms = fragility.on_axis("platform")
    releases = list(fragility.releases)
    orders, weights = fragility.on_axis("sampler"), fragility.on_axis("init")
    counts = {
        status: sum(1 for e in fragility.readings.values() if e.status == status)
        for status in ("robust", "fragile", "unstable")
    }
    out = [
        "# Which numbers of the log travel, and which are luck",
        "",
        "Written by the sweep (`python -m bnvg.sweep`, see the README) from the claims run under",
        f"{len(platforms)} other platforms, {len(releases)} other torch releases and "
        f"{len(orders) + len(weights)} other seeds "
        f"(minibatch orders and starting weights). Reference: `{fragility.reference}`.",
        "",
        "Platforms: " + "; ".join(f"`{v}` = {variants[v]}" for v in platforms) + ".",
        "",
        *(
            [
                f"Torch releases, beside the reference's {fragility.reference_release}, under "
                "the reference kernels (`nox -s torch-<release>`): "
                + "; ".join(f"`{name}` = {variants[name]}" for name in fragility.releases.values())
                + ".",
                "",
            ]
            if releases
            else []
        ),
        f"Seeds: {len(orders)} minibatch orders (`sampler-seed-k`) and {len(weights)} sets of "
        "starting weights (`init-seed-k`), under the reference kernels; the reference is seed 0 "
        "of both. The published log (torch 2.12.1) is shown beside each reading; it is an "
        "observation, counted in no verdict and no band.",
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
                "| line | reading | here | published | status | on other platforms "
                + "".join(f"| torch {r} " for r in releases)
                + "| band | over seeds (min / median / max) | claim's bound holds |",
                "|---:|---|---:|---:|---|---|" + "---:|" * len(releases) + "---|---|---|",
            ]
        out.append(
            f"| {e.line} | {_cell(e.name)} | {e.reference.printed} | "
            f"{e.published.printed if e.published else ''} | {_status(e)} | {_cell(_seen(e))} | "
            + "".join(f"{_on_release(fragility, e, r)} | " for r in releases)
            + f"{_band(e)} | {_seeds(e)} | {_holds(e)} |"
        )
    published = [
        (e, e.published.printed)
        for e in by_line
        if e.published is not None and e.published.printed != e.reference.printed
    ]
    if published:
        out += ["", "## Where the published log differs from this machine", ""]
        out += [
            f"- line {e.line}, {e.name}: published {printed}, here {e.reference.printed} "
            f"({e.status})"
            for e, printed in published
        ]
    return "\n".join(out) + "\n"
