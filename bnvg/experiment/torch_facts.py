"""What torch says about this process's platform, known without importing torch.

Two facts of a platform come from torch itself: its version as torch reports it
("2.13.0+cpu") and the vector kernels ATen dispatches to ("AVX2"), which depend on the CPU and
on ATEN_CPU_CAPABILITY. Importing torch only to ask costs a second or more, so a process that
asks records the answer in pytest's cache, under a key of everything the answer depends on
that can be read without torch: the installed torch (version and folder), the CPU (its
vendor, model and feature flags) and ATEN_CPU_CAPABILITY. A later process on the same
platform reads it back; another platform finds no entry and asks torch.
"""

from __future__ import annotations

import json
import os
import platform
from importlib import metadata

from bnvg.experiment import kernels
from bnvg.store import Entry, Store, digest

FACTS = ("torch", "cpu capability")


def facts_key() -> str:
    """The key of this platform's facts: what torch's answer depends on, read without torch."""
    torch = metadata.distribution("torch")
    inputs = {
        "torch": torch.version,
        "torch folder": str(torch.locate_file("torch")),
        "cpu": kernels.cpu(),
        "cpu flags": kernels.cpu_flags(),
        "machine": platform.machine(),
        "ATEN_CPU_CAPABILITY": os.environ.get("ATEN_CPU_CAPABILITY", ""),
    }
    return digest(json.dumps(inputs, sort_keys=True))


def asked() -> dict[str, str]:
    """The facts, from torch (imports it)."""
    from bnvg.experiment.runtime import torch

    return {
        "torch": str(torch.__version__),  # a TorchVersion, which xdist cannot ship
        "cpu capability": torch.backends.cpu.get_cpu_capability(),
    }


def torch_facts(store: Store | None = None) -> dict[str, str]:
    """{"torch": ..., "cpu capability": ...} for this process: from `store` if a process on
    this platform recorded them there, else from torch (and then recorded)."""
    if store is None:
        return asked()
    key = facts_key()
    entry = store.get(key)
    if isinstance(entry, Entry):
        try:
            found = json.loads(entry.content)
        except ValueError:
            found = None
        if isinstance(found, dict) and set(found) == set(FACTS):
            return {k: str(v) for k, v in found.items()}
    facts = asked()
    store.put(key, json.dumps(facts, sort_keys=True).encode(), {"what": "torch's facts"})
    return facts
