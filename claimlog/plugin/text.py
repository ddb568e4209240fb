"""claimlog.text: the workshop's text, a feature plugin of its own. `-p no:claimlog.text`
turns it off, and `--workshop` is then unknown.

This module is what pytest loads through the entry point: the option `--workshop DIR`, the
ini option `claimlog_workshop`, and, where a session checks the text (`workshop_text`), the
`WorkshopText` it registers (`claimlog.plugin.citations`), which collects one pytest item per
citation of the log in the text and, through the core's hooks (`claimlog.plugin.hookspecs`),
keeps the text's documents in an update's transaction, rewrites their quotes and refreshes
their notebooks once the log is written, and adds what it found to the summary and the
claims report.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from claimlog.plugin.session import ClaimSession

# Nothing heavier than pytest is imported here: pytest loads this module as it starts, before
# claimlog sets the reference kernels that numpy reads as it is imported.
INI = "claimlog_workshop"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("claimlog-text", "claimlog: the workshop's text")
    group.addoption(
        "--workshop",
        dest=INI,
        metavar="DIR",
        help="also check every citation of the log in the workshop's text under DIR (default: "
        "the ini option claimlog_workshop): Markdown and MyST (.md), Quarto (.qmd) and Jupyter "
        "notebooks (.ipynb), one test per citation, run in one process after the claims; "
        "with --snapshot-update, rewrite each quote whose number moved",
    )
    parser.addini(INI, "claimlog: the workshop's text, checked on every run (as --workshop DIR)")


def workshop_text(config: pytest.Config) -> Path | None:
    """The workshop's text this session checks: --workshop DIR; or the ini option's folder,
    in a session that runs every claim (`pytest tests/` and `-k eval_bug` leave it alone: a
    narrowed run verifies too few lines for the whole text)."""
    from claimlog.plugin.options import narrowed, path_setting, runs_claims

    given = config.getoption(INI)
    folder = path_setting(config, INI)
    if folder is None or (not given and (narrowed(config) or not runs_claims(config))):
        return None
    if not folder.is_dir():
        where = "--workshop" if given else f"the ini option {INI}:"
        raise pytest.UsageError(f"{where} {folder}: no such folder")
    return folder


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """Citations read the whole log: a session that checks the text runs in one process."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return 0 if workshop_text(config) is not None else None


@pytest.hookimpl(optionalhook=True)
def pytest_claimlog_configure(session: ClaimSession) -> None:
    """Where this session checks the text: its plugin object, registered now."""
    config = session.config
    folder = workshop_text(config)
    if folder is None:
        return
    from claimlog.plugin.citations import WORKSHOP_TEXT, WorkshopText

    if str(folder) not in config.args:
        config.args.append(str(folder))  # so its documents are collected
    text = config.stash[WORKSHOP_TEXT] = WorkshopText(session, folder)
    config.pluginmanager.register(text, "claimlog.text.workshop")
