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
**fingerprint** is what the workshop's own kernels give here (`claimlog.kernels`: heard in
its computations by a full update, `claimlog.hearing`, and replayed on fixed inputs): under MKL's
COMPATIBLE branch it speaks for the CPU, whose name is then no part of the identity, so two
machines whose kernels give the same bits are one platform whatever they are called, and two
that differ are two. Two runs with the same identity compute the same numbers; the evidence of
one is the other's. The reference is such an identity (`snapshots/environment.json`, with the
kernels its fingerprint replays), not a machine.
"""

from __future__ import annotations

import json
import os
import platform as _python_platform
import sys
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import Any

from claimlog.machine import (
    THREADS,
    ask_torch,
    cpu,
    has_avx2,
    installed,
    numpy_reference,
    numpy_simd,
    x86_64,
)
from claimlog.store import Store

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

# What this project set itself, as JSON {variable: value}, so that a process it starts (an
# xdist worker, a sweep job) can tell its parent's defaults from the user's choices.
SET_BY_CLAIMLOG = "CLAIMLOG_KERNEL_DEFAULTS"

USER, REFERENCE_DEFAULT, MACHINE = "user", "reference", "machine"


# Set by `nox -s arm64` in the environment of what it runs under QEMU's user-mode emulation:
# "QEMU 10.0.13, -cpu neoverse-n1". A platform computed under emulation says so.
EMULATION = "CLAIMLOG_EMULATION"


def _ours(env: Mapping[str, str]) -> dict[str, str]:
    try:
        found = json.loads(env.get(SET_BY_CLAIMLOG) or "{}")
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def apply(
    native: bool = False,
    environ: MutableMapping[str, str] | None = None,
    threads: int | None = None,
    store: Store | None = None,
) -> dict[str, str]:
    """Set the reference kernels in `environ` (this process's environment by default) where
    the user has not set them; with `native`, leave torch's kernels to the machine (numpy's
    cap stays: numpy cannot be told again once imported). Given `threads`, torch's intra-op
    thread count too (`THREADS`; a torch imported already is told at once). The one place
    claimlog writes the environment, which the processes it starts inherit. `store`: where
    pytest's cache keeps numpy's dispatch targets (`numpy_reference`). Returns, per kernel
    variable, who decided it: "user", "reference" or "machine"."""
    env = os.environ if environ is None else environ
    if threads is not None:
        env[THREADS] = str(threads)
        if environ is None and "torch" in sys.modules:
            sys.modules["torch"].set_num_threads(threads)
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
            value = TORCH_REFERENCE[name] if name in TORCH_REFERENCE else numpy_reference(store)
            if not value:
                origins[name] = MACHINE  # a numpy with no AVX-512 targets: nothing to turn off
                continue
            env[name] = ours[name] = value
            origins[name] = REFERENCE_DEFAULT
    if ours:
        env[SET_BY_CLAIMLOG] = json.dumps(ours, sort_keys=True)
    return origins


def applied(
    native: bool = False, threads: int | None = None, store: Store | None = None
) -> tuple[dict[str, str], list[str]]:
    """`apply` to this process's environment: who decided each kernel variable, and the
    variables it changed, in `VARIABLES`' order (a torch or numpy imported before them
    computes with its own choice, and claimlog says so)."""
    before = {name: os.environ.get(name) for name in VARIABLES}
    origins = apply(native=native, threads=threads, store=store)
    return origins, [name for name, value in before.items() if os.environ.get(name) != value]


def set_by_user(environ: Mapping[str, str] | None = None) -> list[str]:
    """The kernel variables of `environ` that the user set (after `apply`)."""
    env = os.environ if environ is None else environ
    ours = _ours(env)
    return [name for name in VARIABLES if name in env and ours.get(name) != env[name]]


# -- the platform ---------------------------------------------------------------------------


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
        facts = ask_torch() if facts is None else facts
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
        out = {key: str(getattr(self, key.replace(" ", "_"))) for key in IDENTITY_KEYS}
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


# -- the reference, as recorded ----------------------------------------------------------------
# What `Platform.identity()` always writes: a file that lacks one of them names no platform,
# however well-formed its JSON (Platform.from_json would fill the gaps with "?").
IDENTITY_KEYS = ("machine", "torch", "numpy", "numpy simd", "aten", "mkl", "onednn", "threads")


class UnreadableReference(Exception):
    """`snapshots/environment.json` is missing or damaged; the message names the file and
    says which."""


def read_reference(path: Path) -> Platform:
    """The reference, as `snapshots/environment.json` records its identity, or
    UnreadableReference saying what is wrong with the file."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise UnreadableReference(f"{path} is missing") from None
    except (OSError, ValueError) as error:  # unreadable, not UTF-8, or not JSON
        raise UnreadableReference(f"{path} is damaged ({error})") from None
    if not isinstance(data, dict):
        raise UnreadableReference(f"{path} is damaged (it holds no JSON object)")
    lacking = [key for key in IDENTITY_KEYS if key not in data]
    if lacking:
        raise UnreadableReference(f"{path} is damaged (it lacks {', '.join(lacking)})")
    try:
        return Platform.from_json(data)
    except ValueError as error:  # a thread count that is not a number
        raise UnreadableReference(f"{path} is damaged ({error})") from None
