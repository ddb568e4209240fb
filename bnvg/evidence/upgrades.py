"""What an upgrade of torch costs: per release, what the workshop would have to change.

Each torch release the evidence holds (`nox -s torch-<release>`) ran the workshop's claims
under the reference kernels. Against the reference's torch, this module says, per release,

- the log lines that move (a line moves when one of its readings prints differently; the
  versions line always does);
- the statements that no longer hold: readings whose claim's bound held on the reference and
  does not on that release, and the claims that then fail;
- which lines of the published log (torch 2.12.1) that release reproduces.

It is written from the merged tables (`bnvg.evidence.fragility` and `robustness`), as the
README's section between its markers, by `python -m bnvg.sweep`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bnvg.evidence.fragility import Fragility, ReadingEvidence, Seen
from bnvg.log.layout import line_number

# "torch 2.13.0+cpu | numpy 2.2.6 | seed 0": the line that names the release always moves.
VERSIONS_LINE = line_number("versions")


@dataclass(frozen=True)
class Moved:
    """One reading that a release prints differently."""

    evidence: ReadingEvidence
    there: Seen

    @property
    def breaks(self) -> bool:
        """Its claim's bound held on the reference and does not on the release."""
        return bool(self.evidence.reference.holds) and self.there.holds is False


def moved(fragility: Fragility, release: str) -> list[Moved]:
    """The readings `release` prints differently from the reference, in log order."""
    out = []
    for e in sorted(fragility.readings.values(), key=lambda e: (e.line, e.position)):
        there = fragility.on_release(e, release)
        if there is not None and there.printed != e.reference.printed:
            out.append(Moved(e, there))
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


def _short(claim: str) -> str:
    return claim.split("::", 1)[-1]


def _line_list(lines: list[int]) -> str:
    return ", ".join(str(n) for n in lines) if lines else "none"


def render(fragility: Fragility, robustness: Mapping[str, Any], reference_lines: int) -> str:
    """The README's section. `reference_lines`: how many lines the log has."""
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
        lines = sorted({VERSIONS_LINE, *(m.evidence.line for m in seen)})
        broken = [m for m in seen if m.breaks]
        failing = failing_claims(robustness, release, ref)
        said = "1 line moves" if len(lines) == 1 else f"{len(lines)} lines move"
        out.append(f"**torch {release}**: {said} ({_line_list(lines)}).")
        out += [
            f"- line {m.evidence.line}, {m.evidence.name}: {m.there.printed} "
            f"(here {m.evidence.reference.printed})" + ("; its bound breaks" if m.breaks else "")
            for m in seen
        ]
        if broken or failing:
            out.append("")
            out.append("Statements that no longer hold on it:")
            out += [
                f"- {m.evidence.name} is {m.evidence.bound}: on torch {release} it is "
                f"{m.there.printed}, not {m.evidence.reference.printed}"
                for m in broken
            ]
            out += [f"- `{_short(c)}` fails" for c in failing]
        else:
            out.append("")
            out.append("Every claim's statement still holds on it.")
        out.append("")
    out.append("Which lines of the published log (torch 2.12.1) each torch reproduces:")
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


def version_key(version: str) -> tuple[int, ...]:
    """ "2.15.0" -> (2, 15, 0): releases in the order they came out."""
    return tuple(int(part) if part.isdigit() else 0 for part in version.split("."))
