"""One test per variant: the whole claims suite, run under it, writes its log."""

from __future__ import annotations

import subprocess
import sys

import pytest
from variants import Variant, environment_for, scratch_copy, variants


@pytest.mark.parametrize("variant", variants(), ids=lambda v: v.name)
def test_claims_run_under(variant: Variant, tmp_path) -> None:
    project = scratch_copy(tmp_path)
    args = [
        sys.executable,
        "-m",
        "pytest",
        "claims/",
        "-n",
        "0",
        "-q",
        "-p",
        "no:cacheprovider",
        "--snapshot-update",
        f"--results-log={variant.log}",
        f"--diagrams={tmp_path / 'diagrams'}",
        f"--torch-threads={variant.threads}",
    ]
    if variant.sampler_seed is not None:
        args.append(f"--sampler-seed={variant.sampler_seed}")
    result = subprocess.run(
        args,
        cwd=project,
        env=environment_for(variant),
        capture_output=True,
        text=True,
        timeout=1800,
    )
    # Claims may fail under a variant (that is what the sweep is for); the log must exist.
    assert variant.log.exists(), result.stdout[-3000:] + result.stderr[-3000:]
    assert result.returncode in (0, 1), result.stdout[-3000:] + result.stderr[-3000:]
