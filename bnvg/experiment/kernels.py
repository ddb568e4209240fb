"""The reference kernels: the settings under which every x86-64 CPU computes the same bits.

torch picks its arithmetic by the machine it runs on, in three places, each before its first
use in a process:

- ATen, torch's own CPU kernels, dispatches to its best vector width (`ATEN_CPU_CAPABILITY`:
  "default", "avx2", "avx512"); a wider vector sums a reduction in another order;
- MKL, behind every matrix product, chooses its code path by the CPU's vendor and model unless
  told to take its reproducible branch (`MKL_CBWR=COMPATIBLE`, Intel's "Conditional Numerical
  Reproducibility");
- oneDNN dispatches by instruction set up to a cap (`ONEDNN_MAX_CPU_ISA`);
- numpy, which draws the data and the figures' curves, dispatches its float64 functions by
  the CPU too: its AVX-512 `pow` gives 0.1 ** 2 one unit in the last place below the
  correctly rounded 0.010000000000000002 that every other path gives
  (`NPY_DISABLE_CPU_FEATURES` turns its AVX-512 paths off).

With ATen's AVX2 kernels, MKL's COMPATIBLE branch, oneDNN capped at AVX2, numpy without its
AVX-512 paths, and one intra-op thread, an Intel Xeon and an AMD EPYC compute the workshop's
numbers bit for bit alike: those are the reference kernels, what the committed numbers were
computed with, and what every process of bnvg that computes uses unless told otherwise. A
variable the user set wins, and is recorded as the user's. `apply(native=True)`
(`--native-kernels`) leaves the machine its own choice, as a reader running the workshop
script would.

The variables are read when torch (and MKL, oneDNN) and numpy initialise, so `apply` must run
before they are imported: the pytest plugin applies the reference as it is imported, before
anything imports numpy, and its options then decide again for torch's three. numpy cannot be
told again once imported, so under `--native-kernels` its AVX-512 paths stay off; the platform
records what numpy dispatches to (`bnvg.experiment.platform`). It imports nothing heavy.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Mapping, MutableMapping
from functools import cache
from pathlib import Path

REFERENCE: Mapping[str, str] = {
    "ATEN_CPU_CAPABILITY": "avx2",  # ATen's AVX2 kernels: every x86-64 CPU since 2013 has them
    "MKL_CBWR": "COMPATIBLE",  # MKL's reproducible branch, the same on Intel and AMD
    "ONEDNN_MAX_CPU_ISA": "AVX2",  # oneDNN never wider than AVX2
    # numpy 2.2's AVX-512 dispatch targets, every one (numpy warns at a name it does not know)
    "NPY_DISABLE_CPU_FEATURES": "AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX "
    "AVX512_CLX AVX512_CNL AVX512_ICL",
}
TORCH_VARIABLES = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA")  # --native-kernels
REFERENCE_THREADS = 1  # the thread count changes the training-end numbers too

# The variables this project set itself, so that a process it starts (an xdist worker, a
# sweep job) can tell them from the user's and decide again under its own options.
SET_BY_BNVG = "BNVG_KERNEL_DEFAULTS"

USER, REFERENCE_DEFAULT, MACHINE = "user", "reference", "machine"


def x86_64() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64")


@cache
def _cpuinfo() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo (Linux); empty elsewhere."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    fields: dict[str, str] = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        name, _, value = line.partition(":")
        fields[name.strip()] = value.strip()
    return fields


def has_avx2() -> bool:
    """Whether this CPU runs ATen's AVX2 kernels (asking for them elsewhere would crash)."""
    if not x86_64():
        return False
    flags = _cpuinfo().get("flags")
    if flags is not None:
        return "avx2" in flags.split()
    # No /proc/cpuinfo (macOS, Windows): every x86-64 Mac and PC of the last decade has AVX2,
    # and torch's own check says so once imported; before that, trust the architecture.
    return True


THREADS = "BNVG_TORCH_THREADS"  # the intra-op thread count torch is to compute with


def use_threads(threads: int) -> None:
    """Compute with `threads` intra-op threads in this process, and in the processes it
    starts: torch, imported through `bnvg.experiment.runtime`, reads the count on import;
    if it is imported already, it is told now. Does not import torch."""
    os.environ[THREADS] = str(threads)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)


def cpu_flags() -> str:
    """The first processor's feature flags (what ATen's dispatch reads), "" elsewhere."""
    return _cpuinfo().get("flags", "")


def cpu() -> str:
    """The CPU as MKL tells CPUs apart: "AuthenticAMD family 25 model 1 (AMD EPYC)"."""
    info = _cpuinfo()
    vendor = info.get("vendor_id") or platform.processor() or platform.machine()
    family, model, name = info.get("cpu family"), info.get("model"), info.get("model name")
    out = vendor
    if family is not None and model is not None:
        out += f" family {family} model {model}"
    return f"{out} ({name})" if name else out


def apply(native: bool = False, environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Set the reference kernels in `environ` (this process's environment by default) where
    the user has not set them; with `native`, leave torch's kernels to the machine (numpy's
    cap stays: see the module's docstring). Returns, per variable, who decided it: "user",
    "reference" or "machine"."""
    env = os.environ if environ is None else environ
    # What a parent bnvg process set is no user's choice: decide it again here. A value
    # changed since (a caller's `env=`) is someone's choice, and stays.
    for name in env.get(SET_BY_BNVG, "").split(","):
        if name in REFERENCE and env.get(name) == REFERENCE[name]:
            env.pop(name)
    env.pop(SET_BY_BNVG, None)
    origins: dict[str, str] = {}
    ours: list[str] = []
    for name, value in REFERENCE.items():
        if name in env:
            origins[name] = USER
        elif (
            (native and name in TORCH_VARIABLES)
            or not x86_64()
            or (name == "ATEN_CPU_CAPABILITY" and not has_avx2())
        ):
            origins[name] = MACHINE
        else:
            env[name] = value
            ours.append(name)
            origins[name] = REFERENCE_DEFAULT
    if ours:
        env[SET_BY_BNVG] = ",".join(ours)
    return origins


def set_by_user(environ: Mapping[str, str] | None = None) -> list[str]:
    """The kernel variables of `environ` that the user set (after `apply`)."""
    env = os.environ if environ is None else environ
    ours = set(env.get(SET_BY_BNVG, "").split(","))
    return [
        name
        for name in REFERENCE
        if name in env and not (name in ours and env[name] == REFERENCE[name])
    ]


def reference_line() -> str:
    """The one line that makes the workshop script compute the reference numbers."""
    settings = " ".join(f"{k}={REFERENCE[k]}" for k in TORCH_VARIABLES)
    return f"{settings} OMP_NUM_THREADS={REFERENCE_THREADS} python3 experiment.py"
