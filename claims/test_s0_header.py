"""The log's header: which environment computed every number below it."""

import numpy as np
import pytest
import torch

from bnvg.log import fill


@pytest.mark.log_lines("versions")
def test_the_log_names_the_torch_and_numpy_that_computed_it(workshop, results_log, pytestconfig):
    """Workshop: "torch 2.12.1+cpu | numpy 2.2.6 | seed 0" as published: the training-end
    numbers depend on the torch release, so the log says which one computed them. This
    line is written by a process that runs the claims, so it names the torch they used."""
    # The thread count changes training results too: one, unless the sweep asked otherwise.
    assert torch.get_num_threads() == pytestconfig.getoption("bnvg_torch_threads")
    assert workshop.seed == 0
    results_log.write(fill.versions(torch.__version__, np.__version__))
