"""What the claims read: the data, the counted model and the learned one, each computed once
and kept in pytest's cache."""

import pytest

from bigrams.experiment import Counting, Data, Learning, Recipe, count, learn, load
from claimlog import Computed


@pytest.fixture(scope="session")
def data(recipe: Recipe) -> Data:
    return load(recipe)


@pytest.fixture(scope="session")
def counting(recipe: Recipe, data: Data, computed: Computed) -> Counting:
    return computed.get("counting", lambda: count(data))


@pytest.fixture(scope="session")
def learning(recipe: Recipe, data: Data, computed: Computed) -> Learning:
    return computed.get("learning", lambda: learn(data, recipe))
