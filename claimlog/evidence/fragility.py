"""What the evidence says of each reading: two questions, asked apart.

The sweep (`claimlog.sweep`) runs the claims on other platforms (the reference kernels with one
setting varied, each machine's own kernels, other torch releases, arm64) and under other
minibatch-sampler and init seeds, and records every reading of every variant; its merge
(`claimlog.sweep.merge`) builds this table from those records, with the published log shown
beside as an observation. Per reading it answers two questions that never mix:

- **What does the line print? Platforms decide** (`ReadingEvidence.platform_verdict`).
  **robust**: every platform of the evidence prints it alike. **fragile**: some platform
  prints it otherwise; its prints by platform are kept (`prints_by_platform`). On a platform
  new to the evidence any reading's moving is drift while its evidence is fresh
  (`claimlog.evidence.verdicts`); a citation's value must be what some platform prints
  (`claimlog.text.citations`). A fragile reading's *band* (the range its value took
  over the platforms, widened by half its width on each side and clipped to its kind's
  domain) is shown for people; no verdict reads it.
- **How general is the sentence? Seeds say** (`ReadingEvidence.generality`). Another
  minibatch order or other starting weights is another experiment, not another platform:
  per seed axis, in how many runs the claim's bound held, each run judged by its own numbers,
  as k of N with Wilson's 95% score interval (`Rate`), which stays inside 0..1 and is honest
  for small N and for k = 0 or k = N: "at least 90 in 16 of 33 minibatch orders (95% interval
  0.32 to 0.65)". Seeds never enter a verdict and never excuse a quoted value.

One platform question concerns a claim's bound rather than a print: whether the bound holds
on some platforms and not on others (`holds_on_some_platforms_only`: layer norm's 90% bar).
Such a statement is platform-dependent, so no fixed value of it may be quoted.

A torch release is a platform too: the workshop under the reference kernels on another
torch (`nox -s torch-<release>`). Its runs are marked as such (axis "release"), so a reading
that moves only between releases is told apart from one that moves between CPUs and kernels
(`moves_with`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from claimlog.log.readings import Bound, Quantity, Value, kind_named

PUBLISHED = "published"
# A workshop's words for its seed axes (`Declaration.seeds`): {axis: (one, many, counted)}.
SeedWords = Mapping[str, tuple[str, str, str]]
# The platform verdict: every platform prints the reading alike, or not.
ROBUST, FRAGILE = "robust", "fragile"


@dataclass(frozen=True)
class Seen:
    """One run's value of a reading: at full precision (the published log has only its
    print), as printed, and whether the claim's bound held in that run, judged there with
    that run's own numbers (a bound like "5x the plain net's ratio" moves with the seed)."""

    value: Value
    printed: str
    holds: bool | None = None  # None: no bound (or the published log, which states none)
    axis: str = "platform"  # "platform", "release", "sampler" or "init": what this run varied

    def as_float(self) -> float:
        return math.nan if self.value is None else float(self.value)


