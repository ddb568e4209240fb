"""syrupy's half of the snapshots: each claim's log lines as the text quotes them.

Amber files, one per claims module, under snapshots/text/ (`bnvg.places`), which syrupy owns
alone: it claims every file it finds there. A changed line reads as a one-line diff in review.
The numbers themselves, at full precision, are pytest-regressions' (`bnvg.plugin.numbers`).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from syrupy.extensions.amber import AmberSnapshotExtension

from bnvg.places import Places

if TYPE_CHECKING:
    from syrupy.location import PyTestLocation


@cache
def extension_for(places: Places) -> type[AmberSnapshotExtension]:
    """An Amber extension that keeps its files in `places.text_snapshots` (one class per
    project root, so syrupy sees the same extension in every claim)."""

    class WorkshopText(AmberSnapshotExtension):
        @classmethod
        def dirname(cls, *, test_location: PyTestLocation) -> str:
            return str(places.text_snapshots)

    return WorkshopText


def damage(path: Path) -> str | None:
    """Why `path` is not a readable Amber snapshot file, or None if it is.

    syrupy reads a damaged file as "needs to be regenerated ... due to a major Syrupy update",
    which sends an author looking in the wrong place; this names the file and the damage.
    """
    if not path.exists():
        return f"the snapshot file {path} is missing"
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as error:
        return f"the snapshot file {path} cannot be read ({error})"
    if not lines or not lines[0].startswith("# serializer version:"):
        return (
            f"the snapshot file {path} is damaged: it does not start with '# serializer version:'"
        )
    opened = 0
    for number, line in enumerate(lines[1:], start=2):
        if line.startswith("# name: "):
            if opened:
                return (
                    f"the snapshot file {path} is damaged: line {number} starts a snapshot "
                    "before the last one ended"
                )
            opened = number
        elif line == "# ---":
            opened = 0
        elif not opened or not line.startswith("  "):
            return f"the snapshot file {path} is damaged at line {number}: {line[:60]!r}"
    if opened:
        return f"the snapshot file {path} is damaged: the snapshot from line {opened} never ends"
    return None
