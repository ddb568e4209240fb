"""The platform that computed a set of numbers, and the part of it that moves the floats.

A platform is what decides the bits of a result besides the code and the seeds: the torch
build, the vector kernels ATen dispatches to, MKL's code path, oneDNN's cap, the thread
count, the architecture and the numpy that draws the data (its version and vector width).
Under MKL's own choice (anything but its COMPATIBLE branch) the CPU's vendor and model
decide too, since MKL picks its path by them; under the reference kernels
(`bnvg.experiment.kernels`) they do not, and an Intel and an AMD machine are one platform.

`current()` records everything, for people; `identity()` keeps what moves the floats, and
`platform_id()` names it, for the evidence: two runs with the same identity compute the same
numbers, so the evidence of one is the other's.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from importlib import import_module, metadata

from bnvg.experiment import kernels

NOT_SET = "(not set)"


def current(threads: int, facts: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's platform, computing with `threads` intra-op threads. `facts`: what
    torch says of it (`bnvg.experiment.torch_facts`); without them, torch is asked."""
    if facts is None:
        from bnvg.experiment.torch_facts import torch_facts

        facts = torch_facts()
    return {
        "python": platform.python_version(),
        "torch": facts["torch"],
        "numpy": metadata.version("numpy"),
        "matplotlib": metadata.version("matplotlib"),
        "machine": platform.machine(),
        "cpu": kernels.cpu(),
        "cpu capability": facts["cpu capability"],  # what ATen dispatches to
        "numpy simd": numpy_simd(),
        **{name: os.environ.get(name, NOT_SET) for name in kernels.REFERENCE},
        "set by the user": ", ".join(kernels.set_by_user()) or "none",
        "torch threads": str(threads),
    }


def numpy_simd() -> str:
    """The widest vectors numpy dispatches its functions to in this process: "AVX512" or
    "AVX2" (or the widest it has), after NPY_DISABLE_CPU_FEATURES."""
    # numpy's own record of the CPU features it dispatches to (what `np.show_runtime()` shows)
    features: dict[str, bool] = import_module("numpy._core._multiarray_umath").__cpu_features__
    enabled = [name for name, on in features.items() if on]
    for family in ("AVX512", "AVX2", "AVX", "SSE", "ASIMD", "NEON"):
        if any(name.startswith(family) for name in enabled):
            return family
    return "baseline"


def mkl_branch(env: Mapping[str, str]) -> str:
    """MKL's code path: its reproducible COMPATIBLE branch, another one asked for, or "AUTO"
    (MKL's own choice by CPU, its default)."""
    value = env.get("MKL_CBWR", NOT_SET)
    return "AUTO" if value in (NOT_SET, "") else value.upper()


def reproducible_across_cpus(env: Mapping[str, str]) -> bool:
    """Whether the CPU's vendor and model leave the bits alone: MKL's COMPATIBLE branch."""
    return mkl_branch(env).split(",")[0] == "COMPATIBLE"


def identity(env: Mapping[str, str]) -> dict[str, str]:
    """What of a platform moves the floats (see the module's docstring)."""
    onednn = env.get("ONEDNN_MAX_CPU_ISA", NOT_SET)
    out = {
        "machine": env.get("machine", "?"),
        "torch": env.get("torch", "?"),
        "numpy": env.get("numpy", "?"),
        "numpy simd": env.get("numpy simd", "not recorded"),
        "aten": env.get("cpu capability", "?").upper(),
        "mkl": mkl_branch(env),
        "onednn": "uncapped" if onednn in (NOT_SET, "") else onednn.upper(),
        "threads": env.get("torch threads", "?"),
    }
    if not reproducible_across_cpus(env):
        out["cpu"] = env.get("cpu", "not recorded")
    return out


def platform_id(env: Mapping[str, str]) -> str:
    """A folder name for a platform's identity:
    "x86_64-torch-2.13.0-cpu-numpy-2.2.6-aten-avx2-mkl-compatible-onednn-avx2-1t"."""
    i = identity(env)
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
        parts.append(i["cpu"].split(" (")[0])  # vendor, family and model; not the brand name
    kept = "".join(c if c.isalnum() or c in "._" else "-" for c in "-".join(parts).lower())
    return "-".join(part for part in kept.split("-") if part)


def describe(env: Mapping[str, str]) -> str:
    """One line for people: the versions, the kernels, the threads, and the CPU."""
    if not env:
        return "(unknown)"
    i = identity(env)
    said = [f"python {env['python']}"] if "python" in env else []
    said += [f"torch {i['torch']}", f"numpy {i['numpy']} ({i['numpy simd']})"]
    said += [f"ATen {i['aten']}", f"MKL {i['mkl']}", f"oneDNN {i['onednn']}"]
    said.append(f"{i['threads']} thread{'s' if i['threads'] != '1' else ''}")
    said.append(f"on {env.get('cpu', '?')}")
    user = env.get("set by the user", "none")
    where = f"on {env.get('cpu', '?')}" + (
        f" ({user} set by the user)" if user not in ("none", "") else ""
    )
    return ", ".join([*said[:-1], where])
