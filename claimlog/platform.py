"""The platform: what computes the workshop's numbers, and the reference kernels.

Besides the code and the seeds, a result's bits are decided by what computes it:

- the torch build, and the vector kernels ATen dispatches to (`ATEN_CPU_CAPABILITY`:
  "default", "avx2", "avx512"); a wider vector sums a reduction in another order;
- MKL, behind every matrix product, which chooses its code path by the CPU's vendor and model
  unless told to take its reproducible branch (`MKL_CBWR=COMPATIBLE`, Intel's "Conditional
  Numerical Reproducibility");
- oneDNN, which dispatches by instruction set up to a cap (`ONEDNN_MAX_CPU_ISA`);
- numpy, which draws the data and the figures' curves, and dispatches its float64 functions
  by the CPU too: its AVX-512 `pow` gives 0.1 ** 2 one unit in the last place below the
  correctly rounded 0.010000000000000002 that every other path gives
  (`NPY_DISABLE_CPU_FEATURES` turns dispatch targets off);
- the torch intra-op thread count, and the architecture: on arm64 there is no MKL and no
  AVX2, ATen dispatches to its NEON ("DEFAULT") or SVE kernels by the CPU, and the CPU model
  is part of what computes.

**The reference kernels** are ATen's AVX2 kernels, MKL's COMPATIBLE branch, oneDNN capped at
AVX2, numpy without any of its AVX-512 dispatch targets, and one thread. Under them every
x86-64 CPU measured (AMD EPYC of three generations, Intel Xeon of two) computes bnvg's
numbers bit for bit alike: the committed numbers were computed with them, and every process
that computes uses them unless told otherwise. They do not make every computation the same
everywhere: MKL's COMPATIBLE branch still takes a path of its own on some AMD cores for
products eight or more wide, and `torch.bernoulli_` (`nn.Dropout`'s masks) draws from MKL on
Intel CPUs only. Which machines compute alike is measured, by the fingerprint below. A
variable the user set wins and is recorded as the user's. `apply(native=True)`
(`--native-kernels`) leaves torch's kernels to the machine, as a reader running the workshop
script would. The variables are read when torch (MKL, oneDNN) and numpy initialise, so
`apply` runs before they are imported: the pytest plugin applies the reference as it is
imported, before anything imports numpy, and before the workshop's own modules import torch.

**A `Platform`** records what computed, from what this process dispatches to (not from what
the CPU could do): numpy's vector width is read from the dispatch targets numpy enabled
after `NPY_DISABLE_CPU_FEATURES`, not from its list of CPU features, which names features
(AVX512_SPR, AVX512FP16, ...) that no dispatch target of the installed numpy uses.
`Platform.identity()` keeps only what moves the floats, and `Platform.id` names it. Its
**fingerprint** is what the workshop's own kernels give here (`claimlog.kernels`: recorded
from its computations by a full update, replayed on fixed inputs, `kernel_bits`): under MKL's
COMPATIBLE branch it speaks for the CPU, whose name is then no part of the identity, so two
machines whose kernels give the same bits are one platform whatever they are called, and two
that differ are two. Two runs with the same identity compute the same numbers; the evidence of
one is the other's. The reference is such an identity (`snapshots/environment.json`, with the
kernels its fingerprint replays), not a machine.
"""

from __future__ import annotations

import gc
import json
import os
import platform as _python_platform
import subprocess
import sys
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import import_module, metadata
from pathlib import Path
from typing import Any

from claimlog.store import Entry, Memo, Store, digest

NOT_SET = "(not set)"

# -- the reference kernels ------------------------------------------------------------------

TORCH_REFERENCE: Mapping[str, str] = {
    "ATEN_CPU_CAPABILITY": "avx2",  # ATen's AVX2 kernels: every x86-64 CPU since 2013 has them
    "MKL_CBWR": "COMPATIBLE",  # MKL's reproducible branch (on AMD, the same below 8 wide)
    "ONEDNN_MAX_CPU_ISA": "AVX2",  # oneDNN never wider than AVX2
}
NUMPY_VARIABLE = "NPY_DISABLE_CPU_FEATURES"  # numpy without its AVX-512 dispatch targets
VARIABLES = (*TORCH_REFERENCE, NUMPY_VARIABLE)
TORCH_VARIABLES = tuple(TORCH_REFERENCE)  # what --native-kernels leaves to the machine
REFERENCE_THREADS = 1  # the thread count changes the training-end numbers too

