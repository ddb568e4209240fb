"""Evidence keyed per claim: an edit makes stale exactly the evidence of the claims whose code
reaches it, and a fragment's fresh part is what the merge and the plugin read.

The keys are read from the source (`claimlog.evidence.keys.claim_keys`), so an edit of the
experiment is made in a copy of bnvg imported in a subprocess, and an edit of a claim in a
copy of claims/.
"""

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bnvg.workshop import DECLARATION
from claimlog.evidence.fragility import Fragility, ReadingEvidence, Seen
from claimlog.evidence.fragments import Fragment, FragmentStore, Variant
from claimlog.evidence.keys import claim_keys
from claimlog.evidence.record import ClaimOutcome, Record
from claimlog.evidence.verdicts import status_of
from claimlog.log.readings import Reading
from claimlog.places import Places
from claimlog.runner import scratch_copy
from claimlog.store import Store
from claimlog.sweep.job import Checkout

ROOT = Path(__file__).resolve().parent.parent
LOG = DECLARATION.log()
AUTOGRAD = (
    "claims/test_s2_sigmoid_and_loss.py::test_autograd_gradient_of_bce_wrt_logit_is_p_minus_y"
)
SATURATED = "claims/test_s2_sigmoid_and_loss.py::test_sigmoid_slope_at_plus_minus_4_is_0_0177"
EVAL_BUG = "claims/test_s9_eval_bug.py::test_eval_bug_in_eval_mode_the_net_scores_100_percent"
DIVERGES = "claims/test_s7_brute_force_vs_depth.py::test_lr_50_diverges_at_depth_4"
BATCH_NORM_REACHES = (
    "claims/test_s6_training.py::"
    "test_batch_norm_net_reaches_90_percent_by_step_100_and_ends_at_100_percent"
)

KEYS_OF_THE_COPY = """
import json, sys
from pathlib import Path
from claimlog.declaration import declared_in
from claimlog.evidence.keys import claim_keys
from claimlog.evidence.record import ClaimOutcome, Record
from claimlog.evidence.verdicts import status_of
from claimlog.places import Places
workshop = declared_in(Path(sys.argv[1]))
print(json.dumps(claim_keys(Places(Path(sys.argv[1])), workshop)))
"""

# Each edit, made alone in the copy: the claims whose key it changes, by a subprocess that
# imports the copy's bnvg (one process for all of them).
KEYS_AFTER_EACH_EDIT = """
import json, sys
from pathlib import Path
from claimlog.declaration import declared_in
from claimlog.evidence.keys import claim_keys
from claimlog.evidence.record import ClaimOutcome, Record
from claimlog.evidence.verdicts import status_of
from claimlog.places import Places
project = Path(sys.argv[1])
workshop = declared_in(project)
base = claim_keys(Places(project), workshop)
changed = {}
for name, (file, old, new) in json.loads(sys.argv[2]).items():
    path = project / file
    text = path.read_text()
    assert old in text, f"{old!r} is not in {file}"
    path.write_text(text.replace(old, new, 1))
    try:
        keys = claim_keys(Places(project), workshop)
    finally:
        path.write_text(text)
    assert keys.keys() == base.keys()
    changed[name] = sorted(c for c in base if keys[c] != base[c])
print(json.dumps(changed))
"""
EDITS = {
    "CHECK_LOGIT": (
        "bnvg/experiment/config.py",
        "CHECK_LOGIT, CHECK_LABEL = 2.0, 0.0",
        "CHECK_LOGIT, CHECK_LABEL = 1.5, 0.0",
    ),
    "a bound": (
        "claims/test_s2_sigmoid_and_loss.py",
        'holds={"slope": about(0.0177)}',
        'holds={"slope": about(0.018)}',
    ),
    "a docstring": ("bnvg/experiment/train.py", '"""', '"""Edited. '),
    "a comment": ("bnvg/experiment/config.py", "# S2:", "# S2 (edited):"),
    "a line break": ("bnvg/experiment/train.py", "def train(", "def train(  \n"),
    "the SGD loop": (
        "bnvg/experiment/train.py",
        "        opt.step()",
        "        opt.step()\n        pass",
    ),
    "the data": (
        "bnvg/experiment/data.py",
        "    X, y = X[perm], y[perm]",
        "    X, y = X[perm], y[perm]\n    pass",
    ),
}


