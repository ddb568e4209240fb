"""The second workshop (workshops/dropout/): claimlog runs a workshop it was not written for.

Dropout against overfitting is written only against claimlog's documented API (docs/engine.md):
its recipe, a log of eleven lines, five claims, its snapshots and a page of text citing the
log. In a scratch copy of its folder, as its author would work: `pytest` runs its claims and
checks its text, and an edit of the recipe goes through one `--snapshot-update`: the evidence
the edit made stale computed again first (the sweep of those claims alone), then the
snapshots, the log and the text's quotes, all at once. It is ordinary PyTorch (`nn.Linear`, `nn.Dropout`), whose bits differ by
CPU: tests/test_fingerprint.py runs it on both of MKL's paths.
"""

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import workshop_copy

ROOT = Path(__file__).resolve().parent.parent
WORKSHOP = ROOT / "workshops" / "dropout"


@pytest.fixture
def dropout(tmp_path):
    """A scratch copy of the workshop's folder, whose own package is the one imported (an
    edit of its recipe is the workshop's edit), and a runner of commands in it."""
    copy, env = workshop_copy(WORKSHOP, tmp_path, PYTHONPATH=str(tmp_path / WORKSHOP.name))

    def run(*args, passes=True):
        done = subprocess.run(
            [sys.executable, *args], cwd=copy, env=env, capture_output=True, text=True
        )
        assert (done.returncode == 0) == passes, done.stdout[-3000:] + done.stderr[-3000:]
        return done.stdout

    run.path = copy
    return run


@pytest.mark.slow
def test_its_claims_log_text_update_and_sweep_work_as_an_author_uses_them(dropout):
    """One author's session, start to end (each step a command in the workshop's folder), on
    whatever machine runs it: its nets are 64 wide, so MKL's path on this CPU decides their
    bits, and the run says which platform it computed on."""
    # `pytest`: its claims pass, its text's citations are checked, each a test of its own,
    # and on the reference its log is the committed one, byte for byte (elsewhere it is this
    # platform's: the evidence holds both of MKL's paths).
    said = dropout("-m", "pytest", "-v")
    committed = (dropout.path / "captures" / "results.log").read_bytes()
    header = next(line for line in said.splitlines() if line.startswith("dropout: "))
    if header.startswith("dropout: the reference platform"):
        assert (dropout.path / "obtained" / "results.log").read_bytes() == committed
    else:  # another MKL path, held by the evidence; or a CPU new to it (its sentences decide)
        assert header.startswith(
            ("dropout: a platform the evidence holds", "dropout: a platform new to the evidence")
        ), header
    assert said.count("claims/test_dropout.py::") == 5
    cited = re.findall(r"\bline \d+\)", (dropout.path / "text" / "dropout.md").read_text())
    assert said.count("text/dropout.md::") == len(cited) == 9
    assert "every number of the prose of its 1 document cites a line" in said

    # The evidence of one seed, not 32, for the suite's sake (the machinery is the same):
    # the others' fragments go, and the tables are merged again without them.
    for seed in (dropout.path / "snapshots" / "evidence").rglob("*-seed-*.json.gz"):
        if not seed.name.endswith("-seed-1.json.gz"):
            seed.unlink()
    assert list((dropout.path / "snapshots" / "evidence").rglob("*-seed-1.json.gz"))
    dropout("-m", "claimlog.sweep", "--merge-only")

    experiment = dropout.path / "dropout" / "experiment.py"
    experiment.write_text(experiment.read_text().replace("steps: int = 600", "steps: int = 500", 1))
    # A normal run computes the edit, fails what moved, and changes nothing committed.
    before = {
        p: p.read_bytes()
        for p in dropout.path.rglob("*")
        if p.is_file() and not {"obtained", ".pytest_cache", "__pycache__"} & set(p.parts)
    }
    dropout("-m", "pytest", passes=False)
    assert all(p.read_bytes() == b for p, b in before.items())

    # One command brings the record up to the edit: the stale evidence first, on each
    # platform and seed the evidence holds that this machine computes, then the claims and the
    # text. A quote the new value breaks fails it, and it writes nothing at all...
    document = dropout.path / "text" / "dropout.md"
    text = document.read_text()
    document.write_text(text + "\nIt trains for more than 550 full-batch steps (line 4).\n")
    said = dropout("-m", "pytest", "--snapshot-update", passes=False)
    assert "the evidence of 5 claims was computed from other code than this checkout's" in said
    assert "jobs to run" in said
    assert (
        "text/dropout.md:24: quotes 550 (log line 4): no longer true, the new value is 500" in said
    )
    assert all(p.read_bytes() == b for p, b in before.items() if p != document)
    # ... but keeps what it computed in pytest's cache: once the author rewords the sentence,
    # the same command computes nothing again.
    document.write_text(text)
    said = dropout("-m", "pytest", "--snapshot-update")
    assert re.search(r"reused \d+ fragments an earlier update computed from this code", said)
    assert "jobs to run" not in said
    log = (dropout.path / "captures" / "results.log").read_text()
    assert "500 full-batch Adam steps" in log
    assert "for 500 full-batch Adam steps (line 4)" in document.read_text()
    # The steps the prose quotes, and every number of the two fits that moved with them
    # (which ones, this machine's MKL path decides): the run after the update checks them all.
    assert re.search(r"rewrote \d+ quotes whose numbers moved, in 1 document", said)
    assert "text/dropout.md:6  600 -> 500 (log line 4, net, steps)" in said
    assert "the evidence is stale" not in said  # the update's own summary: it is not now
    # The new record, the rewritten text, the evidence of the new code: all of it holds.
    header = dropout("-m", "pytest").splitlines()
    assert any(line.startswith("dropout: ") and "the evidence is fresh" in line for line in header)


