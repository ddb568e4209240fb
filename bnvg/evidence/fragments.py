"""Fragments: what one variant of the sweep found, kept as evidence.

A fragment is everything the evidence needs from one claims session: the variant (what the
session varied: a platform's kernels, or the seeds), the platform that computed it, the
experiment it measured (`bnvg.evidence.fragments`), every reading by name, every claim's
outcome, and for the platform variants the stored tables (training histories, figure data).
Fragments are committed under snapshots/evidence/fragments/, one folder per platform. The
sweep (`bnvg.sweep`) builds them; the plugin reads them to find whether the evidence holds a
platform, and only those of this experiment count: the others are stale.

**Which experiment.** Evidence of another experiment is not evidence for this one: after the
recipe's `steps` go from 4000 to 3000, the old fragments' 0.0079 is no value any platform
prints for this workshop. The fingerprint (`experiment_fingerprint`) digests the recipe
(`bnvg.experiment.config.recipe`: every constant of it) and the committed reference numbers
(every file under `snapshots/numbers/`: readings, histories, figure data, byte for byte). A
change of code that moves no number keeps it (a refactor throws away no sweep); a change of
the recipe, or one that moves a reference number (recorded by `--snapshot-update`), makes it
another. A fragment records the fingerprint of the project it ran in, before anything ran
there; the merged tables record the one they merged.

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
from bnvg.experiment.config import recipe
from bnvg.experiment.platform import Platform
from bnvg.log.readings import Reading
from bnvg.places import Places
from bnvg.store import digest, replacing

# 3: the fragment names the experiment it measured; 2: the platform names its kernels and
# CPU, a variant its settings
FORMAT = 3
SUFFIX = ".json.gz"
AXES = ("platform", "sampler", "init")


@dataclass(frozen=True)
class Variant:
    """One whole claims session of the sweep: the workshop under other arithmetic (axis
    "platform"), or under another minibatch order ("sampler") or other starting weights
    ("init"). The sweep's catalogue of them is `bnvg.sweep.variants`."""

    name: str
    axis: str  # "platform", "sampler" or "init"
    settings: tuple[tuple[str, str], ...] = ()  # kernel variables set for this variant
    threads: int = 1
    native: bool = False  # --native-kernels: the machine's own choice
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.axis not in AXES:
            raise ValueError(f"unknown axis {self.axis!r}: one of {', '.join(AXES)}")

    def args(self) -> list[str]:
        """The options of the claims session this variant is."""
        args = [f"--torch-threads={self.threads}"]
        if self.native:
            args.append("--native-kernels")
        if self.axis == "sampler":
            args.append(f"--sampler-seed={self.seed}")
        elif self.axis == "init":
            args.append(f"--init-seed={self.seed}")
        return args

    def env(self) -> dict[str, str]:
        return dict(self.settings)

    def describe(self) -> str:
        if self.axis == "sampler":
            return f"minibatch order {self.seed} (sampler seed)"
        if self.axis == "init":
            return f"starting weights {self.seed} (init seed)"
        if self.native:
            return "the workshop on this machine's own kernels (--native-kernels)"
        varied = [f"{k}={v}" for k, v in self.settings]
        if self.threads != 1:
            varied.append(f"{self.threads} threads")
        return "the reference kernels" + (", but " + ", ".join(varied) if varied else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "axis": self.axis,
            "settings": dict(self.settings),
            "threads": self.threads,
            "native": self.native,
            "seed": self.seed,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Variant:
        seed = data["seed"]
        return cls(
            name=str(data["name"]),
            axis=str(data["axis"]),
            settings=tuple((str(k), str(v)) for k, v in dict(data["settings"]).items()),
            threads=int(data["threads"]),
            native=bool(data["native"]),
            seed=None if seed is None else int(seed),
        )


def seed_variant_name(sampler_seed: int | None, init_seed: int | None) -> str | None:
    """The name of the seed variant a session with these seeds is (None: the workshop's own
    seeds; a session with both set is no variant of the sweep: "sampler+init")."""
    if sampler_seed is not None and init_seed is not None:
        return f"sampler-seed-{sampler_seed}+init-seed-{init_seed}"
    if sampler_seed is not None:
        return f"sampler-seed-{sampler_seed}"
    if init_seed is not None:
        return f"init-seed-{init_seed}"
    return None


@dataclass(frozen=True)
class Fragment:
    variant: Variant
    platform: Mapping[str, str]  # as the session recorded it (`Platform.to_json`)
    experiment: str  # the fingerprint of the experiment it measured
    claims: Mapping[str, str]  # node id -> "passed" / "failed" / "skipped"
    readings: Mapping[str, Reading]
    tables: Mapping[str, Mapping[str, list[float]]]
    sentences: Mapping[str, str]  # node id -> what the claim verifies

    @property
    def platform_id(self) -> str:
        return Platform.from_json(self.platform).id

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "experiment": self.experiment,
            "variant": self.variant.to_json(),
            "platform": dict(self.platform),
            "claims": dict(self.claims),
            "readings": {name: r.to_json() for name, r in self.readings.items()},
            "tables": {name: dict(columns) for name, columns in self.tables.items()},
            "sentences": dict(self.sentences),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Fragment:
        if data.get("format") not in (2, FORMAT):
            raise ValueError(f"a fragment of format {data.get('format')!r}, not {FORMAT}")
        return cls(
            variant=Variant.from_json(data["variant"]),
            platform=data["platform"],
            # Format 2 did not record its experiment: unknown, so stale for every experiment.
            experiment=str(data.get("experiment", "")),
            claims=data["claims"],
            readings={name: Reading.from_json(r) for name, r in data["readings"].items()},
            tables=data["tables"],
            sentences=data["sentences"],
        )

    def encode(self) -> bytes:
        text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return gzip.compress(text.encode(), compresslevel=9, mtime=0)


def from_record(variant: Variant, record: Record, experiment: str) -> Fragment:
    """The fragment of one finished claims session of the experiment `experiment` (its
    tables only for a platform variant: no band reads the seeds' histories)."""
    platform = {k: str(v) for k, v in record.platform.items()}
    tables = {
        name: {column: [float(x) for x in values] for column, values in table.columns.items()}
        for name, table in record.tables.items()
        if variant.axis == "platform"
    }
    return Fragment(
        variant=variant,
        platform=platform,
        experiment=experiment,
        claims={nodeid: c.outcome for nodeid, c in record.claims.items() if c.outcome != "not run"},
        readings=dict(record.readings),
        tables=tables,
        sentences={nodeid: c.sentence for nodeid, c in record.claims.items()},
    )


class FragmentStore:
    """The fragments under one folder: <folder>/<platform id>/<variant name>.json.gz, of
    the experiment with the fingerprint `experiment`: the others are stale, and count for
    nothing but being listed as such."""

    def __init__(self, folder: Path, experiment: str) -> None:
        self.folder = folder
        self.experiment = experiment

    def path(self, platform: str, variant: str) -> Path:
        return self.folder / platform / f"{variant}{SUFFIX}"

    def has(self, platform: str, variant: str) -> bool:
        """Whether this experiment's fragment of `variant` on `platform` is there."""
        return self._fresh(self.path(platform, variant)) is not None

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

    def _fresh(self, path: Path) -> Fragment | None:
        if not path.exists():
            return None
        fragment = self.read(path)
        return fragment if fragment.experiment == self.experiment else None

    def at_seeds(self, platform: str, variant: str | None) -> Fragment | None:
        """This experiment's fragment of `platform` at the seeds of the seed variant
        `variant` (None: the workshop's own seeds, computed by whichever platform variant
        landed there)."""
        if variant is not None:
            return self._fresh(self.path(platform, variant))
        for path in sorted((self.folder / platform).glob(f"*{SUFFIX}")):
            if "-seed-" in path.name:
                continue  # a seed variant's, by its name: not worth reading to find out
            fragment = self._fresh(path)
            if fragment is not None and fragment.variant.axis == "platform":
                return fragment
        return None

    def paths(self) -> list[Path]:
        """Every fragment's file, fresh or stale, in a fixed order (platform, then variant)."""
        return sorted(self.folder.glob(f"*/*{SUFFIX}"))

    def all(self) -> Iterator[Fragment]:
        """This experiment's fragments, in a fixed order (platform, then variant): merging
        never depends on the order fragments were written in."""
        for path in self.paths():
            fragment = self._fresh(path)
            if fragment is not None:
                yield fragment

    def stale(self) -> list[Path]:
        """The fragments of other experiments (or of none recorded)."""
        return [p for p in self.paths() if self.read(p).experiment != self.experiment]


# -- which experiment a fragment measured ---------------------------------------------------
SHOWN = 12  # hex digits shown to people: enough to tell two experiments apart


def experiment_fingerprint(places: Places) -> str:
    """The fingerprint of the experiment of the project at `places` (see the module)."""
    numbers = {
        str(path.relative_to(places.numbers)): digest(path.read_bytes())
        for path in sorted(places.numbers.rglob("*.csv"))
    }
    return digest(json.dumps({"recipe": recipe(), "numbers": numbers}, sort_keys=True))


def short(fingerprint: str) -> str:
    """How messages name a fingerprint: its first digits, or "unknown" for evidence recorded
    before fragments knew their experiment."""
    return fingerprint[:SHOWN] if fingerprint else "unknown"
