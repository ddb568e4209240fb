"""Fragments: what one variant of the sweep found, kept as evidence.

A fragment is everything the evidence needs from one claims session: the variant (what the
session varied: a platform's kernels, or the seeds), the platform that computed it, every
reading by name, every claim's outcome and key, and for the platform variants the stored
tables (training histories, figure data). Fragments are committed under
snapshots/evidence/fragments/, one folder per platform. The sweep (`claimlog.sweep`) builds them;
the plugin reads them to find whether the evidence holds a platform, and only their fresh
parts count.

**Which computation: a key per claim** (`claimlog.evidence.keys`). A fragment records each
claim's key as its session computed it, and which claim owns each of its readings and
checked each of its tables. Its parts whose claim's key is still the checkout's are fresh
(`Fragment.fresh`); the others are stale, and only they are computed again.

A fragment's bytes depend only on what was computed: the same variant on the same platform
gives the same file (gzip without a timestamp, JSON with sorted keys), so the merged tables
are the same whatever machine, order or number of workers produced the fragments.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from claimlog.evidence.fragility import SeedWords
from claimlog.evidence.keys import claim_of
from claimlog.evidence.record import ClaimOutcome, Record
from claimlog.log.readings import Reading
from claimlog.platform import Platform
from claimlog.store import Entry, Store, digest, replacing

# 4: a key per claim, the owner of each reading and the checkers of each table (3 named one
# fingerprint of the whole experiment: no part of it can be told fresh, so it is stale)
FORMAT = 4
SUFFIX = ".json.gz"
PLATFORM = "platform"


@dataclass(frozen=True)
class Variant:
    """One whole claims session of the sweep: the workshop under other arithmetic (axis
    "platform"), or under another seed of one of its seed axes (bnvg's: another minibatch
    order, "sampler", or other starting weights, "init"). The sweep's catalogue of them is
    `claimlog.sweep.variants`."""

    name: str
    axis: str  # "platform" or a seed axis the workshop declares
    settings: tuple[tuple[str, str], ...] = ()  # kernel variables set for this variant
    threads: int = 1
    native: bool = False  # --native-kernels: the machine's own choice
    seed: int | None = None

    def args(self) -> list[str]:
        """The options of the claims session this variant is."""
        args = [f"--torch-threads={self.threads}"]
        if self.native:
            args.append("--native-kernels")
        if self.axis != PLATFORM:
            args.append(f"--{self.axis}-seed={self.seed}")
        return args

    def describe(self, seeds: SeedWords | None = None) -> str:
        """What the variant is, for people; a seed named in the workshop's words (`seeds`)."""
        if self.axis != PLATFORM:
            one = (seeds or {}).get(self.axis, (self.axis, "", ""))[0]
            return f"{one} {self.seed} ({self.axis} seed)"
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


