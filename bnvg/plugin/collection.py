"""Which claims run, where, and what each one declares.

- A suite in which a log line has an unknown name or two owners is refused before anything
  runs; citations of the workshop's Markdown run last, because they read the log that the
  claims before them verified.
- Each claim's report carries the lines it owns and the sentence it verifies (its
  docstring), so the controller knows them whichever process ran it.
- `-n auto` (set in pyproject.toml) spreads a full suite over every core, but runs a narrowed
  selection, or a suite whose trained runs pytest's cache already holds, in this one process.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bnvg.log.layout import claimed_keys
from bnvg.plugin.outcomes import OWNS, SENTENCE, owned_keys, sentence_of
from bnvg.plugin.runs import all_runs_stored


def is_citation(item: pytest.Item) -> bool:
    return not isinstance(item, pytest.Function)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=is_citation)
    valid = set(claimed_keys())
    owner: dict[str, str] = {}
    for item in items:
        for key in owned_keys(item):
            if key not in valid:
                raise pytest.UsageError(
                    f"{item.nodeid} owns log line {key!r}, which results.log does not have; "
                    "valid names are listed by bnvg.log.layout.claimed_keys()"
                )
            if key in owner:
                first, second = sorted([owner[key], item.nodeid])
                raise pytest.UsageError(f"log line {key!r} is owned by both {first} and {second}")
            owner[key] = item.nodeid


def pytest_runtest_setup(item: pytest.Item) -> None:
    keys = owned_keys(item)
    if keys:
        item.user_properties.append((OWNS, keys))
    if not is_citation(item):
        item.user_properties.append((SENTENCE, sentence_of(item)))


def narrowed(config: pytest.Config) -> bool:
    """Whether the command line selects some claims rather than all: -k, -m, --deselect, a
    test file or a node id (a folder such as `claims/` selects all of it)."""
    return bool(
        config.option.keyword
        or config.option.markexpr
        or getattr(config.option, "deselect", None)
        or getattr(config.option, "lf", False)
        or any("::" in arg or Path(arg).is_file() for arg in config.args)
    )


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto` runs a full suite on every core, but a narrowed selection in this one
    process: `-k`, `-m`, a test file or a node id needs a few claims, and starting workers
    (each importing torch) would cost more than it saves. PYTEST_XDIST_AUTO_NUM_WORKERS
    still decides when set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    # Citations read the whole log, so --workshop runs in one process too; and when pytest's
    # cache holds every trained run, the claims leave nothing worth a second process (other
    # tests beside them, such as the project's own, still use every core).
    if narrowed(config) or config.getoption("bnvg_workshop"):
        return 0
    if only_claims(config) and all_runs_stored(config):
        return 0
    return None


def only_claims(config: pytest.Config) -> bool:
    """Whether every path on the command line lies in the claims folder (bare `pytest` runs
    the testpaths, which are the claims)."""
    claims = (config.rootpath / "claims").resolve()
    paths = [Path(arg.split("::")[0]) for arg in config.args]
    return all((config.invocation_params.dir / p).resolve().is_relative_to(claims) for p in paths)