def test_an_update_whose_sweep_fails_says_why_and_writes_nothing(dropout):
    """pytest ends a session on `session.Failed` without a word: the update's sweep says why
    it stops before it does (here one of its jobs failed), and the record stays as it was."""
    experiment = dropout.path / "dropout" / "experiment.py"
    experiment.write_text(experiment.read_text().replace("steps: int = 600", "steps: int = 500", 1))
    before = {p: p.read_bytes() for p in dropout.path.rglob("*") if p.is_file()}
    said = dropout(
        "-c",
        "import sys, pytest, claimlog.sweep.cluster as cluster\n"
        "cluster.compute = lambda *args, **kwargs: ['workshop']  # as if its job failed\n"
        "sys.exit(pytest.main(['--snapshot-update']))",
        passes=False,
    )
    assert (
        "1 of the sweep's jobs failed (workshop): the evidence is not up to date, and the "
        "update writes nothing" in said
    )
    assert "nothing of it was written" in said
    assert all(p.read_bytes() == b for p, b in before.items())


@pytest.mark.slow
def test_an_update_that_moves_the_reference_writes_nothing_unless_it_records_it(
    tmp_path, mkl_paths
):
    """Under MKL's Zen path dropout's nets give other bits than its reference, so an update
    there records this machine as the reference, and its sweep computes the reference's own
    evidence on it first. An update that then records no reference (a claim skipped: the log
    is incomplete) must not keep that evidence either, which would name another reference
    than snapshots/environment.json: it writes nothing, saying why."""
    variables = {"PYTHONPATH": str(tmp_path / WORKSHOP.name), "LD_PRELOAD": str(mkl_paths["zen"])}
    copy, env = workshop_copy(WORKSHOP, tmp_path, **variables)

    def run(*args):
        done = subprocess.run([sys.executable, *args], cwd=copy, env=env, capture_output=True)
        return done.returncode, done.stdout.decode() + done.stderr.decode()

    for seed in (copy / "snapshots" / "evidence").rglob("*-seed-*.json.gz"):
        seed.unlink()  # no seed, for the suite's sake: the machinery is the same
    assert run("-m", "claimlog.sweep", "--merge-only")[0] == 0
    experiment = copy / "dropout" / "experiment.py"
    experiment.write_text(experiment.read_text().replace("steps: int = 600", "steps: int = 500", 1))
    claims = copy / "claims" / "test_dropout.py"
    skipped = '@pytest.mark.skip(reason="this test\'s")\n@pytest.mark.log_lines("without dropout")'
    claims.write_text(
        claims.read_text().replace('@pytest.mark.log_lines("without dropout")', skipped)
    )
    before = {
        p: p.read_bytes()
        for p in copy.rglob("*")
        if p.is_file() and not {"obtained", ".pytest_cache", "__pycache__"} & set(p.parts)
    }
    code, said = run("-m", "pytest", "--snapshot-update", "-p", "no:claimlog.text")
    assert code != 0, said[-3000:]
    assert "this machine becomes the reference" in said
    assert (
        "the evidence was merged with this machine as the reference, which only a full update "
        "in which every claim passes records: nothing is written" in said
    )
    assert all(p.is_file() and p.read_bytes() == b for p, b in before.items())
    assert "nothing of it was written" in said


