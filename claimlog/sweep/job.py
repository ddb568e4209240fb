"""One job of the sweep: a variant's claims session, run where a Dask worker runs it.

The job receives the project (its claims, snapshots and configuration, packed once by the client
and shared with every worker), runs `pytest claims/` under the variant, only the claims whose
evidence is stale when the sweep says which, with `--snapshot-update` (so a number that moved is
recorded, not a failure: only the claims' own assertions decide their outcome) and
`--no-figures` (a fragment reads no picture), and returns the fragment built from the session's
record, each claim under the key the session found in the code it ran
(`claimlog.evidence.keys.claim_keys`). It runs on whichever machine the worker is on, so a
worker elsewhere contributes its own platform.

A job costs its computation and little else: a variant under the reference kernels (every
seed, and the workshop itself) runs in the worker's own process, which keeps torch, the
claims' imports and one copy of the project from one job to the next; one that sets other
kernel variables runs in a fresh process (torch reads them once, at import).

The workshop installed beside the worker does the computing: a worker on another machine needs
the project installed as the README says. A job whose session computed with other code than
the checkout's fails, naming both (`Checkout`): its numbers never stand under the checkout's
keys.
"""

from __future__ import annotations

import atexit
import inspect
import io
import json
import os
import shutil
import sys
import tarfile
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from claimlog.declaration import Together, declared_in, package_in
from claimlog.evidence.fragments import Variant, from_record
from claimlog.evidence.keys import claim_of
from claimlog.evidence.record import Record
from claimlog.kernels import fingerprint, kernel_bits, reference_kernels
from claimlog.machine import TORCH_FACTS_FOLDER, import_torch, torch_facts
from claimlog.places import Places
from claimlog.platform import VARIABLES, Platform, apply
from claimlog.runner import PROJECT_FILES, pytest_here, run_claims, run_claims_here
from claimlog.runs import TrainedRuns
from claimlog.store import COMPUTED, MISSING, Entry, Store, digest
from claimlog.sweep.progress import Phases

# Claims that read the sweep's own tables (marked `evidence`) are no claims about a seed.
NOT_EVIDENCE = "not evidence"
# Two jobs may share a core: threads that spin while they wait would starve each other.
# Waiting passively changes when a thread runs, never what it computes.
WAIT_PASSIVELY = {"OMP_WAIT_POLICY": "PASSIVE"}


@dataclass(frozen=True)
class Checkout:
    """The code a sweep's jobs must compute with: the checkout the sweep was started in, as
    its claims' keys (`claim_keys`) and its code's digest and folder (`code_of`). A worker
    computes with the workshop installed beside it, which may be another checkout's (an
    editable install elsewhere, an older release on a remote machine): its numbers would be
    filed under keys that do not name the code that computed them."""

    keys: Mapping[str, str]
    code: Mapping[str, str]

    def check(self, record: Record) -> None:
        """RuntimeError, naming both codes, unless the session of `record` computed each of
        its claims with this checkout's code (the same key)."""
        ran = sorted({claim_of(n) for n, c in record.claims.items() if c.ran})
        differ = [c for c in ran if c in self.keys and record.keys.get(c) != self.keys[c]]
        if not differ:
            return
        theirs = record.code or {"where": "unknown", "digest": "unknown"}
        raise RuntimeError(
            f"this job computed with other code than the checkout's: the workshop it imported "
            f"({theirs['where']}, code digest {theirs['digest']}) is not the checkout's "
            f"({self.code['where']}, code digest {self.code['digest']}): "
            + (
                f"the key of {differ[0]} differs"
                if len(differ) == 1
                else f"the keys of {len(differ)} claims differ, {differ[0]} among them"
            )
            + ". Install the checkout's code where the worker runs (pip install -e . in the "
            "checkout), or sweep where it is installed"
        )


def pack(root: Path) -> bytes:
    """The project's claims, snapshots and configuration as a tar.gz, without the sweep's
    fragments (evidence for the merge, not for the claims) and caches; and the workshop's own
    package where it lies in the project (`package_in`), as `claimlog init` writes it: a job
    then imports the checkout's code with no install, as the project's own pytest does."""

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        parts = Path(info.name).parts
        if "__pycache__" in parts or "fragments" in parts:
            return None
        return info

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        package = package_in(root)
        for name in (*PROJECT_FILES, *([package] if package else [])):
            if (root / name).exists():  # a workshop without a conftest.py needs none
                tar.add(root / name, arcname=name, filter=keep)
    return buffer.getvalue()


