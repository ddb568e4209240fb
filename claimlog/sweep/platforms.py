"""docs/platforms.md's generated sections, rendered from the merged evidence for people.

- "What an upgrade costs" (`render_upgrades`): per torch release the evidence holds, the log
  lines that move, the statements that no longer hold, and which lines of the published log
  it reproduces;
- "What an arm64 reader sees" (`render_architectures`): per platform of another architecture,
  the lines that move and to what, and the statements that no longer hold there.

Written from the merged documents (`claimlog.sweep.merge`), never read back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from claimlog.evidence.fragility import Fragility, ReadingEvidence, Seen, version_key
from claimlog.sweep.report import claim_name


# -- what an upgrade costs ---------------------------------------------------------------------
@dataclass(frozen=True)
class PlatformDifference:
    """One reading that another platform run or torch release prints otherwise than the
    reference does: its evidence, and what it is `there`. (Not a
    `claimlog.evidence.verdicts.Moved`, which is a session's reading printed otherwise than its
    snapshot.)"""

    evidence: ReadingEvidence
    there: Seen

    @property
    def breaks(self) -> bool:
        """Its claim's bound held on the reference and does not on the release."""
        return bool(self.evidence.reference.holds) and self.there.holds is False


def moved(fragility: Fragility, release: str) -> list[PlatformDifference]:
    """The readings `release` prints differently from the reference, in log order."""
    return _moved(fragility, lambda e: fragility.on_release(e, release))


def moved_on(fragility: Fragility, run: str) -> list[PlatformDifference]:
    """The readings the platform run `run` prints differently from the reference."""
    return _moved(fragility, lambda e: e.platforms.get(run))


def _moved(
    fragility: Fragility, there_of: Callable[[ReadingEvidence], Seen | None]
) -> list[PlatformDifference]:
    out = []
    for e in sorted(fragility.readings.values(), key=lambda e: (e.line, e.position)):
        there = there_of(e)
        if there is not None and there.printed != e.reference.printed:
            out.append(PlatformDifference(e, there))
    return out


def failing_claims(robustness: Mapping[str, Any], release: str, reference: str) -> list[str]:
    """The claims that pass on the reference's torch (`reference`, "2.13.0") and fail on
    `release`."""
    out = []
    for claim, row in robustness.get("claims", {}).items():
        on = row.get("releases", {})
        if on.get(release) == "failed" and on.get(reference) != "failed":
            out.append(claim)
    return out


def published_lines(fragility: Fragility, release: str) -> tuple[list[int], list[int]]:
    """(the published log's lines with readings that `release` reproduces, those it does
    not): a line is reproduced when every reading on it prints as the published log does."""
    differs: dict[int, bool] = {}
    for e in fragility.readings.values():
        there = fragility.on_release(e, release)
        if e.published is None or there is None:
            continue
        differs[e.line] = differs.get(e.line, False) or there.printed != e.published.printed
    same = sorted(n for n, moved in differs.items() if not moved)
    return same, sorted(n for n, moved in differs.items() if moved)


def _line_list(lines: list[int]) -> str:
    return ", ".join(str(n) for n in lines) if lines else "none"


def _what_moves(
    platform: str, seen: list[PlatformDifference], versions: int | None, described: str = ""
) -> list[str]:
    """A platform's paragraph: the lines that move (the `versions` line, where the log has
    one, always does: it names the release), then each moved reading, there and here.
    `described`: what the platform is, in full."""
    lines = sorted({*([versions] if versions else []), *(m.evidence.line for m in seen)})
    said = "1 line moves" if len(lines) == 1 else f"{len(lines)} lines move"
    title = f"**{platform}**" + (f" ({described})" if described else "")
    return [f"{title}: {said} ({_line_list(lines)})."] + [
        f"- line {m.evidence.line}, {m.evidence.name}: {m.there.printed} "
        f"(here {m.evidence.reference.printed})" + ("; its bound breaks" if m.breaks else "")
        for m in seen
    ]


def _statements(
    broken: list[PlatformDifference], failing: list[str], there: str, holds: str
) -> list[str]:
    """The statements that no longer hold on a platform (`there`: "on torch 2.15.0"): each
    bound that breaks, each claim that fails; or that every one `holds`."""
    if not (broken or failing):
        return [f"Every claim's statement {holds} on it."]
    return [
        "Statements that no longer hold on it:",
        *(
            f"- {m.evidence.name} is {m.evidence.bound}: {there} it is {m.there.printed}, not "
            f"{m.evidence.reference.printed}"
            for m in broken
        ),
        *(f"- `{claim_name(c)}` fails" for c in failing),
    ]


