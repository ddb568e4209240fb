"""[S9] The model.eval() bug, on the trained batch-norm net from S6.

Every claim here selects with `pytest -k eval_bug`, which trains that one network only.
"""

import pytest

from bnvg.log import fill
from claimlog import at_most, exactly

pytestmark = pytest.mark.runs("batch norm")


@pytest.fixture
def eval_bug(runs, data, computed):
    """The S6 batch-norm net scored three ways (on a private copy of the network); computed
    once, and reused from pytest's cache while nothing it depends on changes."""
    run = runs.get("batch norm")  # checks the run's history against its snapshot

    def demonstrate():
        from bnvg.experiment.eval_bug import demonstrate_eval_bug

        return demonstrate_eval_bug(run.network(), data.X_test, data.y_test)

    return computed.get("S9 eval bug", demonstrate)


@pytest.mark.log_lines("S9 eval mode")
def test_eval_bug_in_eval_mode_the_net_scores_100_percent(eval_bug, quoted):
    """Workshop: "test accuracy, model.eval() (correct) = 100.0%"."""
    quoted.lines(fill.eval_mode(eval_bug), holds={"test accuracy": exactly(100)})


@pytest.mark.log_lines("S9 train mode, full batch")
def test_eval_bug_in_train_mode_the_full_test_batch_still_scores_100_percent(eval_bug, quoted):
    """Workshop: "test accuracy, train mode, full test batch = 100.0%": a large mixed batch has
    statistics close to the training data's, so the bug hides."""
    quoted.lines(fill.train_mode_full_batch(eval_bug), holds={"test accuracy": exactly(100)})


@pytest.mark.log_lines("S9 train mode, batches of 2")
def test_eval_bug_in_train_mode_batches_of_2_score_far_lower(eval_bug, quoted):
    """Workshop: "test accuracy, train mode, batches of 2 = 71.5%" as published (69.5% here): two points
    normalised by their own mean and variance lose what the running statistics knew. "Far
    lower" is at least 20 points below the correct score."""
    quoted.lines(
        fill.train_mode_small_batches(eval_bug),
        holds={"test accuracy": at_most(eval_bug.eval_mode * 100 - 20)},
    )


@pytest.mark.log_lines("S9 gamma", "S9 beta")
def test_eval_bug_net_learned_a_gamma_far_from_1_in_its_first_batch_norm_layer(eval_bug, quoted):
    """Workshop: "learned gamma (BN layer 1) = ['1.42', '4.70', '0.82', '0.87']" as published: batch
    norm's learned scale is not the identity; one neuron is amplified several-fold: the gamma
    of exactly one neuron is 3 or more ("several": three or more)."""
    quoted.lines(fill.learned("gamma", eval_bug.gamma), fill.learned("beta", eval_bug.beta))
    amplified = [g for g in eval_bug.gamma if g >= 3]
    assert len(amplified) == 1, f"gamma = {list(eval_bug.gamma)}"
