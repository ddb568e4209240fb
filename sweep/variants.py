"""The sweep's variants: the same claims under other arithmetic, or another sampler seed."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from bnvg.places import Places

PROJECT = Places(Path(__file__).resolve().parent.parent)
SWEEP_DIR = PROJECT.root / "build" / "sweep"  # shared by the controller and its workers
SEEDS = range(1, 8)  # seed 0 is the reference run itself


@dataclass(frozen=True)
class Variant:
    name: str
    group: str  # "rounding" (same experiment, other arithmetic) or "seeds" (other experiment)
    capability: str | None = None  # ATEN_CPU_CAPABILITY; None: torch's own choice
    threads: int = 1
    sampler_seed: int | None = None

    @property
    def record(self) -> Path:
        """Where this variant's session record (its fragment of the table) is kept."""
        return SWEEP_DIR / f"{self.name}.json"

    def describe(self) -> str:
        said = f"ATEN_CPU_CAPABILITY={self.capability}, {self.threads} thread(s)"
        return said + (
            f", sampler seed {self.sampler_seed}" if self.sampler_seed is not None else ""
        )


def capabilities() -> list[str]:
    """The ATEN_CPU_CAPABILITY values this CPU supports, scalar first."""
    import torch

    native = torch.backends.cpu.get_cpu_capability().lower()
    ladder = ["default", "avx2", "avx512"]
    if native in ladder:
        return ladder[: ladder.index(native) + 1]
    return ["default", native]


def variants() -> list[Variant]:
    caps = capabilities()
    rounding = [
        Variant(f"{cap}-{threads}-thread{'s' if threads > 1 else ''}", "rounding", cap, threads)
        for cap in caps
        for threads in (1, 2)
    ]
    seeds = [Variant(f"seed-{k}", "seeds", caps[-1], 1, k) for k in SEEDS]
    return rounding + seeds


def reference() -> Variant:
    """This machine's own arithmetic: torch's native capability, one thread, seed 0."""
    native = capabilities()[-1]
    return next(
        v for v in variants() if v.group == "rounding" and v.capability == native and v.threads == 1
    )


def scratch_copy(into: Path) -> Path:
    """The project's claims, snapshots and configuration, in a folder of their own: each
    variant rewrites its snapshots there (--snapshot-update) so that a changed number is
    recorded instead of failing its claim."""
    for name in ("claims", "snapshots"):
        shutil.copytree(
            PROJECT.root / name, into / name, ignore=shutil.ignore_patterns("__pycache__")
        )
    for name in ("conftest.py", "pyproject.toml"):
        shutil.copy(PROJECT.root / name, into / name)
    return into


def environment_for(variant: Variant) -> dict[str, str]:
    # Two variants share the two cores; threads that spin while they wait would starve each
    # other. Waiting passively changes when a thread runs, never what it computes.
    env = {"OMP_WAIT_POLICY": "PASSIVE"}
    if variant.capability is not None:
        env["ATEN_CPU_CAPABILITY"] = variant.capability
    return env