def render_upgrades(
    fragility: Fragility,
    robustness: Mapping[str, Any],
    reference_lines: int,
    versions: int | None = None,
    published: str = "the published log",
) -> str:
    """docs/platforms.md's section. `reference_lines`: how many lines the log has; `versions`:
    its versions line, if it has one; `published`: how the workshop names its published log."""
    releases = list(fragility.releases)
    ref = fragility.reference_release
    if not releases:
        return (
            f"The evidence holds no torch release but the reference's ({ref}): run "
            "`nox -s torch-<release>` to add one.\n"
        )
    out = [
        f"The workshop's claims ran under the reference kernels on torch {', '.join(releases)}, "
        f"beside the pinned {ref} (`nox -s torch-<release>`). Per release: the lines of "
        f"`captures/results.log` ({reference_lines} lines) that would change, and the "
        "statements that would no longer hold.",
        "",
    ]
    for release in releases:
        seen = moved(fragility, release)
        broken = [m for m in seen if m.breaks]
        failing = failing_claims(robustness, release, ref)
        out += _what_moves(f"torch {release}", seen, versions)
        out += ["", *_statements(broken, failing, f"on torch {release}", "still holds"), ""]
    out.append(f"Which lines of {published} each torch reproduces:")
    out.append("")
    nowhere: set[int] | None = None
    for release in sorted([ref, *releases], key=version_key):
        same, other = published_lines(fragility, release)
        nowhere = set(other) if nowhere is None else nowhere & set(other)
        out.append(
            f"- torch {release}: {len(same)} of {len(same) + len(other)} lines with numbers; "
            f"not {_line_list(other)}"
        )
    out += [
        "",
        "Under the reference kernels no torch release here reproduces published lines "
        f"{_line_list(sorted(nowhere or ()))}.",
        "",
        "To adopt a release: change the torch pin in `pyproject.toml`, install it, run "
        "`pytest claims/ --snapshot-update`, review `git diff snapshots/ captures/`, and fix "
        "the text that quotes what moved (`pytest claims/ --workshop PATH` finds it).",
    ]
    return "\n".join(out) + "\n"


# -- what an arm64 reader sees -------------------------------------------------------------------
def robust_elsewhere(fragility: Fragility, e: ReadingEvidence) -> bool:
    """Whether a reading prints alike on every platform of the reference's architecture."""
    return all(
        seen.printed == e.reference.printed
        for name, seen in e.platforms.items()
        if name not in fragility.architectures
    )


def render_architectures(
    fragility: Fragility, robustness: Mapping[str, Any], versions: int | None = None
) -> str:
    """docs/platforms.md's section: per platform of another architecture, the lines that move and to
    what, the readings robust on every x86-64 platform that move there (fragile now), and
    the statements that no longer hold."""
    if not fragility.architectures:
        return "The evidence holds no platform of another architecture: run `nox -s arm64`.\n"
    out = [
        "The workshop's claims ran at the workshop's seeds on each platform below "
        "(`nox -s arm64`). Per platform: the lines of `captures/results.log` that would "
        "change, the readings that print alike on every x86-64 platform and move there (so "
        "they are fragile, and the text's citations of them are judged so), and the "
        "statements that would no longer hold.",
        "",
    ]
    claims = robustness.get("claims", {})
    for run, label in sorted(fragility.architectures.items()):
        seen = moved_on(fragility, run)
        out += _what_moves(label, seen, versions, fragility.variants.get(run, ""))
        newly = [m for m in seen if robust_elsewhere(fragility, m.evidence)]
        out.append("")
        out.append(
            "Robust on every x86-64 platform, moved here: "
            + (", ".join(f"{m.evidence.name} (line {m.evidence.line})" for m in newly) or "none")
            + "."
        )
        failing = [
            c for c, row in claims.items() if row.get("architectures", {}).get(label) == "failed"
        ]
        broken = [m for m in seen if m.breaks]
        out += ["", *_statements(broken, failing, "there", "holds"), ""]
    return "\n".join(out)