@dataclass(frozen=True)
class ReadingEvidence:
    """Everything the sweep saw of one reading."""

    name: str
    line: int
    kind: str
    label: str
    spec: str  # how the log prints it (see `claimlog.log.readings.Quantity`)
    position: int  # its place among its line's readings
    reference: Seen
    platforms: Mapping[str, Seen]  # the workshop (seed 0) on the other platforms and releases
    seeds: Mapping[str, Seen]  # other minibatch orders and starting weights
    bound: Bound | None = None
    sometimes: bool = False
    band: tuple[float, float] | None = None
    reference_platform: str = ""  # the id of the platform `reference` was computed on
    published: Seen | None = None  # the published log: an observation, shown beside, never counted
    claim: str = ""  # the claim that owns its line, whose key its evidence is of
    # The workshop's words for its seed axes (`Declaration.seeds`), given as the table is
    # loaded: "16 of 33 minibatch orders" rather than "16 of 33 sampler".
    words: SeedWords = field(default_factory=dict, compare=False)

    @property
    def moved_in_print(self) -> bool:
        return any(s.printed != self.reference.printed for s in self.platforms.values())

    @property
    def platform_verdict(self) -> str:
        """ROBUST (every platform of the evidence prints it alike) or FRAGILE: the one answer
        to "what does its line print", read by verdicts and citations. Seeds never enter it."""
        return FRAGILE if self.moved_in_print else ROBUST

    def prints_by_platform(self) -> dict[str, str]:
        """What each platform of the evidence prints, at the workshop's seeds, by platform
        id (the reference first)."""
        out = {self.reference_platform or "the reference": self.reference.printed}
        return out | {name.split("/")[0]: seen.printed for name, seen in self.platforms.items()}

    def describe_prints(self) -> str:
        """ "every platform prints step 50", or "the platforms print 69.5 or 71.5"."""
        printed = sorted(set(self.prints_by_platform().values()))
        if len(printed) == 1:
            return f"every platform prints {printed[0]}"
        return "the platforms print " + " or ".join(printed)

    @property
    def moves_with(self) -> tuple[str, ...]:
        """What moves its print at the workshop's seeds: "platform" (another CPU, other
        kernels or threads, on the reference's torch), "release" (another torch release
        under the reference kernels), both, or nothing."""
        moved = {s.axis for s in self.platforms.values() if s.printed != self.reference.printed}
        return tuple(axis for axis in ("platform", "release") if axis in moved)

    @property
    def holds_on_some_platforms_only(self) -> bool:
        """Whether its claim's bound holds on some platforms and not on others, at the
        workshop's own seeds: a platform-dependent statement, of which no fixed value is
        true everywhere."""
        seen = [self.reference, *self.platforms.values()]
        return len({s.holds for s in seen if s.holds is not None}) > 1

    def on_platform(self, platform: str) -> Seen | None:
        """Its value on the platform with that id, at the workshop's seeds, if the sweep has
        it there (the reference's entry is named "<platform>/workshop")."""
        if self.reference_platform == platform:
            return self.reference
        return next((s for n, s in self.platforms.items() if n.split("/")[0] == platform), None)

    def at_seeds(self, platform: str, variant: str | None) -> Seen | None:
        """Its value on the platform with that id under a seed variant ("sampler-seed-5";
        None: the workshop's seeds), if the sweep ran it there. The sweep runs the seeds on
        the reference platform only."""
        if variant is None:
            return self.on_platform(platform)
        if platform != self.reference_platform:
            return None
        return self.seeds.get(variant)

    def holds_in(self, group: str) -> tuple[int, int] | None:
        """(k, n): in how many runs of `group`, the reference (seed 0) included, the claim's
        bound held, each run judged by its own numbers; None without a bound. `group`:
        "platforms" (torch releases included), "seeds" (both seed axes), or one axis,
        "release", "sampler" or "init"."""
        if self.bound is None:
            return None
        if group == "platforms":
            others = list(self.platforms.values())
        elif group == "release":
            others = [s for s in self.platforms.values() if s.axis == "release"]
        elif group == "seeds":
            others = list(self.seeds.values())
        else:
            others = [s for s in self.seeds.values() if s.axis == group]
        seen = [s for s in (self.reference, *others) if s.holds is not None]
        return sum(bool(s.holds) for s in seen), len(seen)

    def over_seeds(self) -> tuple[float, float, float] | None:
        """(min, median, max) over the seeds, the reference included."""
        values = [s.as_float() for s in [self.reference, *self.seeds.values()]]
        finite = [v for v in values if not math.isnan(v)]
        if not finite:
            return None
        return min(finite), statistics.median(finite), max(finite)

    def printed(self, value: float) -> str:
        """A value as the log would print this reading."""
        kind = kind_named(self.kind)
        whole = kind.integer and float(value).is_integer()
        return Quantity(self.label, kind, self.spec).print(int(value) if whole else value)

    def generality(self, seeds: SeedWords | None = None) -> list[tuple[str, Rate]]:
        """How general its claim's bound is: per seed axis with more than one run, in how
        many it held, named in the workshop's words (`seeds`, else those the table was loaded
        with): [("minibatch orders", Rate(16, 33)), ("starting weights", ...)]."""
        words = seeds or self.words
        here = dict.fromkeys(seen.axis for seen in self.seeds.values())
        out = []
        for axis in [*(a for a in words if a in here), *(a for a in here if a not in words)]:
            counts = self.holds_in(axis)
            if counts and counts[1] > 1:
                out.append((words[axis][1] if axis in words else axis, Rate(*counts)))
        return out

    @property
    def general(self) -> bool:
        """Whether its bound held in every seed the sweep ran (True without a bound)."""
        return all(rate.always for _, rate in self.generality())

    def on_how_many_platforms(self) -> Rate | None:
        """On how many platforms (the reference included) its bound held, at the workshop's
        seeds: a platform fact, told apart from generality."""
        counts = self.holds_in("platforms")
        return None if counts is None or counts[1] < 2 else Rate(*counts)

    def what_holds(self, seeds: SeedWords | None = None) -> str:
        """What a text can honestly say of its bound: how general it is over the seeds, and,
        apart, on how many platforms it holds."""
        said = [f"{self.bound} in {r.k} of {r.n} {what}" for what, r in self.generality(seeds)]
        platforms = self.on_how_many_platforms()
        if platforms is not None and not platforms.always:
            said.append(f"{self.bound} on {platforms.k} of {platforms.n} platforms")
        return "; ".join(said)


