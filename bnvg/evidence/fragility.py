"""Which readings travel between machines, how far the others move, and which are luck.

The sweep (`sweep/`) runs the claims under rounding variants of one machine (every torch CPU
capability it supports, with one and two threads) and under other minibatch-sampler seeds,
and records every reading of every variant. `build_document` merges those records, with the
published log as one more platform, into this table, reading by reading:

- **robust**: printed the same on every platform. A change in print is a failure.
- **fragile**: printed differently on some platform. It gets a *band*: the range its
  full-precision value took over the platforms, widened by half its width on each side and
  clipped to its kind's domain (no accuracy above 100%). Inside the band but printed
  differently from the snapshot is *drift* (reported, not failed, unless --strict-numbers).
- **unstable**: its claim's bound (say "final test accuracy at least 90") holds for some
  platforms or seeds and not for others. The log still prints it, but a fixed value of it is
  luck of the draw: its claim states how often it holds, and a citation that quotes it as a
  fixed number fails (`bnvg.evidence.citations`).

Seed variants never make a reading fragile (another seed is another experiment, not another
machine); they decide, with the platforms, whether it is stable. For the tables (training
histories, figure data) the sweep measures, per column, how far any platform moved from the
reference at each row, and allows one and a half times that there.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bnvg.evidence.tables import ROUNDING, Tolerance
from bnvg.log.layout import line_named
from bnvg.log.readings import Bound, Quantity, Reading, Value, kind_named

PUBLISHED = "published"


@dataclass(frozen=True)
class Seen:
    """One variant's value of a reading: at full precision (the published log has only its
    print), and as printed."""

    value: Value
    printed: str

    def as_float(self) -> float:
        return math.nan if self.value is None else float(self.value)


@dataclass(frozen=True)
class ReadingEvidence:
    """Everything the sweep saw of one reading."""

    name: str
    line: int
    kind: str
    label: str
    spec: str  # how the log prints it (see `bnvg.log.readings.Quantity`)
    position: int  # its place among its line's readings
    reference: Seen
    platforms: Mapping[str, Seen]  # the other rounding variants, and the published log
    seeds: Mapping[str, Seen]  # other minibatch orders on the reference platform
    bound: Bound | None = None
    sometimes: bool = False
    band: tuple[float, float] | None = None

    @property
    def moved_in_print(self) -> bool:
        return any(s.printed != self.reference.printed for s in self.platforms.values())

    @property
    def unstable(self) -> bool:
        if self.bound is None:
            return False
        verdicts = {self.bound.holds(s.value) for s in self._all()}
        return len(verdicts) > 1

    @property
    def status(self) -> str:
        if self.unstable:
            return "unstable"
        return "fragile" if self.moved_in_print else "robust"

    def _all(self) -> list[Seen]:
        return [self.reference, *self.platforms.values(), *self.seeds.values()]

    def in_band(self, value: Value) -> bool:
        if self.band is None:
            return False
        if value is None:  # "never": in the band only if some platform never got there either
            return any(s.value is None for s in self.platforms.values())
        return self.band[0] <= float(value) <= self.band[1]

    def holds_in(self, group: str) -> tuple[int, int] | None:
        """(k, n): how many of the `group` variants, the reference included, satisfy the
        claim's bound; None without a bound. `group`: "platforms", "seeds" (both axes),
        "sampler" or "init" (one axis)."""
        if self.bound is None:
            return None
        if group == "platforms":
            others = list(self.platforms.values())
        else:
            prefix = "" if group == "seeds" else f"{group}-"
            others = [s for name, s in self.seeds.items() if name.startswith(prefix)]
        seen = [self.reference, *others]
        return sum(self.bound.holds(s.value) for s in seen), len(seen)

    def over_seeds(self) -> tuple[float, float, float] | None:
        """(min, median, max) over the seeds, the reference included."""
        values = [s.as_float() for s in [self.reference, *self.seeds.values()]]
        finite = [v for v in values if not math.isnan(v)]
        if not finite:
            return None
        return min(finite), statistics.median(finite), max(finite)

    def range_seen(self) -> tuple[float, float] | None:
        finite = [v for v in (s.as_float() for s in self._all()) if not math.isnan(v)]
        return (min(finite), max(finite)) if finite else None

    def printed(self, value: float) -> str:
        """A value as the log would print this reading."""
        kind = kind_named(self.kind)
        whole = kind.integer and float(value).is_integer()
        return Quantity(self.label, kind, self.spec).print(int(value) if whole else value)

    def what_holds(self) -> str:
        """What a text can honestly say of an unstable reading, from the evidence."""
        if self.bound is None:
            return ""
        said = []
        groups = (("sampler", "minibatch orders"), ("init", "starting weights"))
        for group, what in (*groups, ("platforms", "platforms")):
            counts = self.holds_in(group)
            if counts and counts[1] > 1:
                said.append(f"{self.bound} in {counts[0]} of {counts[1]} {what}")
        return "; ".join(said)


@dataclass(frozen=True)
class Fragility:
    """The committed sweep table."""

    readings: Mapping[str, ReadingEvidence] = field(default_factory=dict)
    tables: Mapping[str, Mapping[str, Mapping[int, float]]] = field(default_factory=dict)
    variants: Mapping[str, str] = field(default_factory=dict)
    reference: str = ""

    def reading(self, name: str) -> ReadingEvidence | None:
        return self.readings.get(name)

    def tolerances(self, table: str, column: str, rows: int) -> list[Tolerance]:
        """How far each row of a column of a stored table may move: what the sweep saw
        there, and never less than float32 rounding."""
        seen = self.tables.get(table, {}).get(column, {})
        return [ROUNDING.widest(Tolerance(atol=seen.get(row, 0.0))) for row in range(rows)]


EMPTY = Fragility()
TABLE_JSON = "fragility.json"
TABLE_MD = "fragility.md"


def _seen(data: Mapping[str, Any]) -> Seen:
    return Seen(data["value"], data["printed"])


def from_document(document: Mapping[str, Any]) -> Fragility:
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
        )
    tables = {
        table: {
            column: {int(row): float(atol) for row, atol in atols.items()}
            for column, atols in columns.items()
        }
        for table, columns in document.get("tables", {}).items()
    }
    return Fragility(readings, tables, document.get("variants", {}), document.get("reference", ""))


def load(path: Path) -> Fragility:
    """The committed table; without one every reading is robust."""
    if not path.exists():
        return EMPTY
    try:
        return from_document(json.loads(path.read_text()))
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(
            f"{path} is damaged ({type(error).__name__}: {error}); restore it from git or "
            "rebuild it with the sweep: python -m bnvg.sweep"
        ) from None


# -- building the table from the sweep's records ------------------------------------------------


def band_of(values: Iterable[Value], kind: str) -> tuple[float, float] | None:
    """The widened, clipped range of the values a reading took on the platforms, or None if
    it never moved."""
    numbers = [float(v) for v in values if v is not None]
    if len(set(numbers)) < 2:
        return None
    lo, hi = min(numbers), max(numbers)
    margin = (hi - lo) / 2
    return kind_named(kind).clip(lo - margin, hi + margin)


def _position(reading: Reading) -> int:
    """Where the reading stands among the numbers its line prints."""
    labels = [q.label for _, q in line_named(reading.key).template.quantities()]
    return labels.index(reading.label) if reading.label in labels else len(labels)


def _seen_of(reading: Reading) -> dict[str, Any]:
    return {"value": reading.value, "printed": reading.printed}


def build_document(
    reference: tuple[str, Mapping[str, Reading]],
    rounding: Mapping[str, Mapping[str, Reading]],
    seeds: Mapping[str, Mapping[str, Reading]],
    published: Mapping[str, Reading] | None,
    line_of: Mapping[str, int],
    tables: Mapping[str, Mapping[str, Mapping[str, list[float]]]] | None = None,
    variants: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Merge the sweep's readings into the table's JSON document.

    `reference` is (name, readings) of this machine's own variant; `rounding` and `seeds` map
    the other variants' names to their readings by name; `line_of` gives each reading's log
    line; `tables` maps each variant (reference included) to its stored tables' columns.
    Settings (chosen, not measured) and readings with no values elsewhere are kept too, so
    every quoted number has a row.
    """
    ref_name, ref_readings = reference
    entries: dict[str, Any] = {}
    for name, here in ref_readings.items():
        platforms = {v: readings[name] for v, readings in rounding.items() if name in readings}
        if published is not None and name in published:
            platforms[PUBLISHED] = published[name]
        seen_seeds = {v: readings[name] for v, readings in seeds.items() if name in readings}
        band = band_of([here.value, *(r.value for r in platforms.values())], here.kind.name)
        entries[name] = {
            "line": line_of[here.key],
            "kind": here.kind.name,
            "label": here.label,
            "spec": here.quantity.spec,
            "position": _position(here),
            "reference": _seen_of(here),
            "platforms": {v: _seen_of(r) for v, r in platforms.items()},
            "seeds": {v: _seen_of(r) for v, r in seen_seeds.items()},
            "bound": None if here.bound is None else [here.bound.op, here.bound.threshold],
            "sometimes": here.sometimes,
            "band": None if band is None else list(band),
        }
    document: dict[str, Any] = {
        "reference": ref_name,
        "variants": dict(variants or {}),
        "readings": entries,
        "tables": _table_tolerances(ref_name, rounding, tables or {}),
    }
    fragility = from_document(document)
    for name, entry in entries.items():
        evidence = fragility.readings[name]
        entry["status"] = evidence.status
        entry["holds"] = {g: evidence.holds_in(g) for g in ("platforms", "seeds")}
    return document


