"""What the claims read: the two fits, each computed once and kept in pytest's cache."""

from __future__ import annotations

import pytest

from claimlog import Computed
from dropout.experiment import Fit, Recipe


@pytest.fixture(scope="session")
def fits(recipe: Recipe, computed: Computed) -> dict[str, Fit]:
    """The net trained without dropout and with it, from the same data and starting weights."""
    from dropout.experiment import fit

    return {
        "without dropout": computed.get("fit without dropout", lambda: fit(recipe, 0.0)),
        "with dropout": computed.get("fit with dropout", lambda: fit(recipe, recipe.dropout)),
    }
