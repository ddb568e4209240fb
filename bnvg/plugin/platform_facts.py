"""What torch says of this process's platform, kept in pytest's cache.

The run keys, the session record and the standing need torch's version and the kernels ATen
dispatches to. `bnvg.experiment.torch_facts` asks torch once per platform and keeps the
answer in pytest's cache folder (`.pytest_cache/d/bnvg-torch`); a session that finds it there
imports no torch only to ask.
"""

from __future__ import annotations

import pytest

from bnvg.store import Store

CACHE_FOLDER = "bnvg-torch"
FACTS = pytest.StashKey[dict[str, str]]()


def process_facts(config: pytest.Config) -> dict[str, str]:
    """torch's facts of this process's platform, found once per process."""
    if FACTS not in config.stash:
        from bnvg.experiment.torch_facts import torch_facts

        pytest_cache = getattr(config, "cache", None)
        store = Store(pytest_cache.mkdir(CACHE_FOLDER)) if pytest_cache is not None else None
        config.stash[FACTS] = torch_facts(store)
    return config.stash[FACTS]