def worker_cache(worker: Any = None) -> Path | None:
    """A pytest cache of the Dask worker this runs on (or `worker`, which `client.run` hands
    a function it runs outside any task), in its local directory (which lives as long as the
    worker), or None off a worker: a worker on another machine keeps what its jobs computed
    (torch's facts, trained runs, each keyed by what it depends on) for its later jobs, as a
    local cluster's jobs share the project's cache."""
    from distributed import get_worker

    try:
        return Path((worker or get_worker()).local_directory) / "claimlog-cache"
    except ValueError:  # not in a worker's task
        return None


def only(claims: Sequence[str] | None, select: str | None) -> str | None:
    """The -k expression of a job: the claims it computes (by function name; None: all) and
    the sweep's --select."""
    named = " or ".join(sorted({c.rsplit("::", 1)[-1] for c in claims})) if claims else None
    if named and select:
        return f"({select}) and ({named})"
    return named or select


def unpack(project: bytes, root: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(project), mode="r:gz") as tar:
        # The "data" filter refuses links and paths out of the folder. Python 3.11.2 (Debian
        # bookworm's, the arm64 evidence's) predates filters: there the archive, packed by
        # `pack` from the project itself, is unpacked as it is.
        if hasattr(tarfile, "data_filter"):
            tar.extractall(root, filter="data")
        else:
            tar.extractall(root)


def in_this_process(variant: Variant) -> bool:
    """Whether a variant computes as this worker's process does: under the reference kernels
    (the plugin sets them before torch is imported) and one thread, as every seed variant and
    the workshop itself do. Those run in the worker, which keeps torch and the claims' imports
    from one job to the next; a variant that sets other kernel variables runs in a process of
    its own, since torch reads them once, when it is imported."""
    if variant.settings or variant.native or variant.threads != 1:
        return False
    # A worker started elsewhere, without the reference kernels in its environment, may have
    # imported numpy under other ones already: then the variant runs in a process of its own.
    env = dict(os.environ)
    apply(environ=env)
    return all(env.get(name) == os.environ.get(name) for name in VARIABLES)


# The worker's copy of the project, by the digest of its archive: one per process, kept for
# its later jobs (a claims module is imported once per process, from one path).
_UNPACKED: dict[str, Path] = {}


def _project_here(project: bytes) -> Path:
    name = digest(project)[:16]
    if name not in _UNPACKED:
        # Another project's claims (a later sweep of an edited checkout, on a long-lived
        # worker) were imported under the same module names from another folder: forget
        # them, or pytest would refuse this project's as a mismatch.
        for old in _UNPACKED.values():
            for module, loaded in list(sys.modules.items()):
                file = getattr(loaded, "__file__", None)
                if file and Path(file).resolve().is_relative_to(old.resolve()):
                    del sys.modules[module]
            shutil.rmtree(old.parent, ignore_errors=True)
        _UNPACKED.clear()
        root = Path(tempfile.mkdtemp(prefix="claimlog-sweep-worker-")) / "project"
        unpack(project, root)
        atexit.register(shutil.rmtree, root.parent, ignore_errors=True)
        _UNPACKED[name] = root
    return _UNPACKED[name]


def _claims_args(
    variant: Variant, expression: str | None, *options: str, marks: str = NOT_EVIDENCE
) -> list[str]:
    """The arguments of a job's claims session under `variant`, in its one process: its
    `options`, the claims `-m marks` and `-k expression` select (None: every claim)."""
    args = ["-n", "0", "-q", *options, *variant.args(), "-m", marks]
    return args + (["-k", expression] if expression else [])


# What CPython 3.11 raises when two ast.parse calls interleave in one process: its ast module
# keeps one recursion counter for every thread (python/cpython#106905). A worker's job imports
# (and pytest rewrites) a plugin's modules while the worker's own threads run beside it.
AST_RACE = "AST constructor recursion depth mismatch"


def _run_here_once_more_after_the_ast_race(
    args: Sequence[str], root: Path, outputs: Path, cache: Path | None
) -> Record:
    """`run_claims_here`, run again once if CPython's shared AST counter (`AST_RACE`) broke
    the session: the race decides nothing the session computes, so the second session gives
    the bits the first would have; any other error is the job's."""
    try:
        return run_claims_here(args, root=root, outputs=outputs, cache_dir=cache)
    except SystemError as error:
        if AST_RACE not in str(error):
            raise
        print(f"the session met CPython's AST race ({error}): running it once more")
        return run_claims_here(args, root=root, outputs=outputs, cache_dir=cache)


