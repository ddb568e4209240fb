"""Training runs: each trained at most once, shared exactly, handed out as independent copies."""

import pytest
import torch

from bnvg.experiment.config import NetSpec, Workshop
from bnvg.experiment.data import two_moons
from bnvg.experiment.eval_bug import demonstrate_eval_bug
from bnvg.experiment.measure import init_grad_ratio
from bnvg.experiment.model import build_network
from bnvg.experiment.run_cache import RunCache
from bnvg.experiment.runs import RUNS, RunSpec, train_run

SHORT = Workshop(steps=60)  # enough for two history points; the real runs are 4000 steps


def test_the_log_needs_twelve_distinct_runs():
    assert len(RUNS) == len(set(RUNS.values())) == 12


def test_a_run_is_trained_once_however_often_it_is_asked_for():
    trained = []
    cache = RunCache(SHORT, on_train=trained.append)
    first = cache.get("batch norm")
    assert cache.get(RunSpec(NetSpec(norm="batch"))) is first
    assert cache.get("plain") is not first
    assert trained == ["batch norm", "plain"]


def test_processes_sharing_a_store_train_once_and_load_bit_identical_results(tmp_path):
    trainer, loader = RunCache(SHORT, store=tmp_path), RunCache(SHORT, store=tmp_path)
    trained = trainer.get("depth 8 batch norm, lr = 0.5")
    loaded = loader.get("depth 8 batch norm, lr = 0.5")
    assert (trainer.trained, loader.trained) == (["depth 8 batch norm, lr = 0.5"], [])
    assert loaded.history == trained.history
    a, b = trained.network().state_dict(), loaded.network().state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_trained_network_is_handed_out_as_an_independent_copy():
    run = RunCache(SHORT).get("plain")
    net = run.network()
    with torch.no_grad():
        net.out.weight.add_(1.0)
    assert not torch.equal(net.out.weight, run.network().out.weight)


def test_the_eval_bug_demonstration_leaves_the_callers_network_untouched():
    data = two_moons(SHORT)
    net = RunCache(SHORT).get("batch norm").network()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    demonstrate_eval_bug(net, data.X_test, data.y_test)
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())
    assert not net.training


def test_probing_batch_norm_before_training_changes_no_trained_parameter():
    """Why S8's "batch norm" row may reuse the S6 run: S8 measures the gradient ratio on the
    net before training it, and that train-mode pass nudges the running statistics. Over a
    full run they converge to the same values, and every parameter ends bit-identical."""
    data = two_moons()
    fresh = train_run(RunSpec(NetSpec(norm="batch")), data)
    probed = train_run(RunSpec(NetSpec(norm="batch"), probed=True), data)
    a, b = fresh.network().state_dict(), probed.network().state_dict()
    differ = [k for k in a if not torch.equal(a[k], b[k])]
    assert all(k.endswith("num_batches_tracked") for k in differ)
    assert fresh.history.final_acc == probed.history.final_acc
    assert fresh.history.final_loss == probed.history.final_loss


def test_the_probe_measures_the_same_ratio_as_a_fresh_network():
    data = two_moons()
    a = init_grad_ratio(build_network(NetSpec(norm="batch")), data.X_train, data.y_train)
    b = init_grad_ratio(build_network(NetSpec(norm="batch")), data.X_train, data.y_train)
    assert a == b


def test_the_eval_bug_needs_batches_that_batch_norm_can_normalise():
    data = two_moons(SHORT)
    net = RunCache(SHORT).get("batch norm").network()
    with pytest.raises(ValueError, match="batches of at least 2 points to normalise, got 1"):
        demonstrate_eval_bug(net, data.X_test, data.y_test, batch=1)
    with pytest.raises(ValueError, match="needs a batch-norm network"):
        demonstrate_eval_bug(RunCache(SHORT).get("plain").network(), data.X_test, data.y_test)
