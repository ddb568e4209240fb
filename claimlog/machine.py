"""What this machine is, asked without changing it: its CPU, what numpy dispatches to, what
torch computes with (kept in pytest's cache, so that a session that finds its results kept
never imports torch to tell its platform), and torch imported for the whole process.

`claimlog.platform` makes a `Platform` of these answers; nothing here decides a kernel.
"""

from __future__ import annotations

import gc
import json
import os
import platform as _python_platform
import subprocess
import sys
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import import_module, metadata
from pathlib import Path
from typing import Any

from claimlog.store import Entry, Memo, Store, digest


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


NUMPY_FOLDER = "claimlog-numpy"  # where pytest's cache keeps numpy's dispatch targets


def numpy_build_key() -> str:
    """What numpy's dispatch targets depend on, read without importing numpy: its compiled
    core, by path, size and time (a numpy installed again in the same place is another file).
    "" where there is no numpy to find."""
    import importlib.util

    spec = importlib.util.find_spec("numpy")
    folders = list(spec.submodule_search_locations or ()) if spec else []
    cores = sorted(
        core for folder in folders for core in Path(folder).glob("*core/_multiarray_umath.*")
    )
    if not cores:
        return ""
    found = cores[0].stat()
    return digest(json.dumps([str(cores[0]), found.st_size, found.st_mtime_ns]))


@cache
def _ask_numpy() -> tuple[str, ...]:
    """numpy's dispatch targets, asked in a child process (this one must not import numpy
    before NPY_DISABLE_CPU_FEATURES is set): once per process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NPY_")}
    answer = subprocess.run(
        [sys.executable, "-c", _ASK_NUMPY], env=env, capture_output=True, text=True, check=True
    )
    return tuple(answer.stdout.split())


def numpy_dispatch_targets(store: Store | None = None) -> tuple[str, ...]:
    """The dispatch targets the installed numpy was built with ("AVX2", "AVX512F", ...,
    "AVX512_SPR" in newer releases): asked of numpy in a child process while this one has
    not imported it, because numpy reads NPY_DISABLE_CPU_FEATURES once, as it is imported.
    Starting Python to ask costs a tenth of a second, so the answer is kept in `store`
    (pytest's cache) under the key of numpy's build; without a store, numpy is asked."""
    if "numpy" in sys.modules:
        return tuple(_numpy_core().__cpu_dispatch__)
    key = numpy_build_key()
    if not key:
        return _ask_numpy()  # and numpy's own error says what is missing
    return Memo(store, "numpy's build").get(
        "numpy's dispatch targets",
        key,
        _ask_numpy,
        encode=lambda targets: " ".join(targets).encode(),
        decode=lambda entry: tuple(entry.content.decode().split()),
    )


def numpy_reference(store: Store | None = None) -> str:
    """The reference's NPY_DISABLE_CPU_FEATURES: every AVX-512 dispatch target of the
    installed numpy, whatever its release ("" where it has none: nothing to turn off). numpy
    warns of a name it does not dispatch to, so the names are numpy's own. `store`: where
    pytest's cache keeps them (`numpy_dispatch_targets`)."""
    return " ".join(t for t in numpy_dispatch_targets(store) if t.startswith("AVX512"))


TORCH_FACTS = ("torch", "cpu capability", "widest capability")


TORCH_FACTS_FOLDER = "claimlog-torch"  # where pytest's cache keeps them (its d/ folder)


def torch_facts_key(environ: Mapping[str, str] = os.environ) -> str:
    """What torch's answer depends on, read without torch: the installed torch (version and
    folder), the CPU (vendor, model and feature flags) and ATEN_CPU_CAPABILITY (of `environ`,
    the variables of the process that asks)."""
    torch = metadata.distribution("torch")
    inputs = {
        "torch": torch.version,
        "torch folder": str(torch.locate_file("torch")),
        "cpu": cpu(),
        "cpu flags": cpu_flags(),
        "machine": _python_platform.machine(),
        "ATEN_CPU_CAPABILITY": environ.get("ATEN_CPU_CAPABILITY", ""),
        "facts": TORCH_FACTS,  # a fact added is a new key, never an old entry read as damaged
    }
    return digest(json.dumps(inputs, sort_keys=True))


def import_torch() -> Any:
    """torch, computing with the session's thread count (`THREADS`): what the engine
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


def ask_torch() -> dict[str, str]:
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
    return Memo(store, "torch facts").get(
        "torch's facts",
        torch_facts_key(),
        ask_torch,
        encode=lambda answer: json.dumps(answer, sort_keys=True).encode(),
        decode=_facts_of,
    )


def kept_torch_facts(store: Store) -> dict[str, str] | None:
    """torch's facts of this process as a process on this platform kept them in `store`,
    or None: known without importing torch."""
    return Memo(store, "torch facts").peek(torch_facts_key(), _facts_of)


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


# The intra-op thread count torch is to compute with, in this process and those it starts
# (set with the reference kernels, by `claimlog.platform.apply`): whoever imports torch first
# (a workshop's own module, or `import_torch` here) tells it the count.
THREADS = "CLAIMLOG_TORCH_THREADS"
