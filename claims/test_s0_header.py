"""The log's header: which environment computed every number below it."""

import sys
from importlib import metadata

import pytest

from bnvg.log import fill


@pytest.mark.log_lines("versions")
def test_the_log_names_the_torch_and_numpy_that_computed_it(
    workshop, results_log, pytestconfig, torch_platform
):
    """Workshop: "torch 2.12.1+cpu | numpy 2.2.6 | seed 0" as published: the training-end
    numbers depend on the torch release, so the log says which one computed them. This
    line is written by a process that runs the claims, so it names the torch they used, as
    torch reports itself (the engine's `torch_platform` fixture)."""
    # The thread count changes training results too: one, unless the sweep asked otherwise.
    # A process that computed anything imported torch; one that reused every result did
    # not, and its results' keys name the thread count they were computed with.
    torch = sys.modules.get("torch")
    if torch is not None:
        assert torch.get_num_threads() == pytestconfig.getoption("claimlog_torch_threads")
    assert workshop.seed == 0
    assert torch_platform["torch"].split("+")[0] == metadata.version("torch").split("+")[0]
    results_log.write(fill.versions(torch_platform["torch"], metadata.version("numpy")))
