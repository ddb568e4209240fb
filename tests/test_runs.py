"""Training runs: each trained at most once, shared exactly, handed out as independent copies."""

import shutil

import pytest
import torch

from bnvg.experiment.config import NetSpec, RunSpec, Workshop
from bnvg.experiment.data import two_moons
from bnvg.experiment.eval_bug import demonstrate_eval_bug
from bnvg.experiment.measure import init_grad_ratio, measure_at_init
from bnvg.experiment.model import build_network
from bnvg.experiment.runs import RUNS, TRAINING
from bnvg.experiment.train import train_run
from claimlog.platform import Platform
from claimlog.runs import TrainedRuns
from claimlog.store import COMPUTED, DAMAGED, REUSED, Entry, Event, Store

SHORT = Workshop(steps=60)  # enough for two history points; the real runs are 4000 steps


def here():
    return Platform.here(torch.get_num_threads()).cache_fields()


def trained_runs(recipe=SHORT, store=None, *, where=here, **options):
    """This workshop's runs as claimlog trains and keeps them (`Declaration.training`)."""
    return TrainedRuns(TRAINING, recipe, where=where, store=store, **options)


def test_the_log_needs_twelve_distinct_runs():
    assert len(RUNS) == len(set(RUNS.values())) == 12


@pytest.mark.slow
def test_a_run_is_trained_once_however_often_it_is_asked_for():
    events = []
    cache = trained_runs(SHORT, on_event=events.append)
    first = cache.get("batch norm")
    assert cache.get("batch norm") is first
    assert cache.get("plain") is not first
    assert events == [Event(COMPUTED, "run", "batch norm"), Event(COMPUTED, "run", "plain")]


@pytest.mark.slow
def test_processes_sharing_a_store_train_once_and_load_bit_identical_results(tmp_path):
    store = Store(tmp_path)
    trainer, loader = (
        trained_runs(SHORT, store=store, session="a"),
        trained_runs(SHORT, store=store, session="a"),
    )
    trained = trainer.get("depth 8 batch norm, lr = 0.5")
    loaded = loader.get("depth 8 batch norm, lr = 0.5")
    assert (trainer.trained, loader.trained) == (["depth 8 batch norm, lr = 0.5"], [])
    assert loaded.history == trained.history
    a, b = trained.network().state_dict(), loaded.network().state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.slow
def test_a_later_session_reuses_a_stored_run_and_says_when_and_where_it_was_trained(tmp_path):
    store = Store(tmp_path)
    trained_runs(SHORT, store=store, session="yesterday").get("plain")
    events = []
    later = trained_runs(SHORT, store=store, session="today", on_event=events.append)
    later.get("plain")
    [reused] = events
    assert (reused.what, reused.name, later.trained) == (REUSED, "plain", [])
    assert reused.detail["platform"]["torch threads"] == str(torch.get_num_threads())
    assert reused.detail["at"].endswith(" UTC")  # when the memo kept it
    recompute = trained_runs(SHORT, store=store, session="again", recompute=True)
    recompute.get("plain")
    assert recompute.trained == ["plain"]


@pytest.mark.slow
def test_a_damaged_entry_is_reported_and_trained_again(tmp_path):
    store = Store(tmp_path)
    cache = trained_runs(SHORT, store=store, session="a")
    cache.get("plain")
    [content] = tmp_path.glob("*.bin")
    content.write_bytes(content.read_bytes()[:-10])  # truncated
    events = []
    again = trained_runs(SHORT, store=store, session="b", on_event=events.append)
    again.get("plain")
    assert events[0] == Event(
        DAMAGED, "run", "plain", "its content does not match its checksum (truncated or corrupt)"
    )
    assert again.trained == ["plain"] and isinstance(store.get(cache.key("plain")), Entry)


def test_the_key_covers_the_code_the_recipe_the_spec_and_the_platform(tmp_path, monkeypatch):
    import bnvg.experiment.runs as runs

    where = Platform.here(1).cache_fields()

    def key(name="plain", recipe=SHORT, platform=where):
        return trained_runs(recipe, where=lambda: platform).key(name)

    assert key() == key(platform=dict(where))
    others = [
        key("batch norm"),
        key(recipe=Workshop(steps=61)),
        key(recipe=Workshop(steps=60, sampler_seed=3)),
        key(platform={**where, "torch threads": "2"}),
        key(platform={**where, "cpu capability": "DEFAULT"}),
        key(platform={**where, "torch": "2.14.1+cpu"}),
    ]
    assert len({key(), *others}) == 7
    # A comment added to a module a run executes is a new key; a module it does not, is not.
    before = key()
    copy = tmp_path / "experiment"
    shutil.copytree(runs.EXPERIMENT, copy)
    monkeypatch.setattr(runs, "EXPERIMENT", copy)
    (copy / "eval_bug.py").write_text((copy / "eval_bug.py").read_text() + "# a comment\n")
    assert key() == before
    (copy / "train.py").write_text((copy / "train.py").read_text() + "# a comment\n")
    assert key() != before


