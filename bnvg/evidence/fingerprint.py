"""Which experiment a piece of evidence measured.

The sweep's fragments and tables (`bnvg.evidence.fragments`, `bnvg.evidence.fragility`) say
what other platforms and seeds print for *one* experiment: the workshop's recipe, and what
the reference computes from it. Evidence of another experiment is not evidence for this one:
after the recipe's `steps` go from 4000 to 3000, the old fragments' 0.0079 is no value any
platform prints for this workshop.

The fingerprint digests the two parts:

- the recipe (`bnvg.experiment.config.recipe`): every constant of the workshop's recipe;
- the committed reference numbers: every file under `snapshots/numbers/` (readings, training
  histories, figure data), byte for byte.

A change of code that moves no number keeps the fingerprint (a refactor throws away no sweep);
a change of the recipe, or one that moves any reference number (then recorded by
`--snapshot-update`), makes it another. A fragment and a merged table record the fingerprint
of the project they were computed in, before anything ran there.
"""

from __future__ import annotations

import json

from bnvg.experiment.config import recipe
from bnvg.places import Places
from bnvg.store import digest

SHOWN = 12  # hex digits shown to people: enough to tell two experiments apart


def experiment_fingerprint(places: Places) -> str:
    """The fingerprint of the experiment of the project at `places` (see the module)."""
    numbers = {
        str(path.relative_to(places.numbers)): digest(path.read_bytes())
        for path in sorted(places.numbers.rglob("*.csv"))
    }
    return digest(json.dumps({"recipe": recipe(), "numbers": numbers}, sort_keys=True))


def short(fingerprint: str) -> str:
    """How messages name a fingerprint: its first digits, or "unknown" for evidence recorded
    before fragments knew their experiment."""
    return fingerprint[:SHOWN] if fingerprint else "unknown"
