"""The hooks claimlog's core calls for its feature plugins, as pytest-html's hookspecs let
others add to its report.

The core (`claimlog.plugin`) runs the claims, writes the log and the record, and says what
happened; a feature (the workshop's text, `claimlog.plugin.text`) is a plugin of its own,
`-p no:`-able, that learns what it needs through these hooks and adds what it found. The core
imports no feature: it calls the hooks, and each feature that is registered answers.

Each hook is called with keyword arguments: the `ClaimSession` (`session`) or the
`Controller` (`controller`), which is on the controller's process only.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from claimlog.plugin.controller import Controller
    from claimlog.plugin.session import ClaimSession

hookspec = pytest.hookspec  # the marker pluggy reads, under pytest's project name


@hookspec
def pytest_claimlog_configure(session: ClaimSession) -> None:
    """The session has read its settings, and no update has begun: a feature registers here
    the plugin object that does its work, if this session uses it."""


@hookspec
def pytest_claimlog_update_documents(session: ClaimSession) -> list[Path]:
    """The files outside the record that an update may rewrite (a feature's documents): the
    update keeps a copy of each and puts it back if it does not complete."""
    raise NotImplementedError  # a spec: pluggy never calls it


@hookspec
def pytest_claimlog_finish(controller: Controller, session: pytest.Session) -> None:
    """On the controller, once every item has reported and the log is written (`controller.
    log`); under an update, before it commits or rolls back (`controller.rolls_back`). A
    feature writes what follows from the log here, inside the update's transaction."""


@hookspec(firstresult=True)
def pytest_claimlog_kernels_changed(
    session: ClaimSession, before: list[str], after: list[str], reference: str
) -> list[str] | None:
    """A full update recorded other kernels than the record named (`before`, now `after`): an
    edit made the workshop call others, another shape, say. Every platform the evidence
    names was fingerprinted by `before`, and none can be compared with one fingerprinted by
    `after`. The feature that holds the evidence names each fragment again by `after` where
    it can, retires the rest, and merges the tables with `reference` for reference, inside
    the update's transaction; it returns what it says of it. None, where no feature answers:
    the update then writes nothing."""
    raise NotImplementedError


@hookspec
def pytest_claimlog_summary(controller: Controller) -> list[tuple[str, list[str]]]:
    """Sections of the terminal summary, each a title and its lines, after what moved and
    before where this run computed."""
    raise NotImplementedError


@hookspec
def pytest_claimlog_report(controller: Controller) -> list[str]:
    """Markdown lines for the claims report (--claims-report), after what moved and before
    the claims, section by section."""
    raise NotImplementedError
