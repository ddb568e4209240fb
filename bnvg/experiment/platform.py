"""The platform that computed a set of numbers: the software and the CPU kernels it used.

When a number drifts, the reader needs to know why: the torch release, the CPU kernels torch
chose (its CPU capability) and the thread count all move the training-end numbers.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from importlib import metadata


def current(threads: int | None = None) -> dict[str, str]:
    """This process's platform (imports torch)."""
    import torch

    return {
        "python": platform.python_version(),
        "torch": str(torch.__version__),  # a TorchVersion, which xdist cannot ship
        "numpy": metadata.version("numpy"),
        "matplotlib": metadata.version("matplotlib"),
        "cpu capability": torch.backends.cpu.get_cpu_capability(),
        "ATEN_CPU_CAPABILITY": os.environ.get("ATEN_CPU_CAPABILITY", "(not set)"),
        "torch threads": str(threads if threads is not None else torch.get_num_threads()),
        "machine": platform.machine(),
    }


def describe(env: Mapping[str, str]) -> str:
    """One line: the versions, the CPU capability and the thread count."""
    if not env:
        return "(unknown)"
    keys = ["python", "torch", "numpy", "matplotlib", "cpu capability", "torch threads"]
    return ", ".join(f"{k} {env[k]}" for k in keys if k in env)