def test_an_unknown_run_name_lists_the_known_runs():
    with pytest.raises(
        ValueError, match="unknown run 'batchnorm': valid names are 'plain', 'batch norm'"
    ):
        trained_runs().get("batchnorm")


def test_a_store_tells_without_torch_which_runs_it_keeps(tmp_path):
    """What a session checks before it starts workers: kept for this recipe and platform."""
    store = Store(tmp_path)
    trained_runs(store=store, session="a").get("plain")
    assert trained_runs(store=store).kept_names() == {"plain"}
    assert trained_runs(Workshop(steps=61), store=store).kept_names() == set()
    assert (
        trained_runs(store=store, where=lambda: {**here(), "torch threads": "3"}).kept_names()
        == set()
    )


@pytest.mark.parametrize(
    ("old", "new", "retrains"),
    [
        ("CHECK_LOGIT, CHECK_LABEL = 2.0, 0.0", "CHECK_LOGIT, CHECK_LABEL = 1.5, 0.0", False),
        ("EVAL_BUG_BATCH = 2", "EVAL_BUG_BATCH = 4", False),
        ("SATURATION_Z = 4.0", "SATURATION_Z = 5.0", False),
        ("DECAY_DEPTHS = (4, 10)", "DECAY_DEPTHS = (4, 12)", False),
        ('"""The workshop\'s constants', '# a comment\n"""The workshop\'s constants', False),
        ("TARGET_PERCENT = 90", "TARGET_PERCENT = 80", True),  # what TARGET_ACCURACY reads
        ("DEEP_DEPTH = 8", "DEEP_DEPTH = 9", True),  # runs.py builds the deep runs from it
        ("steps: int = 4000", "steps: int = 3000", True),  # the recipe's code: its defaults
        ("if not self.lr > 0:", "if not self.lr >= 0:", True),  # and its rules
    ],
)
def test_the_recipe_counts_in_a_runs_key_by_what_training_reads_of_it(tmp_path, old, new, retrains):
    """An edit of a constant no run reads (S2's autograd check, S9's batch) retrains no
    network; one a run reads, or the recipe's code, retrains them all."""
    import bnvg.experiment.runs as runs

    copy = tmp_path / "experiment"
    shutil.copytree(runs.EXPERIMENT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = runs.training_source(copy)
    config = copy / "config.py"
    assert old in config.read_text()
    config.write_text(config.read_text().replace(old, new, 1))
    assert (runs.training_source(copy) != before) is retrains


def test_a_trained_network_is_handed_out_as_an_independent_copy():
    run = trained_runs(SHORT).get("plain")
    net = run.network()
    with torch.no_grad():
        net.out.weight.add_(1.0)
    assert not torch.equal(net.out.weight, run.network().out.weight)


def test_the_eval_bug_demonstration_leaves_the_callers_network_untouched():
    data = two_moons(SHORT)
    net = trained_runs(SHORT).get("batch norm").network()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    demonstrate_eval_bug(net, data.X_test, data.y_test)
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())
    assert not net.training


@pytest.mark.slow
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


@pytest.mark.parametrize("spec", [NetSpec(), NetSpec(norm="batch"), NetSpec(depth=8)])
def test_the_probe_measures_the_ratio_s4s_full_measurement_measures(spec):
    """`init_grad_ratio`, the cheap probe S7 and S8 quote, is S4's `grad_ratio` of the same
    fresh network, bit for bit (both one train-mode pass over the training set)."""
    data = two_moons()
    probe = init_grad_ratio(build_network(spec), data.X_train, data.y_train)
    full = measure_at_init(build_network(spec), data.X_train, data.y_train).grad_ratio
    assert probe == full


def test_the_eval_bug_needs_batches_that_batch_norm_can_normalise():
    data = two_moons(SHORT)
    net = trained_runs(SHORT).get("batch norm").network()
    with pytest.raises(ValueError, match="batches of at least 2 points to normalise, got 1"):
        demonstrate_eval_bug(net, data.X_test, data.y_test, batch=1)
    with pytest.raises(ValueError, match="needs a batch-norm network"):
        demonstrate_eval_bug(trained_runs(SHORT).get("plain").network(), data.X_test, data.y_test)


def test_a_run_that_cannot_be_trained_fails_its_claims_not_the_prefetch(tmp_path, monkeypatch):
    """Under xdist each worker prefetches the runs up front, in a session fixture: a run that
    cannot be trained (a ReLU net whose units all start dead has no output gradient to divide
    by) must fail only where a claim asks for it, as in one process."""
    import bnvg.experiment.train as training

    real = training.train_run

    def dead_relu(spec, data, workshop):
        if spec.net.act == "relu":
            raise ZeroDivisionError("float division by zero")
        return real(spec, data, workshop)

    monkeypatch.setattr(training, "train_run", dead_relu)
    cache = trained_runs(store=Store(tmp_path / "runs"), session="a")
    cache.prefetch(["ReLU", "plain"])  # no error escapes
    assert cache.get("plain").history.step
    with pytest.raises(ZeroDivisionError):
        cache.get("ReLU")
