"""The environment that computed a set of numbers, stored beside the snapshots.

When a number drifts, the reader needs to know why: the torch release, the CPU kernels torch
chose (its CPU capability) and the thread count all move the training-end numbers.
"""

from __future__ import annotations

import json
import os
import platform
from importlib import metadata
from pathlib import Path

from bnvg.atomic import atomic_write

FILE = "environment.json"


def current(threads: int | None = None) -> dict[str, str]:
    """This process's environment (imports torch)."""
    import torch

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": metadata.version("numpy"),
        "matplotlib": metadata.version("matplotlib"),
        "cpu capability": torch.backends.cpu.get_cpu_capability(),
        "ATEN_CPU_CAPABILITY": os.environ.get("ATEN_CPU_CAPABILITY", "(not set)"),
        "torch threads": str(threads if threads is not None else torch.get_num_threads()),
        "machine": platform.machine(),
    }


def load(snapshot_dir: Path) -> dict[str, str]:
    path = snapshot_dir / FILE
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def save(snapshot_dir: Path, env: dict[str, str]) -> None:
    # Atomic: it sits beside the snapshots, which an interrupted run must never damage.
    atomic_write(snapshot_dir / FILE, json.dumps(env, indent=2, sort_keys=True) + "\n")


def describe(env: dict[str, str]) -> str:
    if not env:
        return "(unknown: no snapshots/environment.json)"
    keys = ["python", "torch", "numpy", "matplotlib", "cpu capability", "torch threads"]
    return ", ".join(f"{k} {env[k]}" for k in keys if k in env)