# What this project set itself, as JSON {variable: value}, so that a process it starts (an
# xdist worker, a sweep job) can tell its parent's defaults from the user's choices.
SET_BY_CLAIMLOG = "CLAIMLOG_KERNEL_DEFAULTS"
THREADS = "CLAIMLOG_TORCH_THREADS"  # the intra-op thread count torch is to compute with

USER, REFERENCE_DEFAULT, MACHINE = "user", "reference", "machine"


# Set by `nox -s arm64` in the environment of what it runs under QEMU's user-mode emulation:
# "QEMU 10.0.13, -cpu neoverse-n1". A platform computed under emulation says so.
EMULATION = "CLAIMLOG_EMULATION"


def installed(distribution: str) -> str:
    """The installed version of `distribution`, or "" where it is not: matplotlib draws a
    workshop's figures, and a workshop without figures need not install it."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return ""


def x86_64(machine: str | None = None) -> bool:
    """Whether `machine` (this process's by default) is x86-64, where the reference kernels
    exist."""
    found = _python_platform.machine() if machine is None else machine
    return found.lower() in ("x86_64", "amd64")


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
    # No /proc/cpuinfo (macOS, Windows): every x86-64 Mac and PC of the last decade has AVX2.
    return True


def cpu_flags() -> str:
    """The first processor's feature flags (what ATen's dispatch reads), "" elsewhere."""
    return _cpuinfo().get("flags", "")


# arm64 CPUs by their MIDR (/proc/cpuinfo's "CPU implementer" and "CPU part").
ARM_IMPLEMENTERS = {"0x41": "Arm", "0x61": "Apple", "0xc0": "Ampere", "0x51": "Qualcomm"}
ARM_PARTS = {
    ("0x41", "0xd0c"): "Neoverse-N1",  # Graviton2, Ampere Altra; QEMU's neoverse-n1
    ("0x41", "0xd40"): "Neoverse-V1",  # Graviton3; QEMU's neoverse-v1
    ("0x41", "0xd49"): "Neoverse-N2",
    ("0x41", "0xd4f"): "Neoverse-V2",  # Graviton4, Grace
    ("0x41", "0xd08"): "Cortex-A72",  # Raspberry Pi 4
    ("0x41", "0xd0b"): "Cortex-A76",  # Raspberry Pi 5
}


def cpu() -> str:
    """The CPU as MKL tells CPUs apart: "AuthenticAMD family 25 model 1 (AMD EPYC)"; on
    arm64, by its implementer and part: "Arm Neoverse-N1 (implementer 0x41 part 0xd0c)"."""
    info = _cpuinfo()
    if "CPU part" in info:
        implementer, part = info.get("CPU implementer", "?"), info["CPU part"]
        said = f"implementer {implementer} part {part}"
        named = ARM_PARTS.get((implementer, part))
        if named:
            return f"{ARM_IMPLEMENTERS[implementer]} {named} ({said})"
        vendor = ARM_IMPLEMENTERS.get(implementer)
        return f"{vendor} part {part}" if vendor else said
    vendor = info.get("vendor_id") or _python_platform.processor() or _python_platform.machine()
    family, model, name = info.get("cpu family"), info.get("model"), info.get("model name")
    out = vendor
    if family is not None and model is not None:
        out += f" family {family} model {model}"
    return f"{out} ({name})" if name else out


def _numpy_core() -> Any:
    """numpy's compiled core, which knows its dispatch targets (imports numpy)."""
    try:
        return import_module("numpy._core._multiarray_umath")
    except ImportError:  # numpy 1.x
        return import_module("numpy.core._multiarray_umath")


_ASK_NUMPY = """
try:
    from numpy._core import _multiarray_umath as core
except ImportError:  # numpy 1.x
    from numpy.core import _multiarray_umath as core
print(" ".join(core.__cpu_dispatch__))
"""