def run_variant(
    variant: Variant,
    project: bytes,
    checkout: Checkout,
    select: str | None = None,
    cache_dir: str | None = None,
    claims: Sequence[str] | None = None,
    alone: bool = False,
) -> dict[str, Any]:
    """Run the claims under `variant` and return its fragment, as JSON-able data, with what
    the job spent computing and in all (in seconds); RuntimeError if the session computed
    with other code than the `checkout`'s (`Checkout.check`).
    `claims`: only these (the stale ones; None: every claim). `cache_dir`: the pytest cache
    the session reuses and fills (the project's own for a local cluster); without it, the
    worker's own (`worker_cache`). Figures are not drawn: a fragment reads no picture."""
    started = time.perf_counter()
    updating = ["--snapshot-update", "--no-figures", *(["--train-alone"] if alone else [])]
    args = _claims_args(variant, only(claims, select), *updating)
    cache = Path(cache_dir) if cache_dir else worker_cache()
    with tempfile.TemporaryDirectory(prefix="claimlog-sweep-") as scratch:
        outputs = Path(scratch) / "out"
        if in_this_process(variant):
            root = _project_here(project)
            record = _run_here_once_more_after_the_ast_race(args, root, outputs, cache)
        else:
            root = Path(scratch) / "project"
            unpack(project, root)
            env = {**WAIT_PASSIVELY, **dict(variant.settings)}
            run = run_claims(args, cwd=root, outputs=outputs, env=env, cache_dir=cache)
            if not run.record_path.exists() or run.returncode not in (0, 1):
                raise RuntimeError(f"the claims under {variant.name} did not finish:\n{run.tail()}")
            record = run.record
        checkout.check(record)
        computed = [e for e in record.events if e.what == COMPUTED]
        return {
            # Keyed as the session computed: by the code it ran, the checkout's.
            "fragment": from_record(variant, record, record.keys).to_json(),
            # What the job spent computing (training, the computed results), and in all:
            # the sweep's floor, and what it cost beyond it.
            "computing": sum(e.seconds or 0.0 for e in computed),
            "training": sum(e.seconds or 0.0 for e in computed if e.kind == "run"),
            # The runs it trained now: what a batch trains for the others, and checks.
            "trained": sorted(set(record.trained)),
            "seconds": time.perf_counter() - started,
        }