def _table_tolerances(
    reference: str,
    rounding: Mapping[str, Any],
    tables: Mapping[str, Mapping[str, Mapping[str, list[float]]]],
) -> dict[str, dict[str, dict[str, float]]]:
    """Per stored table, column and row: 1.5 times the furthest any platform moved from the
    reference there (the band rule, for a value compared with its stored reference). A
    column no platform moved is left out: it gets float32 rounding only."""
    ref_tables = tables.get(reference, {})
    out: dict[str, dict[str, dict[str, float]]] = {}
    for table, columns in ref_tables.items():
        for column, ref_values in columns.items():
            furthest = [0.0] * len(ref_values)
            for variant in rounding:
                values = tables.get(variant, {}).get(table, {}).get(column)
                if values is None or len(values) != len(ref_values):
                    continue
                for row, (a, b) in enumerate(zip(values, ref_values, strict=True)):
                    if math.isnan(a) and math.isnan(b):
                        continue
                    gap = abs(a - b) if not (math.isnan(a) or math.isnan(b)) else math.inf
                    furthest[row] = max(furthest[row], gap)
            moved = {str(row): float(f"{1.5 * f:.3g}") for row, f in enumerate(furthest) if f}
            if moved:  # kept sparse: most rows of most tables never move
                out.setdefault(table, {})[column] = moved
    return out
