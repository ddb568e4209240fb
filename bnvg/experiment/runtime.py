"""torch, as the workshop runs it: with the intra-op thread count the session chose.

Every module of bnvg that computes with torch imports it from here
(`from bnvg.experiment.runtime import torch`), so whichever imports torch first sets the
thread count before anything is computed: the thread count changes the training-end numbers.
The session chooses it, with the reference kernels, before any claim runs
(`claimlog.platform.apply`).
"""

from __future__ import annotations

import os

import torch

# `claimlog.machine.THREADS`, named here rather than imported: the platform asks
# torch its facts through this module.
THREADS = "CLAIMLOG_TORCH_THREADS"

if os.environ.get(THREADS):
    torch.set_num_threads(int(os.environ[THREADS]))

__all__ = ["torch"]
