"""Fragments: what one variant of the sweep found, kept as evidence.

A fragment is everything the evidence needs from one claims session: the variant (what the
session varied: a platform's kernels, or the seeds), the platform that computed it, every
reading by name, every claim's outcome and key, and for the platform variants the stored
tables (training histories, figure data). Fragments are committed under
snapshots/evidence/fragments/, one folder per platform. The sweep (`claimlog.sweep`) builds them;
the plugin reads them to find whether the evidence holds a platform, and only their fresh
parts count.

**Which computation: a key per claim.** Evidence of another computation is no evidence for this
one: after the recipe's `steps` go from 4000 to 3000, the old fragments' 0.0079 is no value any
platform prints for this workshop. So every claim has a key (`claim_keys`): the digest of the
code it executes, sliced by definition (`claimlog.slicing.code_key`): its own function, the
fixtures it requests, and every function, class and recipe constant of the experiment, the log
and the figures' data that they reach, each by its parsed code; and, for a claim that reads
what the workshop declares beyond its code (`Declaration.key_parts`: for bnvg's trained runs,
the code that trains one and every run's spec). A fragment records each claim's key as its
session computed it, and which claim owns each of its readings and checked each of its tables.
Its parts whose claim's key is still the checkout's are fresh (`Fragment.fresh`); the others
are stale, and only they are computed again. An edit of S2's `CHECK_LOGIT` changes the key of
the one claim whose code reads it, so every other reading keeps its evidence on every platform
and seed; an edit of one claim's bound makes that claim alone stale. A key is the same on every
platform and at every seed: what computed a fragment is its platform and its variant, beside
it.

A fragment's bytes depend only on what was computed: the same variant on the same platform
gives the same file (gzip without a timestamp, JSON with sorted keys), so the merged tables
are the same whatever machine, order or number of workers produced the fragments.
"""

from __future__ import annotations

import ast
import gzip
import importlib.util
import inspect
import json
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from claimlog.declaration import Declaration, KeyPart
from claimlog.evidence.fragility import SeedWords
from claimlog.evidence.record import Record
from claimlog.log.readings import Reading
from claimlog.places import Places
from claimlog.platform import Platform
from claimlog.slicing import code_key, code_keys_at, module_name
from claimlog.store import Memo, Store, digest, python_files, replacing, source_digest

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

    def env(self) -> dict[str, str]:
        return dict(self.settings)

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


def seed_variant_name(seeds: Mapping[str, int | None]) -> str | None:
    """The name of the seed variant a session with these seeds ({axis: K or None}) is: None
    for the workshop's own seeds, "sampler-seed-5" for one; a session with two set is no
    variant of the sweep ("sampler-seed-5+init-seed-2")."""
    given = [f"{axis}-seed-{seed}" for axis, seed in seeds.items() if seed is not None]
    return "+".join(given) or None


def claim_of(nodeid: str) -> str:
    """The claim a test id is of, without its parameters: a key is per claim function (its
    parameters are in its code)."""
    return nodeid.split("[", 1)[0]


