"""Fragments: what one variant of the sweep found, kept as evidence.

A fragment is everything the sweep needs from one claims session: the variant, the platform
that computed it (its fingerprint), every reading by name, every claim's outcome, and for the
platform variants the stored tables (training histories, figure data), whose per-point
tolerances the merge derives. Fragments are committed under snapshots/evidence/fragments/,
one folder per platform: a sweep adds or replaces the fragments of the variants it ran and
never drops those of platforms it cannot run here.

A fragment's bytes depend only on what was computed: the same variant on the same platform
gives the same file (gzip without a timestamp, JSON with sorted keys), so the merged tables
are the same whatever machine, order or number of workers produced the fragments.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bnvg.evidence.record import Record
from bnvg.experiment.platform import platform_id
from bnvg.files import replacing
from bnvg.log.readings import Reading
from bnvg.sweep import variants
from bnvg.sweep.variants import Variant

FORMAT = 2  # 2: the platform names its kernels and CPU; a variant, its settings
SUFFIX = ".json.gz"


@dataclass(frozen=True)
class Fragment:
    variant: Variant
    platform: Mapping[str, str]
    claims: Mapping[str, str]  # node id -> "passed" / "failed" / "skipped"
    readings: Mapping[str, Reading]
    tables: Mapping[str, Mapping[str, list[float]]]
    sentences: Mapping[str, str]  # node id -> what the claim verifies

    @property
    def platform_id(self) -> str:
        return platform_id(self.platform)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "variant": variants.to_json(self.variant),
            "platform": dict(self.platform),
            "claims": dict(self.claims),
            "readings": {name: r.to_json() for name, r in self.readings.items()},
            "tables": {name: dict(columns) for name, columns in self.tables.items()},
            "sentences": dict(self.sentences),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Fragment:
        if data.get("format") != FORMAT:
            raise ValueError(f"a fragment of format {data.get('format')!r}, not {FORMAT}")
        return cls(
            variant=variants.from_json(data["variant"]),
            platform=data["platform"],
            claims=data["claims"],
            readings={name: Reading.from_json(r) for name, r in data["readings"].items()},
            tables=data["tables"],
            sentences=data["sentences"],
        )

    def encode(self) -> bytes:
        text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return gzip.compress(text.encode(), compresslevel=9, mtime=0)


def from_record(variant: Variant, record: Record) -> Fragment:
    """The fragment of one finished claims session (its tables only for a platform variant:
    over seeds the histories are another experiment's, and no band reads them)."""
    platform = {k: str(v) for k, v in record.platform.items()}
    tables = {
        name: {column: [float(x) for x in values] for column, values in table.columns.items()}
        for name, table in record.tables.items()
        if variant.axis == "platform"
    }
    return Fragment(
        variant=variant,
        platform=platform,
        claims={nodeid: c.outcome for nodeid, c in record.claims.items() if c.outcome != "not run"},
        readings=dict(record.readings),
        tables=tables,
        sentences={nodeid: c.sentence for nodeid, c in record.claims.items()},
    )


class FragmentStore:
    """The fragments under one folder: <folder>/<platform id>/<variant name>.json.gz."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, platform: str, variant: str) -> Path:
        return self.folder / platform / f"{variant}{SUFFIX}"

    def has(self, platform: str, variant: str) -> bool:
        return self.path(platform, variant).exists()

    def platforms_of(self, variant: str) -> set[str]:
        return {p.parent.name for p in self.folder.glob(f"*/{variant}{SUFFIX}")}

    def write(self, fragment: Fragment) -> Path:
        path = self.path(fragment.platform_id, fragment.variant.name)
        with replacing(path) as tmp:
            tmp.write_bytes(fragment.encode())
        return path

    def read(self, path: Path) -> Fragment:
        try:
            return Fragment.from_json(json.loads(gzip.decompress(path.read_bytes())))
        except (OSError, ValueError, KeyError, TypeError, EOFError) as error:
            raise ValueError(
                f"the fragment {path} is damaged ({type(error).__name__}: {error}); delete it "
                "and run the sweep again to compute it anew"
            ) from None

    def at_seeds(self, platform: str, variant: str | None) -> Fragment | None:
        """The fragment of `platform` at the seeds of the seed variant `variant` (None: the
        workshop's own seeds, computed by whichever platform variant landed there)."""
        if variant is not None:
            return self.read(self.path(platform, variant)) if self.has(platform, variant) else None
        for path in sorted((self.folder / platform).glob(f"*{SUFFIX}")):
            if "-seed-" in path.name:
                continue  # a seed variant's, by its name: not worth reading to find out
            fragment = self.read(path)
            if fragment.variant.axis == "platform":
                return fragment
        return None

    def all(self) -> Iterator[Fragment]:
        """Every fragment, in a fixed order (platform, then variant): merging never depends
        on the order fragments were written in."""
        for path in sorted(self.folder.glob(f"*/*{SUFFIX}")):
            yield self.read(path)
