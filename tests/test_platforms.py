"""Platforms other than the reference, simulated on this machine with ATen's scalar kernels
(`ATEN_CPU_CAPABILITY=default`, whose numbers differ from the reference's in the training-end
digits): held by the evidence, it is compared exactly with its own fragment; with its
fragment removed, it is a new platform, whose claims pass on their statements with what moved
reported as drift, and fail where a statement breaks.

Each runs the eval-bug claims (one network) in a scratch copy of the project, in a subprocess
(the test of another experiment's outputs, the S5 claims, which train nothing).
"""

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from claimlog.runner import environment, run_claims, scratch_copy

ROOT = Path(__file__).resolve().parent.parent
SCALAR = {"ATEN_CPU_CAPABILITY": "default"}
EVAL_BUG = Path("claims") / "test_s9_eval_bug.py"


def scalar_fragment(project):
    [fragment] = (project / "snapshots/evidence/fragments").glob(
        "*-aten-default-mkl-compatible-onednn-avx2-1t-*/aten-default.json.gz"
    )
    return fragment


@pytest.fixture(scope="session")
def scalar_cache(shared_folder):
    """One cache for this module's runs, on whichever xdist worker each runs: the scalar
    kernels' batch-norm net is trained once (a session that needs it while another trains it
    waits for that one's entry: `claimlog.store`)."""
    return shared_folder / "scalar-cache"


def eval_bug_on_scalar_kernels(project, cache, out):
    return run_claims(
        ["-k", "eval_bug"], cwd=project, outputs=out, env=SCALAR, timeout=900, cache_dir=cache
    )


@pytest.fixture
def project(tmp_path):
    return scratch_copy(ROOT, tmp_path / "project")


@pytest.mark.slow
def test_a_platform_the_evidence_holds_is_compared_exactly_with_its_own_numbers(
    project, tmp_path, scalar_cache
):
    run = eval_bug_on_scalar_kernels(project, scalar_cache, tmp_path / "held")
    assert run.returncode == 0, run.tail()
    assert run.record.standing["kind"] == "held"
    assert all(not c.drift for c in run.record.claims.values())
    # Its own evidence, changed: the same run now fails, naming the reading and both values.
    path = scalar_fragment(project)
    fragment = json.loads(gzip.decompress(path.read_bytes()))
    gamma = fragment["readings"]["S9 gamma, neuron 2"]
    computed = gamma["value"]
    gamma["value"] = computed * 1.11
    path.write_bytes(gzip.compress(json.dumps(fragment).encode()))
    run = eval_bug_on_scalar_kernels(project, scalar_cache, tmp_path / "changed")
    assert run.returncode == 1
    assert (
        run.record.outcome(
            f"{EVAL_BUG}::test_eval_bug_net_learned_a_gamma_far_from_1_in_its_first_batch_norm_layer"
        )
        == "failed"
    )
    assert "S9 gamma, neuron 2: this platform's evidence " in run.stdout


@pytest.mark.slow
def test_a_new_platform_passes_on_its_statements_reporting_drift_and_fails_a_broken_one(
    project, tmp_path, scalar_cache
):
    shutil.rmtree(scalar_fragment(project).parent)
    claim = project / EVAL_BUG
    source = claim.read_text()
    # A statement broken on purpose: the correct eval-mode score said to be 99%, not 100%.
    broken = source.replace(
        'quoted.lines(fill.eval_mode(eval_bug), holds={"test accuracy": exactly(100)})',
        'quoted.lines(fill.eval_mode(eval_bug), holds={"test accuracy": exactly(99)})',
    )
    assert broken != source
    claim.write_text(broken)
    run = eval_bug_on_scalar_kernels(project, scalar_cache, tmp_path / "new")
    record = run.record
    assert record.standing["kind"] == "new"
    outcomes = {
        nodeid.rsplit("::", 1)[1]: c.outcome
        for nodeid, c in record.claims.items()
        if c.outcome != "not run"  # the claims -k left out
    }
    assert outcomes.pop("test_eval_bug_in_eval_mode_the_net_scores_100_percent") == "failed"
    assert list(outcomes.values()) == ["passed"] * 3
    assert (
        "S9 eval mode, test accuracy: 100.0, but the claim says exactly 99 (log line 101)"
        in run.stdout
    )
    drift = [d for c in record.claims.values() for d in c.drift]
    assert any(d.startswith("run 'batch norm': ") and "points moved" in d for d in drift)
    assert any(d.startswith("S9 gamma, neuron 2: snapshot 4.03, here ") for d in drift)
    assert "this platform is new to the evidence" in run.stdout
    assert "python -m bnvg.sweep --here" in run.stdout


# -- the reference, wherever it runs; another experiment -----------------------------------------


def test_another_vendor_and_model_under_the_reference_kernels_stand_as_the_reference():
    from claimlog.evidence.verdicts import REFERENCE
    from claimlog.platform import Platform, read_reference
    from claimlog.plugin.session import reference_or_new

    settings = standing_settings()
    reference = read_reference(settings.places.environment)
    assert reference is not None and not reference.cpu  # an identity names no machine
    for cpu in ("GenuineIntel family 6 model 167 (Intel Xeon)", "AuthenticAMD family 25 model 1"):
        here = Platform.from_json({**reference.to_json(), "cpu": cpu, "python": "3.11.7"})
        assert reference_or_new(here, settings, reference).kind == REFERENCE