@cache
def numpy_dispatch_targets() -> tuple[str, ...]:
    """The dispatch targets the installed numpy was built with ("AVX2", "AVX512F", ...,
    "AVX512_SPR" in newer releases): asked of numpy in a child process while this one has
    not imported it, because numpy reads NPY_DISABLE_CPU_FEATURES once, as it is imported."""
    if "numpy" in sys.modules:
        return tuple(_numpy_core().__cpu_dispatch__)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NPY_")}
    answer = subprocess.run(
        [sys.executable, "-c", _ASK_NUMPY], env=env, capture_output=True, text=True, check=True
    )
    return tuple(answer.stdout.split())


def numpy_reference() -> str:
    """The reference's NPY_DISABLE_CPU_FEATURES: every AVX-512 dispatch target of the
    installed numpy, whatever its release ("" where it has none: nothing to turn off). numpy
    warns of a name it does not dispatch to, so the names are numpy's own."""
    return " ".join(t for t in numpy_dispatch_targets() if t.startswith("AVX512"))


def _ours(env: Mapping[str, str]) -> dict[str, str]:
    try:
        found = json.loads(env.get(SET_BY_CLAIMLOG) or "{}")
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def apply(native: bool = False, environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Set the reference kernels in `environ` (this process's environment by default) where
    the user has not set them; with `native`, leave torch's kernels to the machine (numpy's
    cap stays: numpy cannot be told again once imported). Returns, per variable, who decided
    it: "user", "reference" or "machine"."""
    env = os.environ if environ is None else environ
    # What a parent claimlog process set is no user's choice: torch's part is decided again here
    # (this session's options may differ); numpy's is the same for the same numpy, and kept
    # rather than asked of numpy again. A value changed since (a caller's `env=`) is someone's
    # choice, and stays.
    inherited = {n: v for n, v in _ours(env).items() if n in VARIABLES and env.get(n) == v}
    env.pop(SET_BY_CLAIMLOG, None)
    for name in inherited:
        if name != NUMPY_VARIABLE:
            env.pop(name)
    origins: dict[str, str] = {}
    ours: dict[str, str] = {}
    for name in VARIABLES:
        if name in inherited and name in env:
            origins[name] = REFERENCE_DEFAULT
            ours[name] = env[name]
        elif name in env:
            origins[name] = USER
        elif (
            (native and name in TORCH_VARIABLES)
            or not x86_64()
            or (name == "ATEN_CPU_CAPABILITY" and not has_avx2())
        ):
            origins[name] = MACHINE
        else:
            value = TORCH_REFERENCE[name] if name in TORCH_REFERENCE else numpy_reference()
            if not value:
                origins[name] = MACHINE  # a numpy with no AVX-512 targets: nothing to turn off
                continue
            env[name] = ours[name] = value
            origins[name] = REFERENCE_DEFAULT
    if ours:
        env[SET_BY_CLAIMLOG] = json.dumps(ours, sort_keys=True)
    return origins


def set_by_user(environ: Mapping[str, str] | None = None) -> list[str]:
    """The kernel variables of `environ` that the user set (after `apply`)."""
    env = os.environ if environ is None else environ
    ours = _ours(env)
    return [name for name in VARIABLES if name in env and ours.get(name) != env[name]]


def use_threads(threads: int) -> None:
    """Compute with `threads` intra-op threads in this process, and in the processes it
    starts: whoever imports torch first (a workshop's own module, or `_ask_torch` here) tells
    it the count; if it is imported already, it is told now. Does not import torch."""
    os.environ[THREADS] = str(threads)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)


def reference_line() -> str:
    """The one line that makes the workshop script compute the reference numbers."""
    settings = " ".join(f"{k}={v}" for k, v in TORCH_REFERENCE.items())
    return f"{settings} OMP_NUM_THREADS={REFERENCE_THREADS} python3 experiment.py"


# -- what torch says of this process, kept without torch ------------------------------------

TORCH_FACTS = ("torch", "cpu capability", "widest capability")
TORCH_FACTS_FOLDER = "claimlog-torch"  # where pytest's cache keeps them (its d/ folder)


def _torch_facts_key() -> str:
    """What torch's answer depends on, read without torch: the installed torch (version and
    folder), the CPU (vendor, model and feature flags) and ATEN_CPU_CAPABILITY."""
    torch = metadata.distribution("torch")
    inputs = {
        "torch": torch.version,
        "torch folder": str(torch.locate_file("torch")),
        "cpu": cpu(),
        "cpu flags": cpu_flags(),
        "machine": _python_platform.machine(),
        "ATEN_CPU_CAPABILITY": os.environ.get("ATEN_CPU_CAPABILITY", ""),
        "facts": TORCH_FACTS,  # a fact added is a new key, never an old entry read as damaged
    }
    return digest(json.dumps(inputs, sort_keys=True))


def import_torch() -> Any:
    """torch, computing with the session's thread count (`use_threads`): what the engine
    imports before it computes anything a workshop asks of it, so that a workshop that
    imports torch itself computes with the count its platform names.

    Importing torch creates some 160,000 objects that Python's garbage collector tracks, and
    every later full collection would scan them all again: those that more imports and
    training trigger, and pytest's own at the session's end. They live as long as the
    process, so the first import runs with the collector paused and then freezes them
    (`gc.freeze`: later collections leave them alone). That changes when memory is freed,
    never what is computed, and takes a sixth of the CPU time off a session that computes
    (docs/speed.md)."""
    torch = import_for_the_whole_process("torch")
    if os.environ.get(THREADS):
        torch.set_num_threads(int(os.environ[THREADS]))
    return torch


# The modules `import_for_the_whole_process` froze in this process: each once, though a
# test's in-process session (pytester) may put sys.modules back and import it again.
_FROZEN: set[str] = set()


def import_for_the_whole_process(name: str) -> Any:
    """The module `name`, whose objects live as long as the process (torch, or a workshop's
    drawing module and matplotlib with it). Its first import here runs without collecting
    garbage, then moves every object tracked so far out of later collections' reach. What is
    unreachable then is never freed: a few objects, at most once per module and process."""
    if name in sys.modules or name in _FROZEN:
        return import_module(name)
    _FROZEN.add(name)
    enabled = gc.isenabled()
    gc.disable()
    try:
        module = import_module(name)
    finally:
        if enabled:
            gc.enable()
    gc.freeze()
    return module


def _ask_torch() -> dict[str, str]:
    torch = import_torch()

    if not x86_64():  # ATen's own choice by the CPU: "DEFAULT" (NEON) or "SVE256"
        widest = torch.backends.cpu.get_cpu_capability().upper()
    elif torch.cpu._is_avx512_supported():
        widest = "AVX512"
    else:
        widest = "AVX2" if torch.cpu._is_avx2_supported() else "DEFAULT"
    return {
        "torch": str(torch.__version__),  # a TorchVersion, which xdist cannot ship
        "cpu capability": torch.backends.cpu.get_cpu_capability(),
        # The widest kernels this CPU runs, whatever ATEN_CPU_CAPABILITY asks (the sweep's).
        "widest capability": widest,
    }


def _facts_of(entry: Entry) -> dict[str, str]:
    found = json.loads(entry.content)
    if not isinstance(found, dict) or set(found) != set(TORCH_FACTS):
        raise ValueError(f"not torch's facts: {found!r}")
    return {k: str(v) for k, v in found.items()}


def torch_facts(store: Store | None = None) -> dict[str, str]:
    """{"torch": "2.13.0+cpu", "cpu capability": "AVX2", "widest capability": "AVX512"} for
    this process. Importing torch
    only to ask costs a second, so the answer is kept in `store` (pytest's cache) under a key
    of what it depends on; without a store, torch is asked."""
    facts = Memo(store, "torch facts").get(
        "torch's facts",
        _torch_facts_key(),
        _ask_torch,
        encode=lambda answer: json.dumps(answer, sort_keys=True).encode(),
        decode=_facts_of,
    )
    assert facts is not None  # waiting for the lock always gives an answer
    return facts


def kept_torch_facts(store: Store) -> dict[str, str] | None:
    """torch's facts of this process as a process on this platform kept them in `store`,
    or None: known without importing torch."""
    return Memo(store, "torch facts").peek(_torch_facts_key(), _facts_of)


# -- the fingerprint: the bits the workshop's own kernels give here --------------------------
PRELOAD = "LD_PRELOAD"  # a library loaded before the others can answer for MKL (a shim)


def _kernel_bits_key(signatures: Iterable[str], threads: int) -> str:
    """What the kernels' bits depend on, read without torch: the kernels, torch and the CPU
    (`_torch_facts_key`), every kernel variable, what is preloaded, and the threads."""
    inputs = {
        "kernels": digest(*sorted(signatures)),
        "torch facts": _torch_facts_key(),
        "threads": threads,
        **{name: os.environ.get(name, "") for name in (*VARIABLES, PRELOAD)},
    }
    return digest(json.dumps(inputs, sort_keys=True))


def _bits_of(entry: Entry) -> dict[str, str]:
    found = json.loads(entry.content)
    if not isinstance(found, dict):
        raise ValueError(f"not the kernels' bits: {found!r}")
    return {str(k): str(v) for k, v in found.items()}


def kernel_bits(signatures: Iterable[str], threads: int, store: Store | None) -> dict[str, str]:
    """{kernel: the digest of what it gives here} for the workshop's kernels
    (`claimlog.kernels.replay`, with `threads` threads). Asking costs torch's import and a
    tenth of a second, so the answer is kept in `store` (pytest's cache) under a key of what
    it depends on; without a store, torch is asked. No kernels (a record that names none, a
    workshop that computes nothing in torch): nothing to ask, and torch is not imported."""
    chosen = sorted(set(signatures))
    if not chosen:
        return {}

    def replayed() -> dict[str, str]:
        import_torch().set_num_threads(threads)
        from claimlog.kernels import replay

        return replay(chosen)

    bits = Memo(store, "kernels' bits").get(
        "the kernels' bits",
        _kernel_bits_key(chosen, threads),
        replayed,
        encode=lambda answer: json.dumps(answer, sort_keys=True).encode(),
        decode=_bits_of,
    )
    assert bits is not None  # waiting for the lock always gives an answer
    return bits


def reference_kernels(environment: Path) -> dict[str, str]:
    """The workshop's kernels as the reference identity (`environment`,
    snapshots/environment.json) records them, each with the digest of what it gave there:
    {} where it records none, or cannot be read."""
    try:
        data = json.loads(environment.read_text())
    except (OSError, ValueError):
        return {}
    kernels = data.get(KERNELS) if isinstance(data, dict) else None
    return {str(k): str(v) for k, v in kernels.items()} if isinstance(kernels, dict) else {}


_ASK_KERNELS = """
import json, sys
from pathlib import Path
from claimlog.kernels import fingerprint
from claimlog.platform import kernel_bits
from claimlog.store import Store
kernels, threads, store = json.loads(sys.stdin.read())
bits = kernel_bits(kernels, threads, Store(Path(store)) if store else None)
print(fingerprint(bits))
"""


def fingerprint_under(
    variables: Mapping[str, str], threads: int, kernels: Iterable[str], store: Path | None
) -> str:
    """The fingerprint a session with the kernel `variables` (NOT_SET: left to the machine)
    and `threads` threads computes on, on this machine: asked of a process of its own, since
    torch reads the variables once, as it is imported (kept in `store`, pytest's cache, as
    `kernel_bits` keeps it). "" for a workshop whose record names no kernels."""
    chosen = sorted(set(kernels))
    if not chosen:
        return ""
    env = {k: v for k, v in os.environ.items() if k not in (*VARIABLES, SET_BY_CLAIMLOG)}
    env.update({k: v for k, v in variables.items() if v != NOT_SET})
    answer = subprocess.run(
        [sys.executable, "-c", _ASK_KERNELS],
        input=json.dumps([chosen, threads, str(store) if store else ""]),
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return answer.stdout.strip()


def kept_kernel_bits(
    signatures: Iterable[str], threads: int, store: Store
) -> dict[str, str] | None:
    """`kernel_bits` as a process on this platform kept them in `store`, or None: known
    without importing torch."""
    chosen = sorted(set(signatures))
    if not chosen:
        return {}
    key = _kernel_bits_key(chosen, threads)
    return Memo(store, "kernels' bits").peek(key, _bits_of)


# -- the platform ---------------------------------------------------------------------------

FAMILIES = ("AVX512", "AVX2", "AVX", "SSE", "SVE", "ASIMD", "NEON")


def numpy_simd(without: Iterable[str] = ()) -> str:
    """The widest vectors numpy dispatches to in this process: "AVX512" or "AVX2" (or the
    widest it has), read from the dispatch targets it enabled, after NPY_DISABLE_CPU_FEATURES
    (imports numpy); `without`: as if those targets were turned off too."""
    core = _numpy_core()
    features: Mapping[str, bool] = core.__cpu_features__
    off = set(without)
    targets = [*core.__cpu_baseline__, *core.__cpu_dispatch__]
    return simd_of([t for t in targets if features.get(t) and t not in off])


def simd_of(enabled: list[str]) -> str:
    """The widest family among dispatch targets: ["AVX2", "AVX512F"] -> "AVX512"."""
    for family in FAMILIES:
        if any(name.startswith(family) for name in enabled):
            return family
    return "baseline"


# Beside the identity in snapshots/environment.json: the workshop's kernels, each with what it
# gave on the reference (`claimlog.kernels`).
KERNELS = "kernels"

NO_MKL = "absent"  # torch's arm64 builds have no MKL


def mkl_branch(value: str, machine: str | None = None) -> str:
    """MKL's code path from MKL_CBWR: its COMPATIBLE branch, another one asked for, or "AUTO"
    (MKL's own choice by CPU, its default); on a `machine` other than x86-64, "absent"."""
    if not x86_64(machine):
        return NO_MKL
    return "AUTO" if value in (NOT_SET, "") else value.upper()


def onednn_cap(value: str) -> str:
    """oneDNN's cap from ONEDNN_MAX_CPU_ISA: the ISA asked for, or "uncapped"."""
    return "uncapped" if value in (NOT_SET, "") else value.upper()


@dataclass(frozen=True)
class Platform:
    """What computed a set of numbers. The identity's fields first; then, for people, what
    else was there."""

    machine: str  # "x86_64", "aarch64"
    torch: str  # as torch reports it: "2.13.0+cpu"
    aten: str  # the kernels ATen dispatches to: "AVX2", "AVX512", "DEFAULT"
    mkl: str  # MKL's branch: "COMPATIBLE", or "AUTO" (its own choice by CPU)
    onednn: str  # oneDNN's cap: "AVX2", or "uncapped"
    numpy: str  # "2.2.6"
    numpy_simd: str  # the widest vectors numpy dispatches to: "AVX2"
    threads: int  # torch's intra-op threads
    cpu: str = ""  # "AuthenticAMD family 25 model 1 (AMD EPYC)"; "" if unknown (an identity)
    # What the workshop's own kernels give here (`claimlog.kernels.fingerprint`): "" where the
    # record names no kernels yet (a workshop never updated, an old record).
    fingerprint: str = ""
    emulation: str = ""  # "QEMU 10.0.13, -cpu neoverse-n1"; "" on the machine itself
    python: str = ""
    matplotlib: str = ""
    kernels: Mapping[str, str] = field(default_factory=dict)  # each variable, as set
    set_by_user: tuple[str, ...] = ()

    @classmethod
    def here(
        cls, threads: int, facts: Mapping[str, str] | None = None, fingerprint: str = ""
    ) -> Platform:
        """This process's platform, computing with `threads` intra-op threads. `facts`:
        what torch says of it (`torch_facts`); without them, torch is asked. `fingerprint`:
        what the workshop's kernels give here (`kernel_bits`), "" if unknown."""
        facts = _ask_torch() if facts is None else facts
        variables = {name: os.environ.get(name, NOT_SET) for name in VARIABLES}
        return cls(
            machine=_python_platform.machine(),
            torch=facts["torch"],
            aten=facts["cpu capability"].upper(),
            mkl=mkl_branch(variables["MKL_CBWR"]),
            onednn=onednn_cap(variables["ONEDNN_MAX_CPU_ISA"]),
            numpy=metadata.version("numpy"),
            numpy_simd=numpy_simd(),
            threads=threads,
            cpu=cpu(),
            fingerprint=fingerprint,
            emulation=os.environ.get(EMULATION, ""),
            python=_python_platform.python_version(),
            matplotlib=installed("matplotlib"),
            kernels=variables,
            set_by_user=tuple(set_by_user()),
        )

    @property
    def cpu_model(self) -> str:
        """The CPU without what follows its model: "AuthenticAMD family 25 model 1",
        "Arm Neoverse-N1"."""
        return self.cpu.split(" (")[0]

    @property
    def reproducible_across_cpus(self) -> bool:
        """Whether the CPU's name is left out of the identity: under MKL's COMPATIBLE branch
        the fingerprint says what the CPU computes (two machines whose kernels give the same
        bits are one platform, whatever they are called; two that differ, two platforms).
        Under MKL's own branch (AUTO) the CPU is named besides: a path chosen by model may
        differ on data the fingerprint's inputs never reach."""
        return self.mkl.split(",")[0] == "COMPATIBLE"

    def identity(self) -> dict[str, str]:
        """What of this platform moves the floats: the reference is one of these."""
        out = {
            "machine": self.machine,
            "torch": self.torch,
            "numpy": self.numpy,
            "numpy simd": self.numpy_simd,
            "aten": self.aten,
            "mkl": self.mkl,
            "onednn": self.onednn,
            "threads": str(self.threads),
        }
        if not self.reproducible_across_cpus:
            out["cpu"] = self.cpu or "not recorded"
        if self.fingerprint:
            out["fingerprint"] = self.fingerprint
        if self.emulation:
            # Expected to compute as that CPU model does, but nobody here has compared yet.
            out["emulated by"] = self.emulation
        return out

    @property
    def id(self) -> str:
        """A folder name for the identity:
        "x86_64-torch-2.13.0-cpu-numpy-2.2.6-avx2-aten-avx2-mkl-compatible-onednn-avx2-1t"."""
        i = self.identity()
        parts = [
            i["machine"],
            f"torch-{i['torch']}",
            f"numpy-{i['numpy']}-{i['numpy simd']}",
            f"aten-{i['aten']}",
            f"mkl-{i['mkl']}",
            f"onednn-{i['onednn']}",
            f"{i['threads']}t",
        ]
        if "cpu" in i:
            parts.append(self.cpu_model or i["cpu"])  # vendor, family and model; not the brand
        if "fingerprint" in i:
            parts.append(f"bits-{i['fingerprint'][:8]}")
        if "emulated by" in i:
            parts.append("emulated")
        kept = "".join(c if c.isalnum() or c in "._" else "-" for c in "-".join(parts).lower())
        return "-".join(part for part in kept.split("-") if part)

    def cache_fields(self) -> dict[str, str]:
        """What a result kept in pytest's cache is keyed by: the identity, and besides it
        everything that might move a bit and costs nothing to name (the CPU whatever MKL's
        branch, the kernel variables as set, the Python): a cache never bets on a claim of
        reproducibility it cannot check."""
        kept = self.to_json()
        for name in ("matplotlib", "set by the user"):
            kept.pop(name)
        return kept

    def describe(self) -> str:
        """One line for people: the versions, the kernels, the threads, and the CPU."""
        said = [f"python {self.python}"] if self.python else []
        said += [f"torch {self.torch}", f"numpy {self.numpy} ({self.numpy_simd})"]
        said += [f"ATen {self.aten}", f"MKL {self.mkl}", f"oneDNN {self.onednn}"]
        said.append(f"{self.threads} thread{'s' if self.threads != 1 else ''}")
        if self.cpu:
            where = f"on {self.cpu}"
        elif self.reproducible_across_cpus:
            where = f"on any {self.machine} CPU"
        else:
            where = "on a CPU not recorded"
        if self.emulation:
            where += f", emulated by {self.emulation}"
        if self.fingerprint:
            where += f", its kernels giving the bits {self.fingerprint}"
        if self.set_by_user:
            where += f" ({', '.join(self.set_by_user)} set by the user)"
        return ", ".join([*said, where])

    def with_settings(self, variables: Mapping[str, str], threads: int, best_aten: str) -> Platform:
        """The platform a session on this machine computes on with the kernel `variables`
        set as given (NOT_SET: left to the machine, whose widest ATen kernels are
        `best_aten`) and `threads` threads: what the sweep expects a job to record. Off
        x86-64 the kernel variables name kernels that are not there: only the threads
        change."""
        if not x86_64(self.machine):
            return replace(self, aten=best_aten, threads=threads)
        aten = variables.get("ATEN_CPU_CAPABILITY", NOT_SET)
        return replace(
            self,
            aten=best_aten if aten == NOT_SET else aten.upper(),
            mkl=mkl_branch(variables.get("MKL_CBWR", NOT_SET)),
            onednn=onednn_cap(variables.get("ONEDNN_MAX_CPU_ISA", NOT_SET)),
            threads=threads,
            kernels=dict(variables),
        )

    # -- as JSON: the session record, the fragments, the run cache ---------------------------
    def to_json(self) -> dict[str, str]:
        """The record's form (the fragments' "platform"), every value a string."""
        return {
            "python": self.python,
            "torch": self.torch,
            "numpy": self.numpy,
            "matplotlib": self.matplotlib,
            "machine": self.machine,
            "cpu": self.cpu,
            "cpu capability": self.aten,
            "numpy simd": self.numpy_simd,
            **{name: self.kernels.get(name, NOT_SET) for name in VARIABLES},
            "mkl": self.mkl,
            "onednn": self.onednn,
            "set by the user": ", ".join(self.set_by_user) or "none",
            "torch threads": str(self.threads),
            **({"fingerprint": self.fingerprint} if self.fingerprint else {}),
            **({"emulated by": self.emulation} if self.emulation else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Platform:
        """A platform from `to_json`'s form (older records: MKL's branch and oneDNN's cap
        from their variables) or from an identity (`identity()`, environment.json)."""
        d = {str(k): str(v) for k, v in data.items() if k != KERNELS}
        if "aten" in d:  # an identity
            return cls(
                machine=d["machine"],
                torch=d["torch"],
                aten=d["aten"],
                mkl=d["mkl"],
                onednn=d["onednn"],
                numpy=d["numpy"],
                numpy_simd=d["numpy simd"],
                threads=int(d["threads"]),
                cpu=d.get("cpu", ""),
                fingerprint=d.get("fingerprint", ""),
                emulation=d.get("emulated by", ""),
            )
        user = d.get("set by the user", "none")
        return cls(
            machine=d.get("machine", "?"),
            torch=d.get("torch", "?"),
            aten=d.get("cpu capability", "?").upper(),
            # Records before these keys: MKL's branch and oneDNN's cap from their variables.
            mkl=d.get("mkl") or mkl_branch(d.get("MKL_CBWR", NOT_SET), d.get("machine")),
            onednn=d.get("onednn") or onednn_cap(d.get("ONEDNN_MAX_CPU_ISA", NOT_SET)),
            numpy=d.get("numpy", "?"),
            numpy_simd=d.get("numpy simd", "not recorded"),
            threads=int(d.get("torch threads", "0") or 0),
            cpu=d.get("cpu", ""),
            fingerprint=d.get("fingerprint", ""),
            emulation=d.get("emulated by", ""),
            python=d.get("python", ""),
            matplotlib=d.get("matplotlib", ""),
            kernels={name: d[name] for name in VARIABLES if name in d},
            set_by_user=() if user in ("none", "") else tuple(user.split(", ")),
        )


def platform_id(data: Mapping[str, Any]) -> str:
    """The id of a platform kept as JSON (a record's, a fragment's, or an identity)."""
    return Platform.from_json(data).id
