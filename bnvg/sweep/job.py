"""One job of the sweep: a variant's whole claims session, run where a Dask worker runs it.

The job receives the project (its claims, snapshots and configuration, packed once by the
client and shared with every worker), unpacks it in a scratch folder, notes which experiment
it is (`bnvg.evidence.fragments`), runs `pytest claims/`
there under the variant with `--snapshot-update` (so a number that moved is recorded, not a
failure: only the claims' own assertions decide their outcome), and returns the fragment
built from the session's record. It runs on whichever machine the worker is on, so a worker
elsewhere contributes its own platform.

The bnvg installed beside the worker does the computing: a worker on another machine needs
the project installed as the README says.
"""

from __future__ import annotations

import io
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from bnvg.evidence.fragments import Variant, experiment_fingerprint, from_record
from bnvg.places import Places
from bnvg.runner import PROJECT_FILES, run_claims

# Claims that read the sweep's own tables (marked `evidence`) are no claims about a seed.
NOT_EVIDENCE = "not evidence"


def pack(root: Path) -> bytes:
    """The project's claims, snapshots and configuration as a tar.gz, without the sweep's
    fragments (evidence for the merge, not for the claims) and caches."""

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        parts = Path(info.name).parts
        if "__pycache__" in parts or "fragments" in parts:
            return None
        return info

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name in PROJECT_FILES:
            tar.add(root / name, arcname=name, filter=keep)
    return buffer.getvalue()


def worker_cache() -> Path | None:
    """A pytest cache of the Dask worker this runs on, in its local directory (which lives as
    long as the worker), or None off a worker: a worker on another machine keeps what its
    jobs computed (torch's facts, trained runs, each keyed by what it depends on) for its
    later jobs, as a local cluster's jobs share the project's cache."""
    from distributed import get_worker

    try:
        return Path(get_worker().local_directory) / "bnvg-cache"
    except ValueError:  # not in a worker's task
        return None


def run_variant(
    variant: Variant, project: bytes, select: str | None = None, cache_dir: str | None = None
) -> dict[str, Any]:
    """Run the claims under `variant` and return its fragment, as JSON-able data.
    `cache_dir`: the pytest cache the session reuses and fills (the project's own for a local
    cluster); without it, the worker's own (`worker_cache`)."""
    with tempfile.TemporaryDirectory(prefix="bnvg-sweep-") as scratch:
        root = Path(scratch) / "project"
        with tarfile.open(fileobj=io.BytesIO(project), mode="r:gz") as tar:
            # The "data" filter refuses links and paths out of the folder. Python 3.11.2
            # (Debian bookworm's, the arm64 evidence's) predates filters: there the archive,
            # packed by `pack` from the project itself, is unpacked as it is.
            if hasattr(tarfile, "data_filter"):
                tar.extractall(root, filter="data")
            else:
                tar.extractall(root)
        # The experiment this job measures: the project's, before the session updates the
        # scratch copy's snapshots with what this variant computes.
        experiment = experiment_fingerprint(Places(root))
        args = ["-n", "0", "-q", "--snapshot-update", *variant.args()]
        args += ["-m", NOT_EVIDENCE, *(["-k", select] if select else [])]
        # Two variants may share a core: threads that spin while they wait would starve each
        # other. Waiting passively changes when a thread runs, never what it computes.
        env = {"OMP_WAIT_POLICY": "PASSIVE", **variant.env()}
        run = run_claims(
            args,
            cwd=root,
            outputs=Path(scratch) / "out",
            env=env,
            cache_dir=Path(cache_dir) if cache_dir else worker_cache(),
        )
        if not run.record_path.exists() or run.returncode not in (0, 1):
            raise RuntimeError(f"the claims under {variant.name} did not finish:\n{run.tail()}")
        return from_record(variant, run.record, experiment).to_json()