def standing_settings(**changes):
    """The settings of a plain `pytest claims/` in this checkout."""
    import dataclasses

    from claimlog.places import Places
    from claimlog.plugin.options import Settings

    places = Places(ROOT)
    plain = Settings(
        places=places,
        results_log=places.results_log,
        diagrams=places.diagrams,
        strict=False,
        update=False,
        recompute=False,
        torch_threads=1,
        native_kernels=False,
        kernels={},
        seeds={"sampler": None, "init": None},
        record=None,
    )
    return dataclasses.replace(plain, **changes)


def test_an_update_moves_the_reference_only_where_it_computes_as_the_references_jobs_would():
    """An update on a platform other than the recorded reference records this machine as the
    reference, and its sweep computes the reference's own evidence here
    (`claimlog.sweep.updating`), only where this session computes as those jobs would: under
    another thread count, the native kernels, kernels the user chose, or on `--scheduler`'s
    machines, they land on other platforms than the session's, and the reference stays."""
    import dataclasses

    from claimlog.platform import Platform
    from claimlog.sweep.updating import becomes_reference

    reference = Platform.from_json(
        json.loads((ROOT / "snapshots" / "environment.json").read_text())
    )
    zen = dataclasses.replace(reference, fingerprint="7df137a53490")  # MKL's other path, say
    update = standing_settings(update=True)
    assert becomes_reference(zen, reference, update, None)
    assert not becomes_reference(reference, reference, update, None)
    two = standing_settings(update=True, torch_threads=2)
    assert not becomes_reference(dataclasses.replace(zen, threads=2), reference, two, None)
    native = standing_settings(update=True, native_kernels=True)
    assert not becomes_reference(zen, reference, native, None)
    chosen = standing_settings(update=True, kernels={"MKL_CBWR": "user"})
    assert not becomes_reference(zen, reference, chosen, None)
    assert not becomes_reference(zen, reference, update, "tcp://10.0.0.1:8786")


@pytest.mark.slow
def test_a_changed_recipe_fails_exactly_on_the_reference_and_the_evidence_is_stale(tmp_path):
    """lr 0.5 -> 0.45 in a copy of bnvg: every eval-bug claim reads the moved batch-norm
    run and fails, nothing is reported as drift, and the summary names the eval-bug claims'
    evidence as stale (computed from other code) and the command that computes it again."""
    project = scratch_copy(ROOT, tmp_path / "project")
    shutil.copytree(ROOT / "bnvg", project / "bnvg", ignore=shutil.ignore_patterns("__pycache__"))
    config = project / "bnvg" / "experiment" / "config.py"
    recipe = config.read_text()
    changed = recipe.replace("    lr: float = 0.5  #", "    lr: float = 0.45  #")
    assert changed != recipe
    config.write_text(changed)
    run = run_claims(
        ["-k", "eval_bug"],
        cwd=project,
        outputs=tmp_path / "out",
        env={"PYTHONPATH": str(project)},
        cache_dir=tmp_path / "cache",
    )
    record = run.record
    assert record.standing["kind"] == "reference"
    ran = {n: c for n, c in record.claims.items() if c.outcome != "not run"}
    assert len(ran) == 4 and all(c.outcome == "failed" for c in ran.values()), run.tail()
    assert all(not c.drift for c in record.claims.values())
    assert "run 'batch norm' differs from its snapshot" in run.stdout
    assert "was computed from other code than this checkout's" in run.stdout
    stale = run.stdout.split("the evidence is stale")[1]
    assert "test_s9_eval_bug.py::test_" in stale
    assert "Compute only these again: python -m bnvg.sweep" in stale


def pytest_in(project, *args):
    """`pytest claims/ ARGS` as a user types it in `project`: its own outputs, pytest's cache."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "claims/", *args],
        cwd=project,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.mark.slow
def test_another_experiment_writes_nothing_committed_and_says_where_it_wrote(tmp_path):
    """Narrowed to the S5 claims, which train nothing and draw a figure: where a seeded
    session writes its log and figures does not depend on which claims it runs, and this
    session writes both (a session of the eval-bug claims would train a network first)."""
    project = scratch_copy(ROOT, tmp_path / "project")
    done = pytest_in(project, "-k", "geometric_decay", "--init-seed", "1")
    assert not (project / "captures").exists() and not (project / "diagrams").exists()
    elsewhere = project / ".pytest_cache/d/bnvg-seeds/init-seed-1"
    assert (elsewhere / "results.log").is_file()
    assert (elsewhere / "diagrams" / "geometric_decay.png").is_file()
    assert "wrote .pytest_cache/d/bnvg-seeds/init-seed-1/results.log" in done.stdout
    assert "never in captures/ or diagrams/" in done.stdout
    refused = pytest_in(project, "--init-seed", "1", "--diagrams", "diagrams")
    assert refused.returncode == pytest.ExitCode.USAGE_ERROR
    assert "never writes the workshop's committed log or figures" in refused.stderr