@dataclass(frozen=True)
class Fragility:
    """The committed sweep table."""

    readings: Mapping[str, ReadingEvidence] = field(default_factory=dict)
    variants: Mapping[str, str] = field(default_factory=dict)  # name -> what it is, for people
    reference: str = ""
    axes: Mapping[str, str] = field(default_factory=dict)  # name -> "platform", "sampler", ...
    releases: Mapping[str, str] = field(default_factory=dict)  # "2.15.0" -> its run's name
    reference_release: str = ""  # the reference's torch release, "2.13.0"
    # The runs on another architecture than the reference's, labelled:
    # run name -> "aarch64, Arm Neoverse-N1, emulated".
    architectures: Mapping[str, str] = field(default_factory=dict)
    # Each claim's key when its evidence was computed (`claimlog.evidence.keys.claim_keys`).
    keys: Mapping[str, str] = field(default_factory=dict)
    # The readings `fresh` took out: their evidence is of other code than the checkout's.
    stale: frozenset[str] = frozenset()

    def reading(self, name: str) -> ReadingEvidence | None:
        return self.readings.get(name)

    def fresh(self, current: Mapping[str, str]) -> Fragility:
        """The table without the readings of the claims whose key is no longer `current`'s:
        evidence of another computation is no evidence for this one."""
        stale = set(self.stale_claims(current))
        if not stale:
            return self
        kept = {n: e for n, e in self.readings.items() if e.claim not in stale}
        return dataclasses.replace(self, readings=kept, stale=frozenset(self.readings) - set(kept))

    def stale_claims(self, current: Mapping[str, str]) -> list[str]:
        """The claims the table holds evidence of that is stale for the claims keyed
        `current`: each measured under another key (a claim it never measured has none)."""
        return sorted(c for c, key in self.keys.items() if c in current and current[c] != key)

    def stale_readings(self, current: Mapping[str, str]) -> list[str]:
        stale = set(self.stale_claims(current))
        return sorted(n for n, e in self.readings.items() if e.claim in stale)

    def on_release(self, evidence: ReadingEvidence, release: str) -> Seen | None:
        """A reading's value on a torch release ("2.15.0") under the reference kernels."""
        if release == self.reference_release:
            return evidence.reference
        name = self.releases.get(release)
        return None if name is None else evidence.platforms.get(name)

    def on_axis(self, axis: str) -> list[str]:
        """The variants of one axis ("platform", "release", "sampler", "init" or "published"),
        the reference not included."""
        return [name for name in self.variants if self.axes.get(name) == axis]


EMPTY = Fragility()


def listed(parts: Sequence[str]) -> str:
    """How people list the axes and counts of the evidence: "a", "a and b", "a, b and c"."""
    return " and ".join([", ".join(parts[:-1]), parts[-1]] if len(parts) > 1 else parts)


def _seen(data: Mapping[str, Any]) -> Seen:
    return Seen(data["value"], data["printed"], data.get("holds"), data.get("axis", "platform"))


def from_document(document: Mapping[str, Any], words: SeedWords | None = None) -> Fragility:
    """The table a document (fragility.json) holds; its seed axes named with `words`."""
    readings = {}
    for name, entry in document["readings"].items():
        bound = entry.get("bound")
        band = entry.get("band")
        readings[name] = ReadingEvidence(
            name=name,
            line=int(entry["line"]),
            kind=str(entry["kind"]),
            label=str(entry["label"]),
            spec=str(entry["spec"]),
            position=int(entry["position"]),
            reference=_seen(entry["reference"]),
            platforms={k: _seen(v) for k, v in entry["platforms"].items()},
            seeds={k: _seen(v) for k, v in entry["seeds"].items()},
            bound=None if bound is None else Bound(*bound),
            sometimes=bool(entry.get("sometimes", False)),
            band=None if band is None else (float(band[0]), float(band[1])),
            reference_platform=str(document.get("reference", "")).split("/")[0],
            published=None if entry.get("published") is None else _seen(entry["published"]),
            claim=str(entry.get("claim", "")),
            words=words or {},
        )
    return Fragility(
        readings,
        document.get("variants", {}),
        document.get("reference", ""),
        document.get("axes", {}),
        document.get("releases", {}),
        str(document.get("reference release", "")),
        document.get("architectures", {}),
        document.get("keys", {}),
    )


def load(
    path: Path, rebuild: str = "python -m claimlog.sweep", words: SeedWords | None = None
) -> Fragility:
    """The committed table; without one every reading is robust. A damaged one is refused,
    saying the command that `rebuild`s it (the workshop's sweep); `words` name its seed axes."""
    if not path.exists():
        return EMPTY
    try:
        return from_document(json.loads(path.read_text()), words)
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(
            f"{path} is damaged ({type(error).__name__}: {error}); restore it from git or "
            f"rebuild it with the sweep: {rebuild}"
        ) from None


# -- how often a bound holds, and the order of releases ----------------------------------------
Z95 = 1.959963984540054  # the 97.5th percentile of the standard normal


@dataclass(frozen=True)
class Rate:
    """k of n, with its 95% Wilson interval."""

    k: int
    n: int

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.k, self.n)

    @property
    def always(self) -> bool:
        return self.k == self.n

    def __str__(self) -> str:
        lo, hi = self.interval
        return f"{self.k} of {self.n} (95% interval {lo:.2f} to {hi:.2f})"


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval for k successes in n trials."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def version_key(version: str) -> tuple[bool, Version | str]:
    """Releases in the order they came out, as pip orders them (PEP 440): "2.13.0rc1" before
    "2.13.0", "2.9.1" before "2.13.0". A name that is no version sorts first, by itself."""
    try:
        return True, Version(version)
    except InvalidVersion:
        return False, version
