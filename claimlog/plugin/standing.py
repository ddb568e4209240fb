"""The sweep's evidence, as a session reads it: where its platform stands, each claim's key.

`SweptEvidence` is what the feature plugin `claimlog.evidence` (`claimlog.plugin.evidence`)
gives a session in place of the core's `Evidence`, which knows none. It reads

- **each claim's key** in this checkout (`claimlog.evidence.keys.claim_keys`: the digest of
  the code it executes), kept in pytest's cache across sessions, since slicing the code costs
  half a second a process;
- **the sweep's table** (`snapshots/evidence/fragility.json`), and its fresh part: a claim
  whose key changed since the sweep has no evidence, and its readings are judged without it;
- **where the platform stands**: the reference (its identity is the record's), a platform a
  committed fragment holds at these seeds (its numbers are compared with that fragment's), or
  new;
- **whether a claim changed since the snapshots were recorded**: the keys the update that
  recorded them kept (`snapshots/keys.json`) against this checkout's, which tells an edit (a
  failure) from a number a new platform moved (drift), where no sweep measured the workshop.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property

import pytest

from claimlog.declaration import seed_variant_name
from claimlog.evidence.fragility import Fragility
from claimlog.evidence.fragility import load as load_fragility
from claimlog.evidence.keys import claim_keys, claim_of
from claimlog.evidence.verdicts import HELD, NEW, Standing
from claimlog.plugin.session import ClaimSession, Evidence
from claimlog.store import read_json

CLAIM_KEYS_CACHE = "claim-keys"  # each claim's evidence key, in pytest's cache


class SweptEvidence(Evidence):
    """The sweep's evidence of a session's workshop (see the module), read once a process;
    a plugin too, which keeps the claims' keys in pytest's cache as the session starts."""

    active = True

    def __init__(self, session: ClaimSession) -> None:
        super().__init__(session)
        self._committed: Fragility | None = None
        self._fresh: Fragility | None = None

    @cached_property
    def keys(self) -> Mapping[str, str]:
        """Each claim's key, found in pytest's cache where an earlier session (or process of
        this one) kept them, else sliced from the code."""
        session = self.session
        places, workshop = session.settings.places, session.workshop
        try:
            return claim_keys(places, workshop, kept=session.cache.kept_early(CLAIM_KEYS_CACHE))
        except OSError:  # a cache this process cannot write: slice, as without one
            return claim_keys(places, workshop)

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Keep the claims' keys for the next session, now that pytest's cache plugin has made
        its folder (the first session of a checkout sliced them before it existed)."""
        try:
            store = self.session.cache.kept(CLAIM_KEYS_CACHE)
            if store is not None:
                claim_keys(self.session.settings.places, self.session.workshop, kept=store)
        except OSError:
            pass  # an unwritable cache: the next session slices again

    def committed_fragility(self) -> Fragility:
        """The sweep's committed table as it is, of whichever experiment it measured."""
        if self._committed is None:
            path, workshop = self.session.settings.places.fragility_json, self.session.workshop
            self._committed = load_fragility(path, workshop.sweep_command, workshop.seeds)
        return self._committed

    def fragility(self) -> Fragility:
        """The sweep's table, without the stale claims' readings: evidence of another
        computation is no evidence for this one, and those readings are judged without it."""
        if self._fresh is None:
            self._fresh = self.committed_fragility().fresh(self.keys)
        return self._fresh

    def stale_claims(self) -> list[str]:
        return self.committed_fragility().stale_claims(self.keys)

    @cached_property
    def _recorded_keys(self) -> dict[str, str] | None:
        # None where unreadable: recorded before the record kept its keys, nothing is known.
        found = read_json(self.session.settings.places.recorded_keys)
        return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else None

    def edited_since_recorded(self, nodeid: str) -> bool | None:
        """Whether the claim `nodeid`, or what it computes, changed since the update that
        recorded the snapshots (`snapshots/keys.json`); None where that is not known (a
        record that kept no keys, a claim it kept none of)."""
        claim, recorded = claim_of(nodeid), self._recorded_keys
        if recorded is None or claim not in recorded:
            return None
        return recorded[claim] != self.keys.get(claim, "")

    def find(self) -> Standing:
        """The reference; else a platform a committed fragment holds at these seeds, whose
        numbers are that fragment's; else new."""
        found = super().find()
        if found.kind != NEW:
            return found
        # Only a platform other than the reference's reads the fragments (and imports them).
        from claimlog.evidence.fragments import FragmentStore

        s = self.session.settings
        store = FragmentStore(s.places.fragments, self.keys)
        fragment = store.at_seeds(found.platform, seed_variant_name(s.seeds))
        if fragment is None:
            return found
        return Standing(
            HELD,
            found.platform,
            found.reference,
            s.strict,
            readings={name: r.as_float() for name, r in fragment.readings.items()},
            tables=fragment.tables,
        )

    def changed(self) -> None:
        """The sweep's evidence was written anew (an update brought it up to the checkout):
        what this process read of it, and where its platform stood, is read again."""
        super().changed()
        self._committed = self._fresh = None
