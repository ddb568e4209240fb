"""Where the plugin reads and writes, as the command line and the rootdir decide."""

from __future__ import annotations

from pathlib import Path

import pytest

from bnvg.fragility import Fragility
from bnvg.fragility import load as load_fragility


def is_xdist_controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput") and getattr(config.option, "dist", "no") != "no"


def snapshot_dir(config: pytest.Config) -> Path:
    return config.rootpath / "snapshots"


def results_log_path(config: pytest.Config) -> Path:
    option = config.getoption("bnvg_results_log")
    return Path(option) if option else config.rootpath / "captures" / "results.log"


def diagrams_path(config: pytest.Config) -> Path:
    option = config.getoption("bnvg_diagrams")
    return Path(option) if option else config.rootpath / "diagrams"


FRAGILITY = pytest.StashKey[Fragility]()


def fragility_of(config: pytest.Config) -> Fragility:
    if FRAGILITY not in config.stash:
        config.stash[FRAGILITY] = load_fragility(snapshot_dir(config))
    return config.stash[FRAGILITY]
