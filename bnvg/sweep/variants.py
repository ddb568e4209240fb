"""What the sweep runs: the claims on other platforms, and under other seeds.

A `Variant` is one whole claims session. On the platform axis each variant is the workshop
(seed 0) under other arithmetic, varied one setting at a time from the reference kernels
(`bnvg.experiment.kernels`), so a reading that moves can be traced to what moved it:

- "workshop": the reference itself (ATen AVX2, MKL COMPATIBLE, oneDNN capped at AVX2, one
  thread), run on every kind of machine the cluster has: the same bits everywhere, if the
  reference holds;
- "aten-default", "aten-avx512": ATen's scalar kernels, or its AVX-512 ones (on a CPU that
  has them), the rest as the reference;
- "threads-2": two intra-op threads;
- "mkl-auto": MKL's own code path for this CPU (`MKL_CBWR=AUTO`);
- "native": everything as the machine picks (`--native-kernels`), as a reader runs the
  workshop script; a machine adds its own with `python -m bnvg.sweep --here`.

On the seed axes, "sampler-seed-<k>" is another minibatch order (the workshop's starting
weights) and "init-seed-<k>" other starting weights (the workshop's minibatch order); plain
and batch norm still start from the same weights within one seed. Both run under the
reference kernels. The data set is always the workshop's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

AXES = ("platform", "sampler", "init")
SEEDS = 32  # per axis, by default: 64 seed variants, beside the workshop's own seed 0


@dataclass(frozen=True)
class Variant:
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


WORKSHOP = Variant("workshop", "platform")
NATIVE = Variant("native", "platform", native=True)
MKL_AUTO = Variant("mkl-auto", "platform", (("MKL_CBWR", "AUTO"),))
THREADS_2 = Variant("threads-2", "platform", threads=2)
ATEN_DEFAULT = Variant("aten-default", "platform", (("ATEN_CPU_CAPABILITY", "default"),))
ATEN_AVX512 = Variant("aten-avx512", "platform", (("ATEN_CPU_CAPABILITY", "avx512"),))


def one_setting_varied(avx512: bool) -> list[Variant]:
    """The variants that change one setting of the reference and do not depend on which
    CPU runs them (MKL's COMPATIBLE branch is kept): any worker may run them, but AVX-512
    kernels need a CPU that has them."""
    return [ATEN_DEFAULT, *([ATEN_AVX512] if avx512 else []), THREADS_2]


def per_machine() -> list[Variant]:
    """The variants whose numbers may depend on the CPU, run on every kind of machine."""
    return [WORKSHOP, MKL_AUTO, NATIVE]


def seed_variants(seeds: int) -> list[Variant]:
    return [
        Variant(f"{axis}-seed-{k}", axis, seed=k)
        for axis in ("sampler", "init")
        for k in range(1, seeds + 1)
    ]


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


def from_json(data: Mapping[str, Any]) -> Variant:
    """A variant as a fragment stores it (`to_json`)."""
    seed = data["seed"]
    return Variant(
        name=str(data["name"]),
        axis=str(data["axis"]),
        settings=tuple((str(k), str(v)) for k, v in dict(data["settings"]).items()),
        threads=int(data["threads"]),
        native=bool(data["native"]),
        seed=None if seed is None else int(seed),
    )


def to_json(v: Variant) -> dict[str, Any]:
    return {
        "name": v.name,
        "axis": v.axis,
        "settings": dict(v.settings),
        "threads": v.threads,
        "native": v.native,
        "seed": v.seed,
    }
