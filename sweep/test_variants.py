"""One test per variant: the whole claims suite, run under it, leaves its session record."""

from __future__ import annotations

import shutil

import pytest
from variants import Variant, environment_for, scratch_copy, variants

from bnvg.runner import run_claims


@pytest.mark.parametrize("variant", variants(), ids=lambda v: v.name)
def test_claims_run_under(variant: Variant, tmp_path) -> None:
    project = scratch_copy(tmp_path / "project")
    args = ["-n", "0", "-q", "--snapshot-update", f"--torch-threads={variant.threads}"]
    if variant.sampler_seed is not None:
        args.append(f"--sampler-seed={variant.sampler_seed}")
    run = run_claims(args, cwd=project, outputs=tmp_path / "out", env=environment_for(variant))
    # Claims may fail under a variant (that is what the sweep is for); the record must exist.
    assert run.record_path.exists(), run.tail()
    assert run.returncode in (0, 1), run.tail()
    variant.record.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(run.record_path, variant.record)
