"""What the sweep runs: the claims under other arithmetic, and under other seeds.

A `Variant` is one whole claims session:

- "workshop": the workshop itself (seed 0, one thread, the worker's own CPU kernels), run once
  on every platform the cluster has: that platform's evidence;
- "kernels-<capability>-<n>-thread(s)": the workshop under another torch CPU capability
  (ATEN_CPU_CAPABILITY) or thread count: the rounding variants one machine can emulate;
- "sampler-seed-<k>": another minibatch order (the workshop's starting weights);
- "init-seed-<k>": other starting weights (the workshop's minibatch order); plain and batch
  norm still start from the same weights within one seed.

The data set is always the workshop's.
"""

from __future__ import annotations

from dataclasses import dataclass

AXES = ("platform", "sampler", "init")
SEEDS = 32  # per axis, by default: 64 seed variants, beside the workshop's own seed 0
LADDER = ("default", "avx2", "avx512")  # torch's CPU capabilities, scalar first


@dataclass(frozen=True)
class Variant:
    name: str
    axis: str  # "platform", "sampler" or "init"
    capability: str | None = None  # ATEN_CPU_CAPABILITY to emulate; None: the worker's own
    threads: int = 1
    seed: int | None = None

    def args(self) -> list[str]:
        """The options of the claims session this variant is."""
        args = [f"--torch-threads={self.threads}"]
        if self.axis == "sampler":
            args.append(f"--sampler-seed={self.seed}")
        elif self.axis == "init":
            args.append(f"--init-seed={self.seed}")
        return args

    def env(self) -> dict[str, str]:
        return {} if self.capability is None else {"ATEN_CPU_CAPABILITY": self.capability}

    def describe(self) -> str:
        if self.axis == "sampler":
            return f"minibatch order {self.seed} (sampler seed)"
        if self.axis == "init":
            return f"starting weights {self.seed} (init seed)"
        if self.capability is None:
            return "the workshop, on this platform's own kernels, 1 thread"
        threads = f"{self.threads} thread{'s' if self.threads > 1 else ''}"
        return f"ATEN_CPU_CAPABILITY={self.capability}, {threads}"


WORKSHOP = Variant("workshop", "platform")


def capabilities(native: str) -> list[str]:
    """The capabilities a machine whose best is `native` can emulate, scalar first."""
    native = native.lower()
    return list(LADDER[: LADDER.index(native) + 1]) if native in LADDER else ["default", native]


def kernel_variants(native: str) -> list[Variant]:
    """Every capability this machine supports, with one and two threads, but its own best
    with one thread: that is the workshop variant."""
    out = []
    for cap in capabilities(native):
        for threads in (1, 2):
            if cap == native.lower() and threads == 1:
                continue
            plural = "s" if threads > 1 else ""
            out.append(Variant(f"kernels-{cap}-{threads}-thread{plural}", "platform", cap, threads))
    return out


def seed_variants(seeds: int) -> list[Variant]:
    return [
        Variant(f"{axis}-seed-{k}", axis, seed=k)
        for axis in ("sampler", "init")
        for k in range(1, seeds + 1)
    ]
