"""The workshop's training runs, and everything each one's numbers depend on.

A `RunSpec` says what decides a run beside the recipe: the network, the learning rate and
whether the at-init gradient ratio was measured on the very network before it trained (that
one train-mode pass nudges batch norm's running statistics, and so the early history).
`RUNS` names the twelve distinct runs the log needs. `run_key` digests everything a run's
numbers depend on, so that a stored run is reused only while none of it changed
(`bnvg.experiment.run_cache`); `bnvg.experiment.train.train_run` trains one.

No torch here: the key is read by processes that never train (pytest-xdist's controller).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from bnvg.experiment.config import DEEP_DEPTH, PLAIN, WORKSHOP, NetSpec, Workshop
from bnvg.store import digest, source_digest

EXPERIMENT = Path(__file__).resolve().parent
# The modules a training run executes; editing any other (the eval bug, the figures' data)
# retrains nothing.
RUN_SOURCES = (
    "config.py",
    "data.py",
    "model.py",
    "metrics.py",
    "measure.py",
    "train.py",
    "runs.py",
    "results.py",  # what a run returns
    "runtime.py",  # torch, with the session's thread count
)


@dataclass(frozen=True)
class RunSpec:
    """One training run: which network, which learning rate, and how it was prepared."""

    net: NetSpec = PLAIN
    lr: float = WORKSHOP.lr
    probed: bool = False  # True: init_grad_ratio ran on this network before training

    def __post_init__(self) -> None:
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr!r}")

    def __str__(self) -> str:
        return f"{self.net}, lr={self.lr}" + (", probed" if self.probed else "")


DEEP = NetSpec(depth=DEEP_DEPTH)

# The distinct runs of the log. The S8 rows "plain sigmoid" and "batch norm" are the S6 runs:
# S8 probes them first, which changes nothing the log prints (the plain net has no running
# statistics; batch norm's converge to the same values and its parameters end bit-identical).
RUNS: Mapping[str, RunSpec] = MappingProxyType(
    {
        "plain": RunSpec(),
        "batch norm": RunSpec(NetSpec(norm="batch")),
        "plain, lr = 5.0": RunSpec(lr=5.0),
        "plain, lr = 50.0": RunSpec(lr=50.0),
        "depth 8 plain, lr = 0.5": RunSpec(DEEP, lr=0.5),
        "depth 8 plain, lr = 5.0": RunSpec(DEEP, lr=5.0),
        "depth 8 plain, lr = 50.0": RunSpec(DEEP, lr=50.0),
        "depth 8 batch norm, lr = 0.5": RunSpec(DEEP.replace(norm="batch"), probed=True),
        "ReLU": RunSpec(NetSpec(act="relu"), probed=True),
        "Xavier init": RunSpec(NetSpec(init="xavier"), probed=True),
        "residual": RunSpec(NetSpec(residual=True), probed=True),
        "layer norm": RunSpec(NetSpec(norm="layer"), probed=True),
    }
)


def estimated_seconds(spec: RunSpec, workshop: Workshop = WORKSHOP) -> float:
    """A rough training time on one core, measured on the reference machine: a fixed cost
    per step plus a cost per hidden layer that batch norm roughly triples. It only has to
    rank runs well enough to split them evenly between processes."""
    per_layer = {"batch": 0.45, "layer": 0.25}.get(spec.net.norm, 0.15)
    return (1.1 + spec.net.depth * per_layer) * workshop.steps / 4000


def run_named(name: str) -> RunSpec:
    """The `RUNS` entry called `name`, or a ValueError listing the valid names."""
    try:
        return RUNS[name]
    except KeyError:
        raise ValueError(
            f"unknown run {name!r}: valid names are " + ", ".join(repr(n) for n in RUNS)
        ) from None


def run_inputs(spec: RunSpec, workshop: Workshop, where: Mapping[str, str]) -> dict[str, str]:
    """Everything a run's numbers depend on; `where` is the platform's
    (`bnvg.experiment.platform.Platform.cache_fields`)."""
    return {
        "source": source_digest(EXPERIMENT / name for name in RUN_SOURCES),
        "spec": repr(spec),
        "workshop": repr(workshop),
        **where,
    }


def run_key(spec: RunSpec, workshop: Workshop, where: Mapping[str, str]) -> str:
    """The key of a run's entry: a digest of everything its numbers depend on."""
    return digest(json.dumps(run_inputs(spec, workshop, where), sort_keys=True))


def stored_runs(folder: Path, workshop: Workshop, where: Mapping[str, str]) -> set[str]:
    """The names of the runs of `RUNS` whose entries in `folder` were made for `where`: a
    cheap look, without torch, at what a session would reuse (the session itself checks the
    whole key, and trains what does not match)."""
    found = set()
    for about_path in folder.glob("*.json"):
        try:
            inputs = json.loads(about_path.read_text()).get("inputs", {})
        except (OSError, ValueError, AttributeError):
            continue
        for name, spec in RUNS.items():
            wanted = run_inputs(spec, workshop, where)
            if all(inputs.get(k) == v for k, v in wanted.items()):
                found.add(name)
    return found
