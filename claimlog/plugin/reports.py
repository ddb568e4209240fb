"""claimlog.reports: the reports an author reads instead of the terminal, a feature plugin
of its own. `-p no:claimlog.reports` turns it off: `--claims-report` is then unknown, and
pytest-html's report has no claim column.

This module is what pytest loads through the entry point: the option `--claims-report PATH`
and, where a session writes a claims report or pytest-html writes its own, the `Reports` it
registers (`claimlog.plugin.reporting`, which renders them).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from claimlog.plugin.session import ClaimSession

# Nothing heavier than pytest is imported here: pytest loads this module as it starts, before
# claimlog sets the reference kernels that numpy reads as it is imported.
OPTION = "claimlog_claims_report"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("claimlog-reports", "claimlog: reports")
    group.addoption(
        "--claims-report",
        dest=OPTION,
        metavar="PATH",
        help="write a Markdown report of every claim: its sentence, its readings here and in "
        "the snapshot, what the platforms print and how general it is over seeds; with "
        "--workshop, what the text cites and the numbers that cite no line",
    )


@pytest.hookimpl(optionalhook=True)
def pytest_claimlog_configure(session: ClaimSession) -> None:
    """Where this session writes a report: its plugin object, registered now, once the
    report's folder is known to be writable."""
    config = session.config
    given = config.getoption(OPTION)
    path = Path(given) if given else None
    html = config.pluginmanager.hasplugin("html") and bool(config.getoption("htmlpath", None))
    if path is None and not html:
        return
    from claimlog.plugin.options import is_controller, refuse_unwritable_folder
    from claimlog.plugin.reporting import Reports

    if path is not None and is_controller(config):
        refuse_unwritable_folder("--claims-report", path.parent, session.settings.places)

    config.pluginmanager.register(Reports(session, path, html), "claimlog.reports.session")
