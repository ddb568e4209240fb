"""What the sweep runs: the claims on other platforms, and under other seeds.

A `Variant` is one whole claims session. On the platform axis each variant is the workshop
(seed 0) under other arithmetic, varied one setting at a time from the reference kernels
(`claimlog.platform`), so a reading that moves can be traced to what moved it:

- "workshop": the reference itself (ATen AVX2, MKL COMPATIBLE, oneDNN capped at AVX2, one
  thread), run on every kind of machine the cluster has: the same bits everywhere, if the
  reference holds;
- "aten-default", "aten-avx512": ATen's scalar kernels, or its AVX-512 ones (on a CPU that
  has them), the rest as the reference;
- "threads-2": two intra-op threads;
- "mkl-auto": MKL's own code path for this CPU (`MKL_CBWR=AUTO`);
- "native": everything as the machine picks (`--native-kernels`), as a reader runs the
  workshop script; a machine adds its own with the sweep's `--here`.

On the seed axes, "sampler-seed-<k>" is another minibatch order (the workshop's starting
weights) and "init-seed-<k>" other starting weights (the workshop's minibatch order); plain
and batch norm still start from the same weights within one seed. Both run under the
reference kernels. The data set is always the workshop's.
"""

from __future__ import annotations

from collections.abc import Sequence

from claimlog.evidence.fragments import Variant

SEEDS = 32  # per axis, by default: 64 seed variants, beside the workshop's own seed 0


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


def seed_variants(axes: Sequence[str], seeds: int) -> list[Variant]:
    """Seeds 1 to `seeds` of each of the workshop's seed `axes` (`Declaration.seeds`)."""
    return [Variant(f"{axis}-seed-{k}", axis, seed=k) for axis in axes for k in range(1, seeds + 1)]
