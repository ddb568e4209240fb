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
        return str(Path(test_location.filepath).parent.parent / SNAPSHOT_DIR)