def run_batch(
    variants: Sequence[Variant],
    project: bytes,
    checkout: Checkout,
    select: str | None = None,
    cache_dir: str | None = None,
    claims: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """A batch of seed variants in one task, each computing the same `claims`. The runs those
    claims read (found by collecting them) are trained for every seed at once, those of one
    shape together (`Declaration.together`), and held; the lead seed's claims then run as
    `run_variant` runs them, their runs trained one at a time, and the lead's held runs are
    compared, run by run and bit for bit, with them. Where they agree, the others' are kept,
    and the others' claims find them in the cache; where they do not, or anything of it
    fails, none is kept and the others train one at a time. The lead is the first seed, or,
    where its runs were kept already (a sweep killed after its session), the seed with the
    most runs left to train (`lead_of`). A seed that fails is its own failure (`"failed"`):
    the others keep their fragments. The together training comes first: the batch's longest
    phase, measured first, is what the sweep's estimate of the time left stands on from early
    on (`Phases`).

    Returns each variant's result, in the order of `variants`; the lead's with `"alone"`,
    its training's seconds (what one seed costs one at a time: the floor), and `"together"`,
    what the batch found; each other's with `"kept together"`, whether the batch kept runs
    of it (which the floor then counts as the lead's training alone)."""
    cache = Path(cache_dir) if cache_dir else worker_cache()
    phases = Phases(len(variants))
    held: Held | None = None
    found = "not tried"
    if len(variants) > 1 and cache is not None and all(in_this_process(v) for v in variants):
        try:
            root = _project_here(project)
            trained = _train_together(root, variants, cache, only(claims, select), phases)
            held, found = (trained, found) if isinstance(trained, Held) else (None, trained)
        except Exception as error:  # the others train alone, in their own sessions
            found = f"not kept: {type(error).__name__}: {error}"
    lead = held.lead if held is not None else 0
    first = _or_failure(variants[lead], project, checkout, select, cache_dir, claims, True)
    first["alone"] = first.get("training", 0.0)
    if "failed" in first:
        found = "not tried: the lead seed failed"
    elif held is not None:
        try:
            found = held.check_and_keep(first["trained"])
        except Exception as error:
            found = f"not kept: {type(error).__name__}: {error}"
    first["together"] = found
    apart = found != "the same bits"
    # A failed lead seed says nothing of what a seed costs alone.
    phases.note(apart=apart, **({} if "failed" in first else {"first": first["seconds"]}))
    results = {lead: first}
    for i, variant in enumerate(variants):
        if i != lead:
            results[i] = _or_failure(variant, project, checkout, select, cache_dir, claims, apart)
            # One at a time, it would have trained what the batch kept for it, as the lead did.
            results[i]["kept together"] = held is not None and i in held.kept_for
        took = [float(r["seconds"]) for j, r in results.items() if j != lead and "seconds" in r]
        if took:
            phases.note(every=2.0, seed_seconds=sum(took) / len(took))
    return [results[i] for i in range(len(variants))]


def _or_failure(*args: Any) -> dict[str, Any]:
    """`run_variant(*args)`: a variant's result, or what it failed with (`"failed"`): one
    seed's failure costs no other seed of its batch its fragment."""
    try:
        return run_variant(*args)
    except Exception as error:
        return {"failed": f"{type(error).__name__}: {error}"}


@dataclass
class Held:
    """Runs trained together and not kept yet: the lead seed's (a run, or the error it
    failed with), to compare with what its session trains alone; the others', kept once they
    agree. `lead`: which of the batch's seeds it is."""

    training: Any
    store: Store
    first: TrainedRuns
    first_runs: dict[str, Any] = field(default_factory=dict)
    others: list[tuple[TrainedRuns, str, Any]] = field(default_factory=list)
    lead: int = 0
    seeds: Sequence[TrainedRuns] = ()  # the batch's, in its order
    kept_for: set[int] = field(default_factory=set)  # the seeds whose runs it kept

    def check_and_keep(self, trained_alone: Sequence[str]) -> str:
        """The lead seed's held runs compared with those its session trained alone
        (`trained_alone`, kept in the store), bit for bit; the others kept if they agree.
        Only the runs compared are kept, and only those no process kept meanwhile: a run the
        lead seed's session did not train alone (a claim that failed before reading it, a
        run kept already) is trained by each seed's own session. What was found: "the same
        bits", or why nothing was kept."""
        compared = [name for name in trained_alone if name in self.first_runs]
        if not compared:
            return "nothing to compare: the lead seed trained none of its runs alone"
        training, first = self.training, self.first
        for name in compared:
            run, key = self.first_runs[name], first.key(name)
            alone = self.store.get(key)
            if not isinstance(alone, Entry):
                return f"the lead seed's {name} is not kept where the batch looks for it"
            if isinstance(run, Exception):
                return f"{name} failed trained together ({run}) but not alone"
            described = json.dumps(dict(training.describe(run)), sort_keys=True)
            was = training.decode(name, alone.content, alone.about["run"], key)
            if training.encode(run) != training.encode(was) or described != json.dumps(
                alone.about["run"], sort_keys=True
            ):
                return f"{name} trained together gave other bits than alone"
        checked = [(runs, name, run) for runs, name, run in self.others if name in compared]
        for runs, name, run in checked:
            with self.store.lock(runs.key(name)):
                if runs.found(name) is MISSING:
                    runs.keep(name, run, 0.0, {"together": len(checked)})
                    self.kept_for |= {i for i, s in enumerate(self.seeds) if s is runs}
        return "the same bits"


def to_train(
    batch: Sequence[TrainedRuns], names: Sequence[str], store: Store, together: Together
) -> list[tuple[TrainedRuns, str, object]]:
    """The runs `names` of a batch's seeds left to train together, each with its shape: not
    kept already, and of a shape (`Together.shape`; None: it trains alone)."""
    return [
        (runs, name, shape)
        for runs in batch
        for name in names
        if (shape := together.shape(name, runs.recipe)) is not None
        and not store.has(runs.key(name))
    ]


def lead_of(
    batch: Sequence[TrainedRuns], todo: Sequence[tuple[TrainedRuns, str, object]]
) -> int | None:
    """Which seed of a batch leads it: the one whose runs its session trains alone, to be
    compared with their together training. The first seed, unless it has fewer runs left to
    train together (`todo`, `to_train`) than another (a resumed sweep may find its runs
    kept, and nothing kept of the others): then the seed with the most. None: no seed has
    one left."""
    left = [sum(r is runs for r, _, _ in todo) for runs in batch]
    most = max(left, default=0)
    return left.index(most) if most else None


def _runs_read(root: Path, variant: Variant, expression: str | None, cache: Path) -> list[str]:
    """The runs the variant's claims (`-k expression`) declare they read, found by collecting
    them in this process, as its session will (no claim runs)."""
    from claimlog.plugin.fixtures import RunsRead

    read = RunsRead()
    args = _claims_args(variant, expression, "--collect-only")
    with tempfile.TemporaryDirectory(prefix="claimlog-sweep-") as scratch:
        outputs = Path(scratch) / "out"
        code, said = pytest_here(args, root=root, outputs=outputs, cache_dir=cache, plugins=[read])
    if code not in (0, 5):  # 5: no claim selected, and so no run read
        raise RuntimeError(f"collecting the claims under {variant.name} failed:\n{said[-2000:]}")
    return list(read.names)


def _session_without_runs(
    root: Path, variant: Variant, expression: str | None, cache: Path
) -> float | None:
    """The seconds a session of the variant's claims that read no run takes, or None if it
    could not run: what a later seed's session, which reads its runs from the cache, is
    estimated to take until one is measured. Not lost: what those claims compute is kept in
    the cache, and the first seed's session reuses it."""
    marks = f"{NOT_EVIDENCE} and not runs"
    args = _claims_args(variant, expression, "--snapshot-update", "--no-figures", marks=marks)
    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="claimlog-sweep-") as scratch:
            run_claims_here(args, root=root, outputs=Path(scratch) / "out", cache_dir=cache)
    except Exception:
        return None
    return time.perf_counter() - started


