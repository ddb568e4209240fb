"""Truth over seeds: how often each claim holds, stated as k of N with its interval.

Each sentence of the workshop was written from one run. The sweep runs every claim again under
other minibatch orders (sampler seeds) and other starting weights (init seeds); a claim that
holds in every one is a fact of the recipe, one that does not is luck of the draw, and its
honest statement is a rate: "holds in 7 of 33 minibatch orders (95% interval 0.10 to 0.38)".

The interval is Wilson's score interval, which stays inside 0..1 and is honest for small N
and for k = 0 or k = N, where the normal approximation claims certainty it does not have.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Z95 = 1.959963984540054  # the 97.5th percentile of the standard normal


@dataclass(frozen=True)
class Rate:
    """k of n, with its 95% Wilson interval."""

    k: int
    n: int

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.k, self.n)

    @property
    def always(self) -> bool:
        return self.k == self.n

    def __str__(self) -> str:
        lo, hi = self.interval
        return f"{self.k} of {self.n} (95% interval {lo:.2f} to {hi:.2f})"


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval for k successes in n trials."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


AXIS_WORDS = {"sampler": "minibatch orders", "init": "starting weights"}


def build(
    reference: str,
    outcomes: Mapping[str, Mapping[str, Mapping[str, str]]],
    readings: Mapping[str, Mapping[str, Mapping[str, float | None]]],
    sentences: Mapping[str, str],
    releases: Mapping[str, Mapping[str, str]] | None = None,
    experiment: str = "",
) -> dict[str, Any]:
    """The robustness document of the experiment with the fingerprint `experiment`.

    `outcomes[axis][variant][claim]` is a claim's outcome under one variant of an axis, the
    reference run (seed 0) included in each axis; `readings[axis][variant][name]` likewise a
    reading's value; `sentences` the claims' sentences; `releases[release][claim]` a claim's
    outcome at the workshop's seeds on each torch release, the reference's included.
    """
    claims: dict[str, Any] = {}
    every_run = [
        *(run for axis in outcomes.values() for run in axis.values()),
        *(releases or {}).values(),
    ]
    names = sorted({c for run in every_run for c in run})
    for claim in names:
        row: dict[str, Any] = {"sentence": sentences.get(claim, "")}
        for axis, runs in sorted(outcomes.items()):
            judged = [run[claim] for run in runs.values() if run.get(claim) in ("passed", "failed")]
            rate = Rate(sum(o == "passed" for o in judged), len(judged))
            row[axis] = {
                "holds": rate.k,
                "of": rate.n,
                "interval": [round(x, 4) for x in rate.interval],
            }
        if releases:
            row["releases"] = {r: run.get(claim, "not run") for r, run in releases.items()}
        claims[claim] = row
    spreads: dict[str, Any] = {}
    for axis, by_variant in sorted(readings.items()):
        for name in sorted({n for values in by_variant.values() for n in values}):
            seen = [float(v) for run in by_variant.values() if (v := run.get(name)) is not None]
            finite = [v for v in seen if not math.isnan(v)]
            if finite:
                spreads.setdefault(name, {})[axis] = {
                    "min": min(finite),
                    "median": statistics.median(finite),
                    "max": max(finite),
                    "of": len(finite),
                }
    return {
        "experiment": experiment,
        "reference": reference,
        "releases": list(releases or {}),
        "axes": {axis: sorted(runs) for axis, runs in sorted(outcomes.items())},
        "claims": claims,
        "readings": spreads,
    }


def rates(document: Mapping[str, Any], claim: str) -> dict[str, Rate]:
    row = document.get("claims", {}).get(claim, {})
    return {
        axis: Rate(int(v["holds"]), int(v["of"]))
        for axis, v in row.items()
        if isinstance(v, dict) and "holds" in v
    }


def changed(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """The claims whose verdict over seeds changed between two documents, said for people."""
    out = []
    for claim in sorted(set(before.get("claims", {})) | set(after.get("claims", {}))):
        old, new = rates(before, claim), rates(after, claim)
        for axis in sorted(set(old) | set(new)):
            a, b = old.get(axis), new.get(axis)
            if a is None or b is None or a.always != b.always or (a.k, a.n) != (b.k, b.n):
                said_a = f"{a.k} of {a.n}" if a else "not measured"
                said_b = f"{b.k} of {b.n}" if b else "not measured"
                if said_a != said_b:
                    out.append(f"{claim}: {AXIS_WORDS.get(axis, axis)}: {said_a} -> {said_b}")
    return out


RELEASE_CELL = {"passed": "holds", "failed": "**fails**", "skipped": "skipped"}


def _short(claim: str) -> str:
    return claim.split("::", 1)[-1]


def render(document: Mapping[str, Any], sections: Sequence[tuple[str, str]]) -> str:
    """robustness.md: every claim, by section, with how often it holds on each axis.

    `sections` pairs each claims module's name ("test_s6_training") with its title."""
    axes = [a for a in ("sampler", "init") if a in document.get("axes", {})]
    releases = list(document.get("releases", []))
    out = [
        "# Truth over seeds: how often each claim holds",
        "",
        "Written by the sweep (`python -m bnvg.sweep`, see the README) from its fragments.",
        "Each claim was run again under "
        + " and under ".join(
            f"{len(document['axes'][a])} {AXIS_WORDS[a]} ({a} seeds, seed 0 included)" for a in axes
        )
        + f", on the reference platform `{document.get('reference', '')}`. "
        "A claim that holds in every run is a fact of the recipe; one that does not is luck of "
        "the draw, and its honest statement is the rate. Intervals are 95% Wilson intervals.",
    ]
    if releases:
        out += [
            "",
            "The torch columns say whether each claim holds at the workshop's own seeds on each "
            "torch release, under the reference kernels (`nox -s torch-<release>`); the "
            'README\'s "What an upgrade costs" lists what moves.',
        ]
    by_module: dict[str, list[str]] = {}
    for claim in document.get("claims", {}):
        by_module.setdefault(
            claim.split("::", 1)[0].rsplit("/", 1)[-1].removesuffix(".py"), []
        ).append(claim)
    for module, title in sections:
        claims = by_module.pop(module, [])
        if not claims:
            continue
        out += [
            "",
            f"## {title}",
            "",
            "| claim | "
            + " | ".join([*(AXIS_WORDS[a] for a in axes), *(f"torch {r}" for r in releases)])
            + " |",
        ]
        out.append("|---|" + "---|" * (len(axes) + len(releases)))
        for claim in claims:
            cells = []
            for axis in axes:
                rate = rates(document, claim).get(axis)
                cells.append(
                    "" if rate is None else (f"**{rate}**" if not rate.always else str(rate))
                )
            on = document["claims"][claim].get("releases", {})
            cells += [RELEASE_CELL.get(on.get(r, "not run"), "") for r in releases]
            out.append(f"| `{_short(claim)}` | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def findings(document: Mapping[str, Any]) -> str:
    """The README's luck-of-the-draw findings: the claims that do not hold for every seed."""
    axes = [a for a in ("sampler", "init") if a in document.get("axes", {})]
    lines = []
    for claim, row in document.get("claims", {}).items():
        rs = rates(document, claim)
        if all(rs[a].always for a in axes if a in rs):
            continue
        said = "; ".join(f"{AXIS_WORDS[a]}: {rs[a]}" for a in axes if a in rs)
        sentence = row.get("sentence", "")
        lines.append(
            f"- `{_short(claim)}`: {said}." + (f" It verifies: {sentence}" if sentence else "")
        )
    held = sum(
        1
        for claim in document.get("claims", {})
        if all(r.always for r in rates(document, claim).values())
    )
    n = {a: len(document["axes"][a]) for a in axes}
    head = (
        f"Over {' and '.join(f'{n[a]} {AXIS_WORDS[a]}' for a in axes)} (the sweep's seeds, the "
        f"workshop's own seed 0 included), {held} of {len(document.get('claims', {}))} claims hold "
        "in every run. These do not, and the text should state them as rates:"
    )
    return "\n".join([head, "", *lines]) + "\n"