@dataclass(frozen=True)
class Fragment:
    variant: Variant
    platform: Mapping[str, str]  # as the session recorded it (`Platform.to_json`)
    # node id -> the part of its outcome the evidence reads: what it was and what it verifies
    # (a claim the session only knew as deselected has its sentence and "not run")
    claims: Mapping[str, ClaimOutcome]
    readings: Mapping[str, Reading]
    tables: Mapping[str, Mapping[str, list[float]]]
    keys: Mapping[str, str]  # claim -> its key when this was computed (`claim_keys`)
    owners: Mapping[str, str]  # reading -> the claim that owns its line
    checked_by: Mapping[str, tuple[str, ...]]  # table -> the claims that checked it

    @property
    def platform_id(self) -> str:
        return Platform.from_json(self.platform).id

    @property
    def outcomes(self) -> dict[str, str]:
        """node id -> "passed", "failed" or "skipped", of each claim that ran."""
        return {n: c.outcome for n, c in self.claims.items() if c.ran}

    @property
    def sentences(self) -> dict[str, str]:
        """node id -> what the claim verifies."""
        return {n: c.sentence for n, c in self.claims.items()}

    def fresh(self, current: Mapping[str, str]) -> Fragment:
        """The part of this fragment that is evidence for the claims keyed `current`: each
        claim whose key is unchanged, with its outcome, the readings of the lines it owns and
        the tables it checked (a table is one computation's: one fresh checker is enough)."""
        kept = {c for c, key in self.keys.items() if current.get(c) == key}
        return Fragment(
            variant=self.variant,
            platform=self.platform,
            claims={n: c for n, c in self.claims.items() if claim_of(n) in kept},
            readings={n: r for n, r in self.readings.items() if self.owners.get(n) in kept},
            tables={
                n: t
                for n, t in self.tables.items()
                if any(c in kept for c in self.checked_by.get(n, ()))
            },
            keys={c: self.keys[c] for c in sorted(kept)},
            owners={n: c for n, c in self.owners.items() if c in kept},
            checked_by={
                n: tuple(c for c in by if c in kept)
                for n, by in self.checked_by.items()
                if any(c in kept for c in by)
            },
        )

    def stale(self, current: Mapping[str, str]) -> list[str]:
        """The claims keyed `current` this fragment holds no fresh evidence of: computed
        under another key, or never."""
        return sorted(c for c, key in current.items() if self.keys.get(c) != key)

    def outdated(self, current: Mapping[str, str]) -> list[str]:
        """The claims keyed `current` this fragment computed under another key."""
        return sorted(c for c, key in self.keys.items() if c in current and current[c] != key)

    def updated(self, newer: Fragment) -> Fragment:
        """This fragment with what a later session of the same variant and platform computed
        (only the claims that were stale, say) put in: its parts win."""

        def over(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
            return dict(sorted({**old, **new}.items()))

        return Fragment(
            variant=newer.variant,
            platform=newer.platform,
            # A claim the later session only knew as deselected keeps its outcome from before.
            claims=over(
                self.claims,
                {
                    n: c
                    if c.ran or n not in self.claims
                    else replace(self.claims[n], sentence=c.sentence)
                    for n, c in newer.claims.items()
                },
            ),
            readings=over(self.readings, newer.readings),
            tables=over(self.tables, newer.tables),
            keys=over(self.keys, newer.keys),
            owners=over(self.owners, newer.owners),
            checked_by={
                name: tuple(
                    sorted({*self.checked_by.get(name, ()), *newer.checked_by.get(name, ())})
                )
                for name in sorted({*self.checked_by, *newer.checked_by})
            },
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "variant": self.variant.to_json(),
            "platform": dict(self.platform),
            "claims": self.outcomes,
            "readings": {name: r.to_json() for name, r in self.readings.items()},
            "tables": {name: dict(columns) for name, columns in self.tables.items()},
            "sentences": self.sentences,
            "keys": dict(self.keys),
            "owners": dict(self.owners),
            "checked by": {name: list(by) for name, by in self.checked_by.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Fragment:
        if data.get("format") not in (2, 3, FORMAT):
            raise ValueError(f"a fragment of format {data.get('format')!r}, not {FORMAT}")
        return cls(
            variant=Variant.from_json(data["variant"]),
            platform=data["platform"],
            claims={
                n: _kept(data["claims"].get(n, "not run"), data["sentences"].get(n, ""))
                for n in sorted({*data["claims"], *data["sentences"]})
            },
            readings={name: Reading.from_json(r) for name, r in data["readings"].items()},
            tables=data["tables"],
            # Formats 2 and 3 keyed no claim: nothing of them is fresh.
            keys=data.get("keys", {}),
            owners=data.get("owners", {}),
            checked_by={n: tuple(by) for n, by in data.get("checked by", {}).items()},
        )

    def encode(self) -> bytes:
        text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return gzip.compress(text.encode(), compresslevel=9, mtime=0)


def from_record(variant: Variant, record: Record, keys: Mapping[str, str]) -> Fragment:
    """The fragment of one finished claims session, its claims keyed by `keys` (the
    checkout's `claim_keys`, read before the session ran); its tables only for a platform
    variant: no band reads the seeds' histories."""
    ran = {n: c for n, c in record.claims.items() if c.ran}
    owners = {
        name: claim_of(nodeid)
        for nodeid, c in ran.items()
        for name, reading in record.readings.items()
        if reading.key in c.owns
    }
    checked_by: dict[str, list[str]] = {}
    for nodeid, c in ran.items():
        for name in c.tables:
            checked_by.setdefault(name, []).append(claim_of(nodeid))
    platform_variant = variant.axis == "platform"
    return Fragment(
        variant=variant,
        platform={k: str(v) for k, v in record.platform.items()},
        claims={n: _kept(c.outcome, c.sentence) for n, c in record.claims.items()},
        readings={n: r for n, r in record.readings.items() if n in owners},
        tables={
            name: {column: [float(x) for x in values] for column, values in table.columns.items()}
            for name, table in record.tables.items()
            if platform_variant and name in checked_by
        },
        keys={c: keys[c] for c in sorted({claim_of(n) for n in ran}) if c in keys},
        owners=owners,
        checked_by={n: tuple(sorted(set(by))) for n, by in checked_by.items() if platform_variant},
    )


class FragmentStore:
    """The fragments under one folder: <folder>/<platform id>/<variant name>.json.gz, read as
    evidence for the claims keyed `current` (`claim_keys`): of each, only its fresh part.

    Given `kept` (a store in pytest's cache), every fragment written is also kept there, and
    `restore_kept` puts back what it holds that the folder lacks: the folder is the record,
    which an update that does not complete puts back as it was, and what that update's sweep
    computed is not computed again by the next."""

    def __init__(self, folder: Path, current: Mapping[str, str], kept: Store | None = None) -> None:
        self.folder = folder
        self.current = dict(current)
        self.kept = kept

    def path(self, platform: str, variant: str) -> Path:
        return self.folder / platform / f"{variant}{SUFFIX}"

    def to_compute(self, platform: str, variant: str) -> list[str]:
        """The claims whose evidence of `variant` on `platform` is stale or missing."""
        path = self.path(platform, variant)
        if not path.exists():
            return sorted(self.current)
        return self.read(path).stale(self.current)

    def write(self, fragment: Fragment) -> Path:
        """Put a session's fragment in, over the earlier one's fresh part (a session of the
        stale claims alone adds to what stayed fresh)."""
        platform, variant = fragment.platform_id, fragment.variant.name
        path = self.path(platform, variant)
        if path.exists():
            fragment = self.read(path).fresh(self.current).updated(fragment)
        encoded = fragment.encode()
        with replacing(path) as tmp:
            tmp.write_bytes(encoded)
        if self.kept is not None:
            key = _kept_key(platform, variant)
            with self.kept.lock(key):
                self.kept.put(key, encoded, {"platform": platform, "variant": variant})
        return path

    def rename(self, path: Path, fingerprint: str) -> Path:
        """Name the fragment at `path` by the `fingerprint` its platform gives now: the
        workshop calls other kernels since it was computed, and the fingerprint replays them
        (`claimlog.sweep.updating.rename_platforms`). Written whole under its new platform,
        fresh and stale parts alone, and removed where it was; returns where it is now.
        pytest's cache keeps it under its old name: the update that renames it may yet roll
        back, and the next then finds there what its sweep computed (`restore_kept`)."""
        fragment = self.read(path)
        renamed = replace(fragment, platform={**fragment.platform, "fingerprint": fingerprint})
        target = self.path(renamed.platform_id, renamed.variant.name)
        with replacing(target) as tmp:
            tmp.write_bytes(renamed.encode())
        if target != path:
            path.unlink()
        return target

    def drop_empty_platforms(self) -> None:
        """Remove each platform's folder that no fragment is left in."""
        for folder in sorted(self.folder.iterdir()) if self.folder.is_dir() else ():
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()

    def restore_kept(self, new_reference: Mapping[str, Any] | None = None) -> list[Path]:
        """Bring each fragment of the folder up to what `kept` holds of it: the claims it
        holds stale there and fresh here (an earlier update's sweep computed them, and that
        update did not complete). A fragment the folder lacks is not added, what the evidence
        covers being the sweep's to decide; but under an update that records a new reference
        (`new_reference`, its identity), one of a variant the folder holds elsewhere is, if
        the same torch and numpy computed it on the same machine (that update computed the
        reference's own variants there). Returns the fragments brought up to date."""
        restored = []
        held = self.variants() if new_reference is not None else set()
        for key in self.kept.keys() if self.kept is not None else []:
            assert self.kept is not None
            entry = self.kept.get(key)
            if not isinstance(entry, Entry):
                continue  # damaged: computed again, as if never kept
            platform, variant = str(entry.about["platform"]), str(entry.about["variant"])
            path = self.path(platform, variant)
            try:
                fresh = Fragment.from_json(json.loads(gzip.decompress(entry.content))).fresh(
                    self.current
                )
            except (ValueError, KeyError, TypeError, EOFError, OSError):
                continue
            software = ("machine", "torch", "numpy", "numpy simd")
            ours = new_reference is not None and all(
                fresh.platform.get(k) == new_reference.get(k) for k in software
            )
            if not path.exists() and not (ours and variant in held):
                continue
            if set(fresh.keys) & set(self.to_compute(platform, variant)):
                self.write(fresh)
                restored.append(path)
        return restored

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
        fragment = self.read(path).fresh(self.current)
        return fragment if fragment.keys else None

    def at_seeds(self, platform: str, variant: str | None) -> Fragment | None:
        """The fresh part of `platform`'s fragment at the seeds of the seed variant `variant`
        (None: the workshop's own seeds, computed by whichever platform variant landed
        there)."""
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

    def variants(self) -> set[str]:
        """The name of each variant some platform's fragment holds, fresh or stale."""
        return {path.name.removesuffix(SUFFIX) for path in self.paths()}

    def all(self) -> Iterator[Fragment]:
        """The fresh part of every fragment that has one, in a fixed order (platform, then
        variant): merging never depends on the order fragments were written in."""
        for path in self.paths():
            fragment = self._fresh(path)
            if fragment is not None:
                yield fragment

    def stale(self) -> list[Path]:
        """The fragments with nothing fresh in them."""
        return [p for p in self.paths() if not self.read(p).fresh(self.current).keys]

    def unknown_platforms(self) -> list[Path]:
        """The fragments of a platform not known by what it computes: measured before
        platforms carried the fingerprint of their kernels (`Platform.fingerprint`), so no
        platform of today can be said to be theirs, or not."""
        return [p for p in self.paths() if not self.read(p).platform.get("fingerprint")]

    def stale_claims(self) -> dict[str, int]:
        """Each claim that some fragment computed under another key than its current one,
        with how many fragments."""
        count: dict[str, int] = {}
        for path in self.paths():
            for claim in self.read(path).outdated(self.current):
                count[claim] = count.get(claim, 0) + 1
        return dict(sorted(count.items()))


def _kept_key(platform: str, variant: str) -> str:
    """The key a fragment is kept under in pytest's cache: one entry per platform and
    variant, the latest written."""
    return digest("fragment", platform, variant)


def _kept(outcome: str, sentence: str) -> ClaimOutcome:
    """The part of a claim's outcome a fragment keeps: what it was and what it verifies."""
    return ClaimOutcome.from_json({"outcome": outcome, "sentence": sentence})
