"""Runs trained together: each bit for bit its single run, or trained alone, said so.

bnvg's `Together` (`bnvg.experiment.stacked`) stacks the runs of one depth and width; the
engine (`claimlog.runs.train_together`) trains together only where the workshop's canary
says together gives the bits one at a time gives on this platform.
"""

import dataclasses

import pytest
import torch

from bnvg.experiment.config import WORKSHOP, Workshop
from bnvg.experiment.data import two_moons
from bnvg.experiment.runs import RUNS, TRAINING
from bnvg.experiment.stacked import TOGETHER, shape_of, train_together
from bnvg.experiment.train import train_run
from claimlog.platform import Platform
from claimlog.runs import TrainedRuns
from claimlog.store import APART, COMPUTED, Event, Store

SHORT = Workshop(steps=120)  # three history points: step 1, 50 and 100


def same(a, b):
    """Whether two trained runs are the same bits: every weight, statistic and point."""
    if [x.hex() for x in (*a.history.loss, *a.history.test_acc)] != [
        x.hex() for x in (*b.history.loss, *b.history.test_acc)
    ]:
        return False
    ours, theirs = a.state(), b.state()
    return ours.keys() == theirs.keys() and all(
        ours[k].numpy().tobytes() == theirs[k].numpy().tobytes() for k in ours
    )


@pytest.mark.parametrize("axis", ["sampler", "init"])
def test_every_run_of_the_workshop_trained_together_is_its_single_run_bit_for_bit(axis):
    """Issue 51: plain, ReLU, residual, Xavier, batch norm (each run's own statistics), layer
    norm, depth 8 and the learning rates of S7, each over two seeds of each axis, stacked by
    shape, give each run's single training to the last bit."""
    runs = [(spec, SHORT.with_seeds(**{axis: seed})) for seed in (1, 2) for spec in RUNS.values()]
    by_shape: dict[str, list[int]] = {}
    for i, (spec, recipe) in enumerate(runs):
        by_shape.setdefault(shape_of(spec, recipe), []).append(i)
    assert len(by_shape) == 2  # depth 4 and depth 8: every kind of net among them
    for members in by_shape.values():
        together = train_together([runs[i] for i in members])
        for i, run in zip(members, together, strict=True):
            spec, recipe = runs[i]
            assert same(run, train_run(spec, two_moons(recipe), recipe)), (spec, recipe)


def test_a_run_that_fails_on_its_own_fails_alone_and_the_others_train():
    """The ReLU net of starting weights 27 is dead at init (its probe divides by zero): in
    its place comes its error, as training it alone raises it."""
    dead = RUNS["ReLU"], dataclasses.replace(SHORT, init_seed=27)
    alive = RUNS["plain"], dataclasses.replace(SHORT, init_seed=27)
    failed, trained = train_together([dead, alive])
    assert isinstance(failed, ZeroDivisionError)
    assert same(trained, train_run(alive[0], two_moons(alive[1]), alive[1]))


def test_the_canary_compares_together_and_alone_on_this_platform():
    assert TOGETHER.same_bits([("plain", SHORT), ("batch norm", SHORT), ("ReLU", SHORT)])


class Disagreeing:
    """bnvg's Together, but its canary says together gives other bits here."""

    def shape(self, name, recipe):
        return TOGETHER.shape(name, recipe)

    def train(self, runs, keys):  # pragma: no cover - never asked: the canary said no
        raise AssertionError("trained together although the canary said no")

    def same_bits(self, runs):
        return False


def trained_runs(together, events, store=None, recipe=SHORT):
    where = Platform.here(torch.get_num_threads()).cache_fields()
    return TrainedRuns(
        TRAINING,
        recipe,
        where=lambda: where,
        store=store,
        on_event=events.append,
        together=(lambda: together) if together else None,
    )


def test_runs_of_one_shape_train_together_as_one_unit_and_are_kept_as_single_runs(tmp_path):
    events = []
    runs = trained_runs(TOGETHER, events, Store(tmp_path))
    names = ["plain", "plain, lr = 5.0", "Xavier init", "depth 8 plain, lr = 0.5"]
    assert runs.groups(names) == [
        ["plain", "plain, lr = 5.0", "Xavier init"],
        ["depth 8 plain, lr = 0.5"],
    ]
    runs.prefetch(names)
    together = [e.name for e in events if e.what == COMPUTED and e.detail == {"together": 3}]
    assert sorted(together) == sorted(names[:3])
    again = trained_runs(None, [], Store(tmp_path))  # another process: reads them, alone
    for name in names:
        assert same(again.get(name), train_run(RUNS[name], two_moons(SHORT), SHORT)), name