@pytest.mark.slow
@pytest.mark.parametrize("mkl_path", ["", "zen"], ids=["this-cpus-mkl-path", "mkl-zen-path"])
def test_an_edit_that_changes_the_kernels_names_the_evidence_by_them(tmp_path, request, mkl_path):
    """A platform is named by what the workshop's kernels give there, and a narrower net calls
    other kernels (other shapes): a fingerprint of the old kernels compares with none of the
    new. So the update that records them names each fragment of this machine's platforms by
    what the new kernels give here, retires another machine's (only that machine can say
    which platform its numbers are of now), and merges the tables again: the sweep after it
    finds every fragment there, and no platform is held under two names. Under MKL's Zen path
    the same update also makes this machine the reference (its bits are not the record's)."""
    from claimlog.evidence.fragments import FragmentStore
    from claimlog.platform import Platform

    variables = {"PYTHONPATH": str(tmp_path / WORKSHOP.name)}
    if mkl_path:
        variables["LD_PRELOAD"] = str(request.getfixturevalue("mkl_paths")[mkl_path])
    copy, env = workshop_copy(WORKSHOP, tmp_path, **variables)

    def run(*args):
        done = subprocess.run([sys.executable, *args], cwd=copy, env=env, capture_output=True)
        said = done.stdout.decode() + done.stderr.decode()
        assert done.returncode == 0, said[-3000:]
        return said

    fragments = copy / "snapshots" / "evidence" / "fragments"
    for seed in fragments.rglob("*-seed-*.json.gz"):
        if not seed.name.endswith("-seed-1.json.gz"):
            seed.unlink()  # one seed, for the suite's sake: the machinery is the same
    # This machine's own platforms (MKL's path, the native kernels), as a sweep here adds them:
    # the committed evidence holds those of the CPU that computed it.
    run("-m", "claimlog.sweep", "--seeds", "1")
    experiment = copy / "dropout" / "experiment.py"
    experiment.write_text(experiment.read_text().replace("width: int = 64", "width: int = 48", 1))

    # Another machine's fragment of the edited code, as its sweep wrote it before this
    # update: MKL's path on an Intel Xeon, fingerprinted by the kernels the record names.
    keys = run(
        "-c",
        "import json, pathlib\n"
        "from claimlog.evidence.keys import claim_keys\n"
        "from claimlog.places import Places\n"
        "from dropout.workshop import DECLARATION\n"
        "print(json.dumps(claim_keys(Places(pathlib.Path.cwd()), DECLARATION)))",
    )
    store = FragmentStore(fragments, {})
    theirs = store.read(next(fragments.glob("*/mkl-auto.json.gz")))
    intel = {**theirs.platform, "cpu": "GenuineIntel family 6 model 207 (Intel Xeon)"}
    intel["fingerprint"] = "0123456789ab"
    keys = json.loads(next(line for line in keys.splitlines() if line.startswith("{")))
    store.write(dataclasses.replace(theirs, platform=intel, keys=keys))
    intel_fragment = fragments / Platform.from_json(intel).id / "mkl-auto.json.gz"
    assert intel_fragment.is_file()

    said = run("-m", "pytest", "--snapshot-update")
    assert re.search(r"the workshop calls other kernels \(\d+ of the \d+ recorded no longer", said)
    named = re.search(
        r"named (\d+) fragments of this machine's platforms by the fingerprints", said
    )
    assert named, said[-3000:]
    retired = intel_fragment.relative_to(copy)
    assert f"retired {retired}: another machine's, fingerprinted by the old kernels" in said
    assert not intel_fragment.exists()

    # Every fragment is named by the kernels the record now names: the sweep finds them all
    # there, computes nothing, and adds no platform.
    folders = sorted(p.name for p in fragments.iterdir())
    assert len(list(fragments.glob("*/*.json.gz"))) == int(named[1])
    said = run("-m", "claimlog.sweep", "--seeds", "1")
    assert f"nothing to compute: all {named[1]} fragments are there" in said
    assert sorted(p.name for p in fragments.iterdir()) == folders
    reference = Platform.from_json(
        json.loads((copy / "snapshots" / "environment.json").read_text())
    )
    fragility = json.loads((copy / "snapshots" / "evidence" / "fragility.json").read_text())
    assert fragility["reference"] == f"{reference.id}/workshop"
    said = run("-m", "pytest")
    assert any(
        line.startswith("dropout: the reference platform") and "the evidence is fresh" in line
        for line in said.splitlines()
    ), said[-3000:]


def test_an_update_that_cannot_name_the_evidence_by_new_kernels_writes_nothing(dropout):
    """Without the sweep's plugin nothing names the evidence's platforms by the kernels an
    edit made the workshop call: the update writes nothing rather than keep platforms under
    names no fingerprint of today compares with."""
    experiment = dropout.path / "dropout" / "experiment.py"
    experiment.write_text(experiment.read_text().replace("width: int = 64", "width: int = 48", 1))
    before = {p: p.read_bytes() for p in dropout.path.rglob("*") if p.is_file()}
    off = ("-p", "no:claimlog.sweep", "-p", "no:claimlog.evidence", "-p", "no:claimlog.text")
    said = dropout("-m", "pytest", "--snapshot-update", *off, passes=False)
    assert (
        "the workshop calls other kernels than the record names, so the evidence's platforms, "
        "fingerprinted by the old ones, compare with none of today's, and nothing here names "
        "them again" in said
    )
    assert "nothing of it was written" in said
    assert all(p.read_bytes() == b for p, b in before.items())
