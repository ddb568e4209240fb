"""claimlog.evidence: the sweep's evidence, a feature plugin of its own.
`-p no:claimlog.evidence` turns it off.

This module is what pytest loads through the entry point. As a session configures, it gives
the session the sweep's evidence (`claimlog.plugin.standing.SweptEvidence`) in place of the
core's, which knows none: each claim's key, the sweep's table, where this platform stands
(the reference, a platform the evidence holds, or new) and whether a claim changed since the
snapshots were recorded.

Without it a session judges its numbers by the record alone: exactly on the reference, and,
on any other platform, by each claim's sentence, a number that moved being drift. The claims
marked `evidence` (they read the sweep's tables) are skipped, saying why; an update records no
claim's key (`snapshots/keys.json` is removed), and the update's sweep, which computes the
stale evidence, has nothing to compute.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from claimlog.plugin.session import ClaimSession

# Nothing heavier than pytest is imported here: pytest loads this module as it starts, before
# claimlog sets the reference kernels that numpy reads as it is imported.


@pytest.hookimpl(optionalhook=True)
def pytest_claimlog_configure(session: ClaimSession) -> None:
    """The sweep's evidence, in place of none, registered as the plugin that keeps the
    claims' keys."""
    from claimlog.plugin.standing import SweptEvidence

    evidence = session.evidence = SweptEvidence(session)
    session.config.pluginmanager.register(evidence, "claimlog.evidence.swept")
