"""The sweep's tables and the documentation's generated sections, rendered for people.

- `snapshots/evidence/fragility.md` (`render_fragility`): section by section, one row per
  reading: its value here and in the published log, whether it travels, the values seen on
  the other platforms, its band, its spread over the seeds, and how often its claim's bound
  holds, each run judged by its own numbers;
- `snapshots/evidence/robustness.md` (`render_robustness`) and docs/sweep.md's findings
  (`findings`): every claim, with how often it holds over minibatch orders and over starting
  weights, as k of N with its 95% interval, and on each torch release;
- docs/platforms.md's sections are `claimlog.sweep.platforms`'s.

All are written from the merged documents (`claimlog.sweep.merge`), never read back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from claimlog.declaration import Declaration
from claimlog.evidence.fragility import (
    FRAGILE,
    ROBUST,
    Fragility,
    Rate,
    ReadingEvidence,
    SeedWords,
    listed,
)

# -- fragility.md ----------------------------------------------------------------------------
LEGEND = """\
Each reading answers two questions, apart (`claimlog/evidence/fragility.py`).

**On platforms: what does its line print?** (the column "on platforms")
- **robust**: every platform below prints it alike.
- **fragile**: some platform prints it otherwise (the prints are listed). Its band (the range
  seen, widened by half its width on each side, clipped to its kind's domain) is shown for
  people; no verdict reads it.
- Neither decides a run: on a platform new to the evidence (another fingerprint computes
  otherwise) any reading may move, and its moving is drift, reported, not failed, while the
  evidence's keys are the checkout's.

In brackets, what moves a fragile reading: "kernels" (another CPU, other kernels or threads,
on the reference's torch) or "torch" (another torch release under the reference kernels). A
torch column is blank where that release prints what the reference prints. "bound holds on
k of N platforms" marks a claim whose statement itself depends on the platform: quote how
often it holds, never a value.

**Over seeds: how general is the sentence?** (the column "over seeds, the bound holds")
In how many {seeds} the claim's bound held, each run
judged by its own numbers, as k of N. Seeds never decide a verdict or excuse a quoted value.

A platform the evidence holds (the reference, or any platform below) is compared exactly
with its own numbers (`claimlog/evidence/verdicts.py`).
"""


def legend(workshop: Declaration) -> str:
    """How to read fragility.md, in the words of the workshop's seed axes."""
    return LEGEND.format(seeds=listed([counted for _, _, counted in workshop.seeds.values()]))


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


MOVES_WITH = {"platform": "kernels", "release": "torch"}


def _seen(e: ReadingEvidence) -> str:
    """The values printed on the platforms of the reference's torch, if they differ."""
    printed = {s.printed for s in e.platforms.values() if s.axis == "platform"}
    if printed <= {e.reference.printed}:
        return ""
    # By value, then by text: -0.0000 and +0.0000 are equal numbers, and a set has no order.
    return ", ".join(sorted(printed | {e.reference.printed}, key=lambda p: (_as_number(p), p)))


def _on_platforms(e: ReadingEvidence) -> str:
    """The platform verdict, what moves it, and whether the claim's bound depends on the
    platform: "fragile (kernels, torch); bound holds on 4 of 21 platforms"."""
    moved = [MOVES_WITH[axis] for axis in e.moves_with]
    said = e.platform_verdict + (f" ({', '.join(moved)})" if moved else "")
    platforms = e.on_how_many_platforms()
    if e.holds_on_some_platforms_only and platforms is not None:
        said += f"; bound holds on {platforms.k} of {platforms.n} platforms"
    return said


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


def _generality(e: ReadingEvidence, seeds: SeedWords) -> str:
    """ "at least 90: 16 of 33 minibatch orders, 19 of 33 starting weights"."""
    if e.bound is None or not e.generality():
        return ""
    return f"{e.bound}: " + ", ".join(f"{r.k} of {r.n} {what}" for what, r in e.generality(seeds))


def render_fragility(
    fragility: Fragility,
    sections: Mapping[int, str],
    workshop: Declaration,
    guide: str | None = "docs/sweep.md",
) -> str:
    """fragility.md, for `workshop`: `sections` maps the log line of each section heading to
    its text, to group the rows; `guide`, the workshop's page on the sweep, if it has one."""
    variants = fragility.variants
    platforms = fragility.on_axis("platform")
    releases = list(fragility.releases)
    seeds = {axis: fragility.on_axis(axis) for axis in workshop.seed_axes()}
    seeded = [
        f"{len(seeds[a])} {counted} (`{a}-seed-k`)" for a, (_, _, counted) in workshop.seeds.items()
    ]
    axes_named = listed([many for _, many, _ in workshop.seeds.values()])
    verdicts = [e.platform_verdict for e in fragility.readings.values()]
    counts = {verdict: verdicts.count(verdict) for verdict in (ROBUST, FRAGILE)}
    bounded = [e for e in fragility.readings.values() if e.bound is not None and e.generality()]
    general = sum(1 for e in bounded if e.general)
    out = [
        "# Which numbers of the log travel, and how general each sentence is",
        "",
        f"Written by the sweep (`{workshop.sweep_command}`{f', {guide}' if guide else ''}) from "
        "the claims run under",
        f"{len(platforms)} other platforms, {len(releases)} other torch releases and "
        f"{sum(map(len, seeds.values()))} other seeds "
        f"({axes_named}). Reference: `{fragility.reference}`.",
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
        f"Seeds: {listed(seeded)}, under the reference kernels; the reference is seed 0 "
        f"of {'both' if len(seeds) == 2 else 'each'}."
        + (
            f" {_capital(workshop.published)} is shown beside each reading; it is an "
            "observation, counted in no verdict and no band."
            if fragility.on_axis("published")
            else ""
        ),
        "",
        f"{len(fragility.readings)} readings. On platforms: "
        + ", ".join(f"{n} {verdict}" for verdict, n in counts.items())
        + f". Over seeds: of the {len(bounded)} whose claim states a bound, {general} hold in "
        f"every seed swept and {len(bounded) - general} do not.",
        "",
        legend(workshop),
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
                "| line | reading | here | published | on platforms | prints elsewhere "
                + "".join(f"| torch {r} " for r in releases)
                + "| band | over seeds (min / median / max) | over seeds, the bound holds |",
                "|---:|---|---:|---:|---|---|" + "---:|" * len(releases) + "---|---|---|",
            ]
        out.append(
            f"| {e.line} | {_escape(e.name)} | {e.reference.printed} | "
            f"{e.published.printed if e.published else ''} | {_on_platforms(e)} | "
            f"{_escape(_seen(e))} | "
            + "".join(f"{_on_release(fragility, e, r)} | " for r in releases)
            + f"{_band(e)} | {_seeds(e)} | {_generality(e, workshop.seeds)} |"
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
            f"({e.platform_verdict})"
            for e, printed in published
        ]
    return "\n".join(out) + "\n"


# -- robustness.md and docs/sweep.md's findings ---------------------------------------------
def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def axis_words(workshop: Declaration) -> dict[str, str]:
    """How people call each seed axis: {"sampler": "minibatch orders", ...}."""
    return {axis: many for axis, (_, many, _) in workshop.seeds.items()}


def rates(document: Mapping[str, Any], claim: str) -> dict[str, Rate]:
    row = document.get("claims", {}).get(claim, {})
    return {
        axis: Rate(int(v["holds"]), int(v["of"]))
        for axis, v in row.items()
        if isinstance(v, dict) and "holds" in v
    }


def changed(
    before: Mapping[str, Any], after: Mapping[str, Any], workshop: Declaration
) -> list[str]:
    """The claims whose verdict over seeds changed between two documents, said for people."""
    words = axis_words(workshop)
    out = []
    for claim in sorted(set(before.get("claims", {})) | set(after.get("claims", {}))):
        old, new = rates(before, claim), rates(after, claim)
        for axis in sorted(set(old) | set(new)):
            a, b = old.get(axis), new.get(axis)
            if a != b:
                was, now = (f"{r.k} of {r.n}" if r else "not measured" for r in (a, b))
                out.append(f"{claim}: {words.get(axis, axis)}: {was} -> {now}")
    return out


RELEASE_CELL = {"passed": "holds", "failed": "**fails**", "skipped": "skipped"}


def claim_name(claim: str) -> str:
    """ "claims/test_s8.py::test_x" -> "test_x"."""
    return claim.split("::", 1)[-1]


def render_robustness(
    document: Mapping[str, Any],
    sections: Sequence[tuple[str, str]],
    workshop: Declaration,
    guide: str | None = "docs/sweep.md",
) -> str:
    """robustness.md: every claim, by section, with how often it holds on each axis.

    `sections` pairs each claims module's name ("test_s6_training") with its title."""
    axes = [a for a in workshop.seed_axes() if a in document.get("axes", {})]
    words = axis_words(workshop)
    releases = list(document.get("releases", []))
    others = list(document.get("architectures", []))
    out = [
        "# Truth over seeds: how often each claim holds",
        "",
        f"Written by the sweep (`{workshop.sweep_command}`{f', see {guide}' if guide else ''}) "
        "from its fragments.",
        "Each claim was run again under "
        + " and under ".join(
            f"{len(document['axes'][a])} {words[a]} ({a} seeds, seed 0 included)" for a in axes
        )
        + f", on the reference platform `{document.get('reference', '')}`. "
        "A claim that holds in every run is a fact of the recipe; one that does not is luck of "
        "the draw, and its honest statement is the rate. Intervals are 95% Wilson intervals.",
    ]
    if releases:
        out += [
            "",
            "The torch columns say whether each claim holds at the workshop's own seeds on each "
            "torch release, under the reference kernels (`nox -s torch-<release>`); "
            'docs/platforms.md\'s "What an upgrade costs" lists what moves.',
        ]
    if others:
        out += [
            "",
            "The columns of another architecture say whether each claim holds at the "
            "workshop's own seeds there (`nox -s arm64`); docs/platforms.md's \"arm64\" "
            "section lists what moves.",
        ]
    by_module: dict[str, list[str]] = {}
    for claim in document.get("claims", {}):
        by_module.setdefault(module_of(claim), []).append(claim)
    for module, title in sections:
        claims = by_module.pop(module, [])
        if not claims:
            continue
        out += [
            "",
            f"## {title}",
            "",
            "| claim | "
            + " | ".join([*(words[a] for a in axes), *(f"torch {r}" for r in releases), *others])
            + " |",
        ]
        out.append("|---|" + "---|" * (len(axes) + len(releases) + len(others)))
        for claim in claims:
            rs, row = rates(document, claim), document["claims"][claim]
            cells = [
                "" if (r := rs.get(a)) is None else str(r) if r.always else f"**{r}**" for a in axes
            ]
            for column, names in (("releases", releases), ("architectures", others)):
                cells += [
                    RELEASE_CELL.get(row.get(column, {}).get(n, "not run"), "") for n in names
                ]
            out.append(f"| `{claim_name(claim)}` | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def findings(document: Mapping[str, Any], workshop: Declaration) -> str:
    """docs/sweep.md's luck-of-the-draw findings: the claims that do not hold for every seed."""
    axes = [a for a in workshop.seed_axes() if a in document.get("axes", {})]
    words = axis_words(workshop)
    lines, held = [], 0
    for claim, row in document.get("claims", {}).items():
        rs = rates(document, claim)
        held += all(r.always for r in rs.values())  # in every run of every axis
        if all(rs[a].always for a in axes if a in rs):
            continue
        said = "; ".join(f"{words[a]}: {rs[a]}" for a in axes if a in rs)
        sentence = row.get("sentence", "")
        lines.append(
            f"- `{claim_name(claim)}`: {said}." + (f" It verifies: {sentence}" if sentence else "")
        )
    n = {a: len(document["axes"][a]) for a in axes}
    head = (
        f"Over {' and '.join(f'{n[a]} {words[a]}' for a in axes)} (the sweep's seeds, the "
        f"workshop's own seed 0 included), {held} of {len(document.get('claims', {}))} claims hold "
        "in every run. These do not, and the text should state them as rates:"
    )
    return "\n".join([head, "", *lines]) + "\n"


def stale_evidence(stale: Mapping[str, int], fragments: int) -> list[str]:
    """What the sweep says, before it plans, of the claims whose evidence is stale (each with
    the number of fragments holding it stale, of `fragments`)."""
    if not stale:
        return []
    said = [
        f"the evidence of {len(stale)} claim{'s' if len(stale) != 1 else ''} is stale (its "
        "code, or what it computes, changed since): only they are computed again"
    ]
    said += [f"  {claim}: stale in {n} of {fragments} fragments" for claim, n in stale.items()]
    return said


def module_of(claim: str) -> str:
    """ "claims/test_s6_training.py::test_x" -> "test_s6_training"."""
    return claim.split("::", 1)[0].rsplit("/", 1)[-1].removesuffix(".py")
