"""Where the claims' snapshots live: one Amber text file per claims module, under snapshots/.

syrupy's Amber format stores each snapshot as indented text, one dict entry a line, so a
changed number reads as a one-line diff in review. The numbers are stored as the log prints
them (strings at the printed precision), so a snapshot compares exactly what the text quotes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from syrupy.extensions.amber import AmberSnapshotExtension

if TYPE_CHECKING:
    from syrupy.location import PyTestLocation

SNAPSHOT_DIR = "snapshots"


class WorkshopSnapshots(AmberSnapshotExtension):
    """Amber snapshots kept in `snapshots/` beside `claims/`, instead of `__snapshots__/`."""

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        return str(snapshot_path(Path(test_location.filepath)).parent)


def snapshot_path(claims_module: Path) -> Path:
    """snapshots/<module>.ambr beside the claims/ folder that holds `claims_module`."""
    return claims_module.parent.parent / SNAPSHOT_DIR / f"{claims_module.stem}.ambr"


def snapshot_file_problem(path: Path) -> str | None:
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