@pytest.fixture(scope="module")
def changed(tmp_path_factory) -> dict[str, list[str]]:
    """Each edit of `EDITS`, in a copy of the project with its own bnvg: the claims whose key
    it changed."""
    project = scratch_copy(ROOT, tmp_path_factory.mktemp("editable") / "project")
    shutil.copytree(ROOT / "bnvg", project / "bnvg", ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run(
        [sys.executable, "-c", KEYS_AFTER_EACH_EDIT, str(project), json.dumps(EDITS)],
        cwd=project,  # the copy's bnvg, not this checkout's
        env={"PYTHONPATH": str(project), "PATH": ""},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_every_claim_but_the_evidence_ones_has_a_key_read_without_torch():
    done = subprocess.run(
        [sys.executable, "-c", KEYS_OF_THE_COPY + "print('torch' in sys.modules)", str(ROOT)],
        capture_output=True,
        text=True,
        check=True,
    )
    keys, torch_imported = done.stdout.splitlines()
    assert torch_imported == "False"
    claims = json.loads(keys)
    assert AUTOGRAD in claims and all(len(k) == 64 for k in claims.values())
    assert not any("half_the_time" in c for c in claims)  # marked `evidence`: no evidence


def test_s2s_check_logit_is_read_by_the_autograd_claim_alone(changed):
    """The acceptance's edit: CHECK_LOGIT 2.0 -> 1.5 changes one claim's key, so every other
    reading keeps its evidence on every platform and seed."""
    assert changed["CHECK_LOGIT"] == [AUTOGRAD]


def test_a_claims_bound_is_its_own_key(changed):
    assert changed["a bound"] == [SATURATED]


def test_a_comment_a_docstring_or_a_line_break_changes_no_key(changed):
    assert changed["a docstring"] == changed["a comment"] == changed["a line break"] == []


def test_the_data_is_read_by_every_claim_of_a_trained_run(changed):
    """A run trains on the data: claimlog's `runs` fixture reaches the workshop's Training,
    and through it the data set, though no claim that reads runs calls `two_moons`."""
    edited = changed["the data"]
    assert all(c in edited for c in (EVAL_BUG, DIVERGES, BATCH_NORM_REACHES))


def test_the_sgd_loop_is_read_by_every_claim_of_a_trained_run_and_no_other(changed):
    edited = changed["the SGD loop"]
    assert all(c in edited for c in (EVAL_BUG, DIVERGES, BATCH_NORM_REACHES))
    # At init, nothing trains: S2's functions, S3's weights, S4's measurements, S5's decay.
    at_init = ("test_s2_", "test_s3_", "test_s4_", "test_s5_", "depth_8_gradient_ratio")
    assert not any(s in c for c in edited for s in at_init)


# -- a fragment's fresh part ------------------------------------------------------------------
def reading(key: str, value: float) -> Reading:
    """The first number of log line `key`, at `value`."""
    [(_, quantity), *_] = LOG.line_named(key).template.quantities()
    return Reading(key, quantity, value)


A, B = "claims/a.py::test_a", "claims/b.py::test_b"
SLOPE = reading("S2 max slope", 0.25)
RATIO = reading("S2 saturated slope", 0.017663)


def fragment(keys: dict[str, str], outcomes: dict[str, str] | None = None) -> Fragment:
    """A seed fragment of two claims: A[1] owns the max slope, B the saturated slope, and
    both checked the plain run's history."""
    outcomes = {f"{A}[1]": "passed", B: "failed"} if outcomes is None else outcomes
    owners = {SLOPE.name: A, RATIO.name: B}
    return Fragment(
        variant=Variant("init-seed-1", "init", seed=1),
        platform=json.loads((ROOT / "snapshots" / "environment.json").read_text()),
        claims={
            n: ClaimOutcome.from_json({"outcome": o, "sentence": "what it verifies"})
            for n, o in outcomes.items()
        },
        readings={n: r for n, r in ((SLOPE.name, SLOPE), (RATIO.name, RATIO)) if owners[n] in keys},
        tables={"runs/plain": {"step": [1.0]}},
        keys=keys,
        owners={n: c for n, c in owners.items() if c in keys},
        checked_by={"runs/plain": tuple(c for c in (A, B) if c in keys)},
    )


def test_a_fragments_fresh_part_holds_the_claims_whose_key_is_unchanged():
    old = fragment({A: "k1", B: "k2"})
    current = {A: "k1", B: "k2 edited"}
    fresh = old.fresh(current)
    assert fresh.outcomes == {f"{A}[1]": "passed"}  # by its claim, whatever its parameters
    assert list(fresh.readings) == [SLOPE.name]
    assert fresh.tables == old.tables  # one fresh checker is enough: a table is one computation
    assert old.stale(current) == [B]
    # A session of the stale claim alone, put over the fresh part: the whole fragment again.
    # It knew A only as deselected ("not run"): A keeps the outcome the fresh part holds.
    redone = fragment({B: "k2 edited"}, outcomes={B: "passed", f"{A}[1]": "not run"})
    whole = fresh.updated(redone)
    assert whole.stale(current) == []
    assert whole.outcomes == {f"{A}[1]": "passed", B: "passed"}
    assert set(whole.readings) == {SLOPE.name, RATIO.name}
    assert Fragment.from_json(whole.to_json()) == whole
    assert whole.encode() == fragment({A: "k1", B: "k2 edited"}, whole.outcomes).encode()


def test_a_store_computes_only_the_stale_claims_and_keeps_the_rest(tmp_path):
    keys = {A: "k1", B: "k2"}
    store = FragmentStore(tmp_path, keys)
    written = fragment(keys)
    assert store.to_compute(written.platform_id, "init-seed-1") == [A, B]  # nothing there yet
    path = store.write(written)
    store = FragmentStore(tmp_path, {A: "k1", B: "k2 edited"})
    assert store.to_compute(written.platform_id, "init-seed-1") == [B]
    assert store.stale_claims() == {B: 1}
    assert store.stale() == []  # it has a fresh part: kept
    # What a session of B alone computed goes over the fresh part of what was there.
    store.write(fragment({B: "k2 edited"}, outcomes={B: "passed"}))
    assert store.to_compute(written.platform_id, "init-seed-1") == []
    assert store.read(path).outcomes == {f"{A}[1]": "passed", B: "passed"}
    assert FragmentStore(tmp_path, {"claims/c.py::test_c": "k"}).stale() == [path]


def test_an_updates_fragments_are_kept_in_the_cache_and_put_back_where_still_fresh(tmp_path):
    """The record's folder is put back by an update that does not complete; what its sweep
    computed is kept in pytest's cache, and the next update finds it there."""
    record, cache = tmp_path / "fragments", Store(tmp_path / "cache")
    FragmentStore(record, {A: "k1", B: "k2"}).write(fragment({A: "k1", B: "k2"}))
    committed = {p: p.read_bytes() for p in record.rglob("*.json.gz")}
    edited = {A: "k1", B: "k2 edited"}
    update = FragmentStore(record, edited, kept=cache)
    update.write(fragment({B: "k2 edited"}, outcomes={B: "passed"}))  # B's evidence, computed
    for path, content in committed.items():  # rolled back: the record as committed
        path.write_bytes(content)
    again = FragmentStore(record, edited, kept=cache)
    [path] = committed
    assert again.to_compute(fragment({}).platform_id, "init-seed-1") == [B]
    assert again.restore_kept() == [path]
    assert again.to_compute(fragment({}).platform_id, "init-seed-1") == []
    assert again.read(path).outcomes == {f"{A}[1]": "passed", B: "passed"}
    assert again.restore_kept() == []  # nothing it holds is fresher now
    # What the cache holds for other code (the edit undone) puts nothing back.
    assert FragmentStore(record, {A: "k1", B: "k2 again"}, kept=cache).restore_kept() == []
    # Nor does it add a fragment the record lacks: what the evidence covers is the sweep's.
    path.unlink()
    assert FragmentStore(record, edited, kept=cache).restore_kept() == []


def test_an_update_on_a_new_reference_finds_what_it_computed_there_kept(tmp_path):
    """An update on a machine other than the reference computes the reference's own variants
    on it (`Sweep.new_reference`): once it is rolled back, the record holds them only on the
    old reference's platform, stale, and the next update puts back what it computed."""
    record, cache = tmp_path / "fragments", Store(tmp_path / "cache")
    old = fragment({A: "k1", B: "k2"})
    FragmentStore(record, {A: "k1", B: "k2"}).write(old)
    edited = {A: "k1", B: "k2 edited"}
    elsewhere = {**old.platform, "fingerprint": "feedfacefeed"}  # MKL's other path, say
    here = dataclasses.replace(fragment(edited), platform=elsewhere)
    assert here.platform_id != old.platform_id
    computed = FragmentStore(record, edited, kept=cache).write(here)
    computed.unlink()  # rolled back: the record as committed
    again = FragmentStore(record, edited, kept=cache)
    assert again.restore_kept() == []  # another update adds no platform the record lacks
    another_torch = {**elsewhere, "torch": "2.14.0+cpu"}  # kept from before an upgrade, say
    assert again.restore_kept(new_reference=another_torch) == []
    assert again.restore_kept(new_reference=elsewhere) == [computed]
    assert again.to_compute(here.platform_id, "init-seed-1") == []


def test_a_job_refuses_numbers_computed_by_other_code_than_the_checkouts_naming_both():
    checkout = Checkout({A: "k1", B: "k2"}, {"digest": "aaaa", "where": "/checkout/work"})
    ran = {f"{A}[1]": ClaimOutcome(ran=True, passed=True), B: ClaimOutcome(ran=True, failed=True)}
    same = Record(0, ran, {}, {}, keys={A: "k1", B: "k2"})
    checkout.check(same)  # the same keys: the checkout's code, wherever it lies
    other = Record(0, ran, {}, {}, keys={A: "k1", B: "k0"}, code={"digest": "bbbb", "where": "/x"})
    with pytest.raises(RuntimeError) as refused:
        checkout.check(other)
    assert str(refused.value).startswith(
        "this job computed with other code than the checkout's: the workshop it imported (/x, "
        "code digest bbbb) is not the checkout's (/checkout/work, code digest aaaa): the key of "
        f"{B} differs"
    )
    # A claim the session did not run is not judged by its key.
    checkout.check(
        Record(0, {f"{A}[1]": ClaimOutcome(ran=True, passed=True)}, {}, {}, keys={A: "k1"})
    )


def test_the_table_hides_the_readings_of_stale_claims_only():
    def evidence(name: str, claim: str) -> ReadingEvidence:
        seen = Seen(1.0, "1.0")
        return ReadingEvidence(name, 1, "ratio", name, ".1f", 0, seen, {}, {}, claim=claim)

    table = Fragility(
        readings={"r1": evidence("r1", A), "r2": evidence("r2", B)},
        keys={A: "k1", B: "k2"},
    )
    current = {A: "k1 edited", B: "k2"}
    assert table.stale_claims(current) == [A]
    assert table.stale_readings(current) == ["r1"]
    assert set(table.fresh(current).readings) == {"r2"}
    # Told apart from a reading no sweep measured: an edit made r1's evidence stale.
    assert table.fresh(current).stale == {"r1"}
    assert (
        status_of(None, stale=True)
        == "its evidence is of other code: its claim changed since the sweep"
    )
    assert status_of(None) == "no evidence of it yet"
    assert table.fresh({A: "k1", B: "k2"}) is table


def test_the_committed_evidence_is_keyed_by_this_checkouts_claims():
    """Every committed fragment is of the keyed format, and the sweep's table holds no stale
    claim: an edit that made some stale must come with the sweep that refreshes it."""
    places = Places(ROOT)
    keys = claim_keys(places, DECLARATION)
    table = json.loads(places.fragility_json.read_text())
    stale = sorted(c for c, k in table["keys"].items() if keys.get(c) != k)
    assert stale == [], f"stale evidence of {stale}: run python -m bnvg.sweep"
    store = FragmentStore(places.fragments, keys)
    assert store.stale_claims() == {}


def test_the_keys_are_kept_in_pytest_cache_for_every_process_while_no_file_changes(
    tmp_path, monkeypatch
):
    """Slicing the code costs each claims session about half a second; a session finds the
    keys an earlier one kept (in pytest's cache), and an edit that moves a key is sliced anew."""
    import claimlog.evidence.keys as keys
    from claimlog.store import Store

    project = scratch_copy(ROOT, tmp_path / "project")
    kept = Store(tmp_path / "cache")
    sliced = claim_keys(Places(project), DECLARATION, kept)
    assert sliced == claim_keys(Places(ROOT), DECLARATION)  # where the project lies changes no key

    def no_slicing(*args):
        raise AssertionError("the keys were sliced again")

    monkeypatch.setattr(keys, "_claim_keys", no_slicing)
    # Read back, as another process would.
    assert claim_keys(Places(project), DECLARATION, kept) == sliced

    claims = project / "claims" / "test_s2_sigmoid_and_loss.py"
    claims.write_text(claims.read_text().replace("about(0.0177)", "about(0.018)", 1))
    with pytest.raises(AssertionError, match="sliced again"):
        claim_keys(Places(project), DECLARATION, kept)
    monkeypatch.undo()
    edited = claim_keys(Places(project), DECLARATION, kept)
    assert sorted(c for c in sliced if edited[c] != sliced[c]) == [SATURATED]
