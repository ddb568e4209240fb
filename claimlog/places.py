"""Where every kind of file of the project lives, known in this one place.

    snapshots/
      text/          syrupy's Amber files: each claim's log lines, as the text quotes them
      numbers/       pytest-regressions' CSV files: every reading at full precision
        claims/        one file per claim, one row per reading it quotes
        runs/          one file per training run: its whole history
        figures/       one file per figure that plots anything but a history
      evidence/      the sweep's fragments and tables (fragility.*, robustness.*), the published log
    docs/sweep.md, docs/platforms.md   pages with sections the sweep writes (where they exist)
      environment.json   the platform that recorded the snapshots
      keys.json          the code that recorded them: each claim's key
    obtained/        git-ignored: what a normal run computed (results.log, diagrams/), and
                     the update's undo journal (.update/)

Each snapshot library owns its folder and looks nowhere else: syrupy claims every file under
`text/` as its own, so nothing else may live there.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# The pages of the documentation the sweep writes sections of, relative to the root (a project
# that lacks one gets none written).
SWEEP_PAGE = "docs/sweep.md"
PLATFORMS_PAGE = "docs/platforms.md"

OBTAINED_GITIGNORE = "# Created by claimlog: what a normal run computed, never the record.\n*\n"


@dataclass(frozen=True)
class Places:
    """The project's folders and files, under one root (a clone, or a scratch copy)."""

    root: Path
    obtained_folder: str = "obtained"  # the ini option claimlog_obtained, relative to the root

    def make_obtained(self) -> Path:
        """The obtained folder, made, ignoring itself as pytest's cache does (a `.gitignore`
        of `*` inside): what a normal run computed is never part of the record, in this
        repository or in any author's."""
        folder = self.obtained
        folder.mkdir(parents=True, exist_ok=True)
        ignore = folder / ".gitignore"
        if not ignore.exists():
            ignore.write_text(OBTAINED_GITIGNORE)
        return folder

    @property
    def snapshots(self) -> Path:
        return self.root / "snapshots"

    @property
    def text_snapshots(self) -> Path:
        return self.snapshots / "text"

    @property
    def numbers(self) -> Path:
        return self.snapshots / "numbers"

    @property
    def evidence(self) -> Path:
        return self.snapshots / "evidence"

    @property
    def environment(self) -> Path:
        return self.snapshots / "environment.json"

    @property
    def recorded_keys(self) -> Path:
        """Each claim's key (`claimlog.evidence.keys`) as the update that recorded the
        snapshots found it: what code they are of."""
        return self.snapshots / "keys.json"

    @property
    def fragility_json(self) -> Path:
        return self.evidence / "fragility.json"

    @property
    def fragility_md(self) -> Path:
        return self.evidence / "fragility.md"

    @property
    def robustness_json(self) -> Path:
        return self.evidence / "robustness.json"

    @property
    def robustness_md(self) -> Path:
        return self.evidence / "robustness.md"

    @property
    def fragments(self) -> Path:
        return self.evidence / "fragments"

    @property
    def published_log(self) -> Path:
        return self.evidence / "published.log"

    @property
    def results_log(self) -> Path:
        return self.root / "captures" / "results.log"

    @property
    def diagrams(self) -> Path:
        return self.root / "diagrams"

    @property
    def record_folders(self) -> tuple[Path, ...]:
        """The folders of the record a claims session may write, and only under a completed
        --snapshot-update (`claimlog.transaction`), the sweep's evidence among them (an
        update computes what of it is stale first); with `environment`, the whole record."""
        return (
            self.root / "captures",
            self.diagrams,
            self.text_snapshots,
            self.numbers,
            self.evidence,
        )

    @property
    def generated_pages(self) -> tuple[Path, ...]:
        """The pages of the documentation the sweep writes sections of, where the project
        has them: an update that merges the evidence rewrites them inside its transaction."""
        pages = (self.root / SWEEP_PAGE, self.root / PLATFORMS_PAGE)
        return tuple(page for page in pages if page.is_file())

    @property
    def update_workspace(self) -> Path:
        """Where an update keeps its journal, the copy of the record that undoes it, and the
        name of its process (`claimlog.transaction`): empty or absent but during an update,
        or after one that was killed."""
        return self.obtained / ".update"

    @property
    def obtained(self) -> Path:
        """What a normal run computed, never committed (git-ignored): its log and figures,
        as pytest-regressions writes its `.obtained` files beside the expected ones."""
        return self.root / self.obtained_folder

    @property
    def obtained_results_log(self) -> Path:
        return self.obtained / "results.log"

    @property
    def obtained_diagrams(self) -> Path:
        return self.obtained / "diagrams"

    def text_snapshot(self, claims_module: Path) -> Path:
        """The Amber file of one claims module."""
        return self.text_snapshots / f"{claims_module.stem}.ambr"

    def numbers_file(self, name: str) -> Path:
        """The CSV file of a stored table or a claim's readings, by its name
        ("runs/batch-norm", "claims/test_s4_at_init/test_plain_...")."""
        return self.numbers / f"{name}.csv"


# -- what a run computed, against the record: the one comparison, the session's and the runner's
def differing_lines(here: str, there: str) -> list[int]:
    """The numbers (from 1) of the lines where two logs differ, a line only one has included."""
    a, b = here.splitlines(), there.splitlines()
    return [n for n in range(1, max(len(a), len(b)) + 1) if a[n - 1 : n] != b[n - 1 : n]]


def differing_figures(diagrams: Path, committed: Places) -> list[str]:
    """The committed figures that `diagrams` lacks or holds with other bytes."""
    return [
        p.name
        for p in sorted(committed.diagrams.glob("*.png"))
        if not (diagrams / p.name).is_file() or (diagrams / p.name).read_bytes() != p.read_bytes()
    ]


def extra_figures(diagrams: Path, committed: Places) -> list[str]:
    """The figures `diagrams` holds that were never committed: drawn, but checked by nobody."""
    known = {p.name for p in committed.diagrams.glob("*.png")}
    return [p.name for p in sorted(diagrams.glob("*.png")) if p.name not in known]