def _train_together(
    root: Path, variants: Sequence[Variant], cache: Path, expression: str | None, phases: Phases
) -> Held | str:
    """The runs the claims read, of every variant, trained at once, but those already kept
    in the runs' cache of `cache`, and held (`Held`), the together training's progress told
    to `phases`; or why nothing was trained together."""
    workshop = declared_in(root)
    if workshop.together is None or workshop.training is None or workshop.recipe is None:
        return "not declared"
    started = time.perf_counter()
    names = _runs_read(root, variants[0], expression, cache)
    collected = time.perf_counter()
    if not names:
        return "nothing to train: the claims read no run"
    # As the engine imports it, before the workshop's code does; and before the session
    # below is timed, as what a later seed's session costs: that one finds torch imported
    # (a worker's first session importing it took 3.3 s against 0.6 s, and the sweep's
    # early estimate of its time left came out nearly twice too long).
    import_torch()
    phases.note(
        collect=collected - started,
        session=_session_without_runs(root, variants[0], expression, cache),
    )
    training, together = workshop.training(), workshop.together()
    places = Places(root)
    facts = Store(cache / "d" / TORCH_FACTS_FOLDER)
    threads = variants[0].threads
    bits = kernel_bits(reference_kernels(places.environment), threads, facts)
    where = Platform.here(threads, torch_facts(facts), fingerprint(bits)).cache_fields()
    store = Store(cache / "d" / f"{workshop.name}-runs")
    batch = [
        TrainedRuns(
            training,
            workshop.recipe({axis: v.seed if axis == v.axis else None for axis in workshop.seeds}),
            where=lambda: where,
            store=store,
            prepare=import_torch,
        )
        for v in variants
    ]
    todo = to_train(batch, names, store, together)
    lead = lead_of(batch, todo)
    if lead is None:
        return "nothing to train: every seed's runs were kept already"
    first = batch[lead]
    alone = [name for name in names if not store.has(first.key(name))]
    phases.note(alone_prior=sum(training.cost(name, first.recipe) for name in alone))
    shapes: dict[object, list[tuple[TrainedRuns, str]]] = {}
    for runs, name, shape in todo:
        shapes.setdefault(shape, []).append((runs, name))
    held = Held(training, store, first, lead=lead, seeds=batch)
    # A workshop's `Together.train` written before it could be told its progress is not.
    takes_progress = "progress" in inspect.signature(together.train).parameters
    weights = [sum(training.cost(name, runs.recipe) for runs, name in g) for g in shapes.values()]
    before, whole, start = 0.0, sum(weights) or 1.0, time.perf_counter()
    for members, weight in zip(shapes.values(), weights, strict=True):

        def progress(fraction: float, before: float = before, weight: float = weight) -> None:
            seconds = time.perf_counter() - start
            done = (before + weight * fraction) / whole
            phases.note(every=2.0, together_done=done, together_seconds=seconds)

        told = {"progress": progress} if takes_progress else {}
        trained = together.train(
            [(name, runs.recipe) for runs, name in members],
            [runs.key(name) for runs, name in members],
            **told,
        )
        before += weight
        for (runs, name), run in zip(members, trained, strict=True):
            if runs is first:
                held.first_runs[name] = run
            elif not isinstance(run, Exception):  # it fails alone, in its own session
                held.others.append((runs, name, run))
    phases.note(together_done=1.0, together_seconds=time.perf_counter() - start)
    return held
