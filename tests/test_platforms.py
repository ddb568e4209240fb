"""Platforms other than the reference, simulated on this machine with ATen's scalar kernels
(`ATEN_CPU_CAPABILITY=default`, whose numbers differ from the reference's in the training-end
digits): held by the evidence, it is compared exactly with its own fragment; with its
fragment removed, it is a new platform, whose claims pass on their statements with what moved
reported as drift, and fail where a statement breaks.

Each runs the eval-bug claims (one network) in a scratch copy of the project, in a subprocess.
"""

import gzip
import json
import shutil
from pathlib import Path

import pytest

from bnvg.runner import run_claims, scratch_copy

ROOT = Path(__file__).resolve().parent.parent
SCALAR = {"ATEN_CPU_CAPABILITY": "default"}
EVAL_BUG = Path("claims") / "test_s9_eval_bug.py"


def scalar_fragment(project):
    [folder] = (project / "snapshots/evidence/fragments").glob("*-aten-default-mkl-compatible-*")
    return folder / "aten-default.json.gz"


@pytest.fixture(scope="module")
def scalar_cache(tmp_path_factory):
    """One cache for this module's runs: the scalar kernels' batch-norm net is trained once."""
    return tmp_path_factory.mktemp("scalar-cache")


def eval_bug_on_scalar_kernels(project, cache, out):
    return run_claims(
        ["-k", "eval_bug"], cwd=project, outputs=out, env=SCALAR, timeout=900, cache_dir=cache
    )


@pytest.fixture
def project(tmp_path):
    return scratch_copy(ROOT, tmp_path / "project")


def test_a_platform_the_evidence_holds_is_compared_exactly_with_its_own_numbers(
    project, tmp_path, scalar_cache
):
    run = eval_bug_on_scalar_kernels(project, scalar_cache, tmp_path / "held")
    assert run.returncode == 0, run.tail()
    assert run.record.standing["kind"] == "held"
    assert all(c.drift == () for c in run.record.claims.values())
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