@dataclass(frozen=True)
class Fragment:
    variant: Variant
    platform: Mapping[str, str]  # as the session recorded it (`Platform.to_json`)
    claims: Mapping[str, str]  # node id -> "passed" / "failed" / "skipped"
    readings: Mapping[str, Reading]
    tables: Mapping[str, Mapping[str, list[float]]]
    sentences: Mapping[str, str]  # node id -> what the claim verifies
    keys: Mapping[str, str]  # claim -> its key when this was computed (`claim_keys`)
    owners: Mapping[str, str]  # reading -> the claim that owns its line
    checked_by: Mapping[str, tuple[str, ...]]  # table -> the claims that checked it

    @property
    def platform_id(self) -> str:
        return Platform.from_json(self.platform).id

    def fresh(self, current: Mapping[str, str]) -> Fragment:
        """The part of this fragment that is evidence for the claims keyed `current`: each
        claim whose key is unchanged, with its outcome, the readings of the lines it owns and
        the tables it checked (a table is one computation's: one fresh checker is enough)."""
        kept = {c for c, key in self.keys.items() if current.get(c) == key}
        return Fragment(
            variant=self.variant,
            platform=self.platform,
            claims={n: o for n, o in self.claims.items() if claim_of(n) in kept},
            readings={n: r for n, r in self.readings.items() if self.owners.get(n) in kept},
            tables={
                n: t
                for n, t in self.tables.items()
                if any(c in kept for c in self.checked_by.get(n, ()))
            },
            sentences={n: s for n, s in self.sentences.items() if claim_of(n) in kept},
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
            claims=over(self.claims, newer.claims),
            readings=over(self.readings, newer.readings),
            tables=over(self.tables, newer.tables),
            sentences=over(self.sentences, newer.sentences),
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
            "claims": dict(self.claims),
            "readings": {name: r.to_json() for name, r in self.readings.items()},
            "tables": {name: dict(columns) for name, columns in self.tables.items()},
            "sentences": dict(self.sentences),
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
            claims=data["claims"],
            readings={name: Reading.from_json(r) for name, r in data["readings"].items()},
            tables=data["tables"],
            sentences=data["sentences"],
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
    ran = {n: c for n, c in record.claims.items() if c.outcome != "not run"}
    owners = {
        name: claim_of(nodeid)
        for nodeid, c in ran.items()
        for name, reading in record.readings.items()
        if reading.key in c.lines
    }
    checked_by: dict[str, list[str]] = {}
    for nodeid, c in ran.items():
        for name in c.tables:
            checked_by.setdefault(name, []).append(claim_of(nodeid))
    platform_variant = variant.axis == "platform"
    return Fragment(
        variant=variant,
        platform={k: str(v) for k, v in record.platform.items()},
        claims={nodeid: c.outcome for nodeid, c in ran.items()},
        readings={n: r for n, r in record.readings.items() if n in owners},
        tables={
            name: {column: [float(x) for x in values] for column, values in table.columns.items()}
            for name, table in record.tables.items()
            if platform_variant and name in checked_by
        },
        sentences={nodeid: c.sentence for nodeid, c in record.claims.items()},
        keys={c: keys[c] for c in sorted({claim_of(n) for n in ran}) if c in keys},
        owners=owners,
        checked_by={n: tuple(sorted(set(by))) for n, by in checked_by.items() if platform_variant},
    )


class FragmentStore:
    """The fragments under one folder: <folder>/<platform id>/<variant name>.json.gz, read as
    evidence for the claims keyed `current` (`claim_keys`): of each, only its fresh part."""

    def __init__(self, folder: Path, current: Mapping[str, str]) -> None:
        self.folder = folder
        self.current = dict(current)

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
        path = self.path(fragment.platform_id, fragment.variant.name)
        if path.exists():
            fragment = self.read(path).fresh(self.current).updated(fragment)
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

    def stale_claims(self) -> dict[str, int]:
        """Each claim that some fragment computed under another key than its current one,
        with how many fragments."""
        count: dict[str, int] = {}
        for path in self.paths():
            for claim in self.read(path).outdated(self.current):
                count[claim] = count.get(claim, 0) + 1
        return dict(sorted(count.items()))


# -- each claim's key -----------------------------------------------------------------------
SHOWN = 12  # hex digits shown to people: enough to tell two keys apart
# The engine's own code a claim's key reaches: what its bounds mean (`about`, `below`).
READINGS = Path(__file__).resolve().parent.parent / "log" / "readings.py"


def claim_keys(places: Places, workshop: Declaration, kept: Store | None = None) -> dict[str, str]:
    """Each claim of `workshop`, the project at `places` ("claims/test_s2_....py::test_x"),
    but those marked `evidence` (which read the sweep's tables and are no evidence), with its
    key (see the module): read from the source, without importing a claim or torch; once per
    process while no file it reads changes, and, given a store (`kept`: in pytest's cache),
    once for all processes while no file it reads (nor the slicing itself) changes.

    Where the code is sliced is the workshop's to say (`Declaration.computing`): its
    experiment, how its results become readings, what a figure plots. The slice stops at the
    engine (which checks numbers and never computes them) but for what a bound means, and at
    whatever else the workshop leaves out (bnvg leaves out its layout: it builds every line
    at once, and through it every claim would read S2's CHECK_LOGIT)."""
    claims = places.root / "claims"
    plugins = _plugin_files(workshop.plugins)
    roots = (*workshop.computing, *workshop.quoting, READINGS, claims)
    files = sorted({*claims.glob("*.py"), *plugins, *python_files(roots)})
    state = tuple((str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in files)
    parts = tuple(sorted(workshop.key_parts.items()))
    training = _training_code(workshop.training)
    if kept is None:
        return dict(_claim_keys(claims, roots, plugins, state, parts, training))

    # Slicing costs about half a second a process; reading what it reads costs milliseconds.
    # The keys depend on the files' contents and module names alone, not where they lie: a
    # scratch copy of the project finds them too. So does the digest of what is sliced (by
    # name and content) and how: the engine's slicing code, and the Python that parses it
    # (the keys are the same from 3.11 on, but a new Python's parser may read code anew).
    def as_sliced(file: Path) -> list[str]:
        return [module_name(file), digest(file.read_bytes())]

    sliced = {
        "files": sorted(as_sliced(f) for f in files),
        "declared": [
            [name, *as_sliced(made[0]), made[1]] if isinstance(made, tuple) else [name, made]
            for name, declare in parts
            for made in declare()
        ],
        "training": [[*as_sliced(file), qualname] for file, qualname in training],
        "slicing": source_digest([Path(__file__), Path(inspect.getfile(code_key))]),
        "python": sys.version,
    }
    inputs = digest(json.dumps(sliced))
    found: dict[str, str] | None = Memo(kept, "claim keys").get(
        "claim keys",
        inputs,
        lambda: dict(_claim_keys(claims, roots, plugins, state, parts, training)),
        encode=lambda keys: json.dumps(keys, sort_keys=True).encode(),
        decode=lambda entry: json.loads(entry.content),
    )
    assert found is not None  # waiting for the lock always gives the keys
    return found


# The engine's fixture that hands a claim its trained runs (`claimlog.plugin.fixtures.runs`).
RUNS_FIXTURE = "runs"


def _training_code(training: Callable[[], Any] | None) -> tuple[tuple[Path, str], ...]:
    """Where the workshop's `Training` is defined: every claim that reads runs reaches it, and
    through it the training and the data (read without importing torch)."""
    if training is None:
        return ()
    kind = type(training())
    return ((Path(inspect.getfile(kind)).resolve(), kind.__qualname__),)


def _plugin_files(modules: Sequence[str]) -> tuple[Path, ...]:
    """The files of the workshop's plugin modules, found without importing them."""
    found = []
    for module in modules:
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.origin:
            raise ValueError(f"the workshop's plugin {module!r} is not importable")
        found.append(Path(spec.origin).resolve())
    return tuple(found)


@cache
def _claim_keys(
    claims: Path,
    roots: tuple[Path, ...],
    plugins: tuple[Path, ...],
    state: tuple[tuple[str, int, int], ...],
    declared_parts: tuple[tuple[str, Callable[[], Sequence[KeyPart]]], ...],
    training: tuple[tuple[Path, str], ...],
) -> tuple[tuple[str, str], ...]:
    key_parts = dict(declared_parts)
    fixtures = {name: path for path in plugins for name in _fixtures(path)}
    # Each claim: its own definition, then its fixtures', then what they declare beyond it.
    wanted: dict[str, list[KeyPart]] = {}
    for module in sorted(claims.glob("test_*.py")):
        tree = ast.parse(module.read_text())
        # A claims module's own fixtures come first, as pytest finds them (S9's `eval_bug`).
        here = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef) and _is_fixture(n)}
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef) or not node.name.startswith("test"):
                continue
            if any(_is_mark(d, "evidence") for d in node.decorator_list):
                continue
            parts: list[KeyPart] = [(module, node.name)]
            # Every fixture it requests, and those its module's own fixtures request in turn.
            # Not those the workshop's plugin fixtures request: a fixture that asks for the
            # trained runs would make every claim read the training; what a fixture depends on
            # beyond its code it declares (`key_parts`: bnvg's for claimlog's `runs`).
            pending, seen = [a.arg for a in node.args.args], set()
            while pending:
                name = pending.pop()
                if name in seen:
                    continue
                seen.add(name)
                if name in here:
                    parts.append((module, name))
                    pending += [a.arg for a in here[name].args.args]
                elif name in fixtures:
                    parts.append((fixtures[name], name))
            if RUNS_FIXTURE in seen:  # the workshop's Training, and what it reaches
                parts += training
            for name in sorted(seen & key_parts.keys()):  # what a fixture declares beyond it
                parts += key_parts[name]()
            wanted[f"claims/{module.name}::{node.name}"] = parts
    definitions = sorted({p for parts in wanted.values() for p in parts if isinstance(p, tuple)})
    keyed = dict(zip(definitions, code_keys_at(definitions, roots), strict=True))
    return tuple(
        (claim, digest(*(keyed[p] if isinstance(p, tuple) else p for p in parts)))
        for claim, parts in wanted.items()
    )


@cache
def _fixtures(plugin: Path) -> frozenset[str]:
    """The names of the fixtures a plugin module defines."""
    tree = ast.parse(plugin.read_text())
    return frozenset(n.name for n in tree.body if isinstance(n, ast.FunctionDef) and _is_fixture(n))


def _is_fixture(node: ast.FunctionDef) -> bool:
    return any("fixture" in ast.unparse(d) for d in node.decorator_list)


def _is_mark(decorator: ast.expr, name: str) -> bool:
    """Whether a decorator is `@pytest.mark.<name>` (called or not)."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return isinstance(target, ast.Attribute) and target.attr == name


def short(key: str) -> str:
    """How messages name a key: its first digits, or "unknown"."""
    return key[:SHOWN] if key else "unknown"