def test_where_the_canary_says_together_differs_each_run_trains_alone_and_it_is_said():
    events = []
    runs = trained_runs(Disagreeing(), events)
    runs.prefetch(["plain", "Xavier init"])
    assert [e for e in events if e.what == APART] == [Event(APART, "run", "plain, Xavier init", 2)]
    assert [e.name for e in events if e.what == COMPUTED] == ["plain", "Xavier init"]


def test_the_workshops_own_recipe_groups_its_twelve_runs_by_depth():
    runs = trained_runs(TOGETHER, [], recipe=WORKSHOP)
    assert [len(group) for group in runs.groups(list(RUNS))] == [8, 4]


class Recording:
    """bnvg's Together, noting what its canary is asked."""

    def __init__(self):
        self.asked = []

    def shape(self, name, recipe):
        return TOGETHER.shape(name, recipe)

    def train(self, runs, keys):
        return TOGETHER.train(runs, keys)

    def same_bits(self, runs):
        self.asked.append([name for name, _ in runs])
        return True


def test_the_canary_is_the_group_itself_each_run_once():
    recording = Recording()
    runs = trained_runs(recording, [])
    runs.prefetch(["plain", "Xavier init", "ReLU"])
    assert [sorted(names) for names in recording.asked] == [["ReLU", "Xavier init", "plain"]]


def test_under_recompute_a_kept_run_is_trained_again_together_never_alone(tmp_path):
    trained_runs(TOGETHER, [], Store(tmp_path)).prefetch(["plain", "Xavier init"])
    events = []
    where = Platform.here(torch.get_num_threads()).cache_fields()
    again = TrainedRuns(
        TRAINING,
        SHORT,
        where=lambda: where,
        store=Store(tmp_path),
        on_event=events.append,
        together=lambda: TOGETHER,
        recompute=True,
        session="another",
    )
    again.prefetch(["plain", "Xavier init"])
    assert sorted(e.name for e in events if e.what == COMPUTED and e.detail) == [
        "Xavier init",
        "plain",
    ]


def test_a_batch_keeps_only_the_runs_its_first_seed_checked_bit_for_bit(tmp_path):
    """Issue 51, the sweep's batch (`claimlog.sweep.job.Held`): of the runs trained together,
    another seed's is kept only where the first seed's own run of that name was trained alone
    by its session and compared; one its session did not train (a claim that failed before
    reading it) is left for that seed's own session to train."""
    from claimlog.store import MISSING
    from claimlog.sweep.job import Held

    store = Store(tmp_path / "runs")
    where = {"platform": "here"}
    first, other = (
        TrainedRuns(TRAINING, SHORT.with_seeds(sampler=seed), where=lambda: where, store=store)
        for seed in (1, 2)
    )
    names = ["plain", "batch norm"]
    ours = dict(zip(names, train_together([(RUNS[n], first.recipe) for n in names]), strict=True))
    theirs = train_together([(RUNS[n], other.recipe) for n in names])
    first.get("plain")  # its session trained "plain" alone, and never read "batch norm"
    others = [(other, n, r) for n, r in zip(names, theirs, strict=True)]
    held = Held(TRAINING, store, first, ours, others)
    assert held.check_and_keep(["plain"]) == "the same bits"
    assert store.has(other.key("plain")) and not store.has(other.key("batch norm"))
    assert other.found("plain") is not MISSING

    # Other bits than alone: nothing of the others is kept.
    wrong = {"plain": ours["batch norm"]}
    third = TrainedRuns(TRAINING, SHORT.with_seeds(sampler=3), where=lambda: where, store=store)
    held = Held(TRAINING, store, first, wrong, [(third, "plain", theirs[0])])
    assert held.check_and_keep(["plain"]) == "plain trained together gave other bits than alone"
    assert not store.has(third.key("plain"))


def test_a_batch_is_led_by_a_seed_with_runs_left_to_train(tmp_path):
    """A sweep killed after its batch's first seed trained its runs alone, and before the
    batch kept the others': resumed, the first seed has nothing left to train, so another
    seed leads the batch (its runs trained alone and compared), and the rest still train
    together rather than one at a time."""
    from claimlog.sweep.job import lead_of, to_train

    store = Store(tmp_path / "runs")
    where = {"platform": "here"}
    batch = [
        TrainedRuns(TRAINING, SHORT.with_seeds(sampler=seed), where=lambda: where, store=store)
        for seed in (1, 2, 3)
    ]
    names = ["plain", "batch norm"]

    def lead():
        return lead_of(batch, to_train(batch, names, store, TOGETHER))

    assert lead() == 0  # nothing kept: the first seed leads
    for name in names:
        store.put(batch[0].key(name), b"kept", {})
    store.put(batch[1].key("plain"), b"kept", {})
    assert lead() == 2  # the seed with the most left to train
    for runs in batch[1:]:
        for name in names:
            store.put(runs.key(name), b"kept", {})
    assert lead() is None  # every run kept: none to lead
