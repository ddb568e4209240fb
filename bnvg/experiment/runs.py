"""The workshop's training runs: what decides each, and each trained at most once.

A `RunSpec` (`bnvg.experiment.config`) says what decides a run beside the recipe: the
network, the learning rate and whether the at-init gradient ratio was measured on the very
network before it trained (that one train-mode pass nudges batch norm's running statistics,
and so the early history).
`RUNS` names the twelve distinct runs the log needs; `bnvg.experiment.train.train_run`
trains one.

`RunCache` trains a `RunSpec` on first request and hands the frozen result to every later
caller, so claims that quote the same run share one training. Given a `Store` (`claimlog.store`:
in pytest's cache folder, or a folder the xdist workers of one session share), a finished run
is kept there under `run_key`, a digest of everything its numbers depend on:

- the source of the experiment modules a run executes (`RUN_SOURCES`; a comment is enough to
  change it: hashing files is simple and never misses a change that matters). The recipe,
  `config.py`, counts by what a run reads of it (`training_source`): its code (the classes,
  their defaults and rules) and the constants a run's modules import, each by the statement
  that sets it. A constant no run reads (S2's `CHECK_LOGIT`, S9's `EVAL_BUG_BATCH`) retrains
  nothing;
- the run's spec and the workshop's recipe, seeds included;
- the platform (`claimlog.platform.Platform.cache_fields`): torch and numpy, the
  kernels they dispatch to, the thread count, the CPU and the Python.

Change any of them and no entry has the key: the run is trained again. A run's history is
kept in its entry's description and its weights in the content, loaded when a claim first
asks for the network, so a session that reads only histories needs no torch. A process that
needs a run another process is training waits for it and loads it; a damaged entry is
reported and trained again. Loading is exact: the saved tensors and floats are the trained
ones, bit for bit.

No torch at import: the keys are read by processes that never train (pytest-xdist's
controller).
"""

from __future__ import annotations

import ast
import io
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from bnvg.experiment.config import DEEP_DEPTH, WORKSHOP, NetSpec, RunSpec, Workshop
from bnvg.experiment.data import two_moons
from bnvg.experiment.results import History, TrainedRun
from claimlog.platform import THREADS, Platform, torch_facts
from claimlog.store import COMPUTED, Entry, Event, Memo, Store, digest

EXPERIMENT = Path(__file__).resolve().parent
# The modules a training run executes; editing any other (the eval bug, the figures' data)
# retrains nothing.
RUN_SOURCES = (
    "config.py",
    "data.py",
    "model.py",
    "measure.py",
    "train.py",
    "runs.py",
    "results.py",  # what a run returns
    "runtime.py",  # torch, with the session's thread count
)


DEEP = NetSpec(depth=DEEP_DEPTH)

# The distinct runs of the log. The S8 rows "plain sigmoid" and "batch norm" are the S6 runs:
# S8 probes them first, which changes nothing the log prints (the plain net has no running
# statistics; batch norm's converge to the same values and its parameters end bit-identical).
RUNS: Mapping[str, RunSpec] = MappingProxyType(
    {
        "plain": RunSpec(),
        "batch norm": RunSpec(NetSpec(norm="batch")),
        "plain, lr = 5.0": RunSpec(lr=5.0),
        "plain, lr = 50.0": RunSpec(lr=50.0),
        "depth 8 plain, lr = 0.5": RunSpec(DEEP, lr=0.5),
        "depth 8 plain, lr = 5.0": RunSpec(DEEP, lr=5.0),
        "depth 8 plain, lr = 50.0": RunSpec(DEEP, lr=50.0),
        "depth 8 batch norm, lr = 0.5": RunSpec(DEEP.replace(norm="batch"), probed=True),
        "ReLU": RunSpec(NetSpec(act="relu"), probed=True),
        "Xavier init": RunSpec(NetSpec(init="xavier"), probed=True),
        "residual": RunSpec(NetSpec(residual=True), probed=True),
        "layer norm": RunSpec(NetSpec(norm="layer"), probed=True),
    }
)


def estimated_seconds(spec: RunSpec, workshop: Workshop = WORKSHOP) -> float:
    """A rough training time on one core, measured on the reference machine: a fixed cost
    per step plus a cost per hidden layer that batch norm roughly triples. It only has to
    rank runs well enough to split them evenly between processes."""
    per_layer = {"batch": 0.45, "layer": 0.25}.get(spec.net.norm, 0.15)
    return (1.1 + spec.net.depth * per_layer) * workshop.steps / 4000


def run_named(name: str) -> RunSpec:
    """The `RUNS` entry called `name`, or a ValueError listing the valid names."""
    try:
        return RUNS[name]
    except KeyError:
        raise ValueError(
            f"unknown run {name!r}: valid names are " + ", ".join(repr(n) for n in RUNS)
        ) from None


RECIPE = "config.py"  # of RUN_SOURCES, the one whose constants count by value (`training_source`)
RECIPE_MODULE = "bnvg.experiment.config"


def _constants_set_by(statement: ast.stmt) -> list[str]:
    """The recipe constants a top-level statement sets: `STEPS = 4000`, `A, B = 2.0, 0.0`
    (upper-case names only; `WORKSHOP = Workshop()` is one too, its value the class's code)."""
    targets: list[ast.expr] = []
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, ast.AnnAssign):
        targets = [statement.target]
    names = [
        node.id for target in targets for node in ast.walk(target) if isinstance(node, ast.Name)
    ]
    return names if names and all(name.isupper() for name in names) else []


def _recipe_names_read(source: str) -> set[str] | None:
    """The recipe's names a module imports from it; None where it imports the module itself
    (`from bnvg.experiment import config`), which may read any of them."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if module == RECIPE_MODULE or (node.level and module == RECIPE.removesuffix(".py")):
                names |= {alias.name for alias in node.names}
            elif module in ("bnvg.experiment", "") and any(
                alias.name == RECIPE.removesuffix(".py") for alias in node.names
            ):
                return None
        elif isinstance(node, ast.Import) and any(a.name == RECIPE_MODULE for a in node.names):
            return None
    return names


def training_source(folder: Path | None = None) -> str:
    """A digest of the code a training run executes: every module of `RUN_SOURCES` but the
    recipe by its source, and the recipe by what a run reads of it. That is the recipe's code
    (its classes and functions: the defaults of `Workshop`, the rules of `NetSpec`; parsed,
    so a comment there retrains nothing) and, of its constants, those a run's modules import
    or the recipe's own code uses, each by the statement that sets it, with the constants that
    statement reads (`TARGET_ACCURACY = TARGET_PERCENT / 100` reads `TARGET_PERCENT`)."""
    folder = folder or EXPERIMENT
    modules = [folder / name for name in RUN_SOURCES if name != RECIPE]
    texts = tuple((module.name, module.read_text()) for module in modules)
    return _training_source((folder / RECIPE).read_text(), texts)


@cache  # read once per process for each text: `stored_runs` asks for every entry and run
def _training_source(recipe_text: str, modules: tuple[tuple[str, str], ...]) -> str:
    recipe = ast.parse(recipe_text)
    constants: dict[str, ast.stmt] = {}  # a constant, by the statement that sets it
    defined: dict[str, ast.stmt] = {}  # a class or function of the recipe's code
    code: list[ast.stmt] = []
    for statement in recipe.body:
        names = _constants_set_by(statement)
        constants.update(dict.fromkeys(names, statement))
        if isinstance(statement, ast.ClassDef | ast.FunctionDef):
            defined[statement.name] = statement
        if not names:
            code.append(statement)
    # What training reads of the recipe: what its modules import from it, what the recipe's
    # module-level code uses, and all that those read in turn (a class's defaults and rules,
    # the constants a statement reads). A function no run calls (`recipe()`, which lists
    # every constant for the evidence) reads nothing on training's behalf.
    read: set[str] = set()
    for _, text in modules:
        imported = _recipe_names_read(text)
        read |= set(constants) | set(defined) if imported is None else imported
    for statement in code:
        if statement not in defined.values():
            read |= {n.id for n in ast.walk(statement) if isinstance(n, ast.Name)}
    pending = [name for name in read if name in constants or name in defined]
    while pending:
        name = pending.pop()
        for node in ast.walk(constants.get(name) or defined[name]):
            if isinstance(node, ast.Name) and node.id not in read:
                read.add(node.id)
                if node.id in constants or node.id in defined:
                    pending.append(node.id)
    read &= set(constants)
    set_by = list(dict.fromkeys(ast.unparse(constants[name]) for name in sorted(read)))
    return digest(
        *(part for name, text in sorted(modules) for part in (name, text)),
        ast.dump(ast.Module(body=code, type_ignores=[])),
        *set_by,
    )


def run_inputs(spec: RunSpec, workshop: Workshop, where: Mapping[str, str]) -> dict[str, str]:
    """Everything a run's numbers depend on; `where` is the platform's
    (`claimlog.platform.Platform.cache_fields`)."""
    return {
        "source": training_source(),
        "spec": repr(spec),
        "workshop": repr(workshop),
        **where,
    }


def run_key(spec: RunSpec, workshop: Workshop, where: Mapping[str, str]) -> str:
    """The key of a run's entry: a digest of everything its numbers depend on."""
    return digest(json.dumps(run_inputs(spec, workshop, where), sort_keys=True))


def stored_runs(folder: Path, workshop: Workshop, where: Mapping[str, str]) -> set[str]:
    """The names of the runs of `RUNS` whose entries in `folder` were made for `where`: a
    cheap look, without torch, at what a session would reuse (the session itself checks the
    whole key, and trains what does not match)."""
    found = set()
    for about_path in folder.glob("*.json"):
        try:
            inputs = json.loads(about_path.read_text()).get("inputs", {})
        except (OSError, ValueError, AttributeError):
            continue
        for name, spec in RUNS.items():
            wanted = run_inputs(spec, workshop, where)
            if all(inputs.get(k) == v for k, v in wanted.items()):
                found.add(name)
    return found


# -- RunCache: each run trained at most once, and reused from a store -----------------------
def session_threads() -> int:
    """The intra-op thread count this process computes with (`platform.use_threads`), read
    without importing torch where the session chose it."""
    chosen = os.environ.get(THREADS)
    if chosen:
        return int(chosen)
    from bnvg.experiment.runtime import torch

    return torch.get_num_threads()


def _to_bytes(run: TrainedRun) -> bytes:
    """The entry's content: the final weights (the history goes into its description, where
    a session reads it without torch)."""
    from bnvg.experiment.runtime import torch

    buffer = io.BytesIO()
    torch.save({"state": dict(run.state())}, buffer)
    return buffer.getvalue()


def _history_json(h: History) -> list[list[float]]:
    return [list(h.step), list(h.loss), list(h.test_acc)]


def _weights(content: bytes) -> Callable[[], Mapping[str, Any]]:
    """The weights of an entry, loaded (with torch) when first asked for."""

    @cache
    def load() -> Mapping[str, Any]:
        from bnvg.experiment.runtime import torch

        payload = torch.load(io.BytesIO(content), weights_only=True)
        return MappingProxyType(payload["state"])

    return load


def _from_entry(spec: RunSpec, entry: Entry, key: str) -> TrainedRun:
    step, loss, acc = entry.about["history"]
    history = History(step=tuple(step), loss=tuple(loss), test_acc=tuple(acc))
    return TrainedRun(spec=spec, history=history, _state=_weights(entry.content), key=key)


class RunCache:
    """Trains each `RunSpec` at most once, and hands out the frozen result to every caller.

    `store`: where finished runs are kept (None: in memory only), through a `Memo` of kind
    "run": `session` names this session, and with `recompute` only entries written in this
    session are used, so every run is trained again once and shared between the session's
    processes. `on_event` is told of every run this process trained ("computed"), loaded
    ("reused", with the entry's description: when and on what it was trained) or found
    damaged.
    """

    def __init__(
        self,
        workshop: Workshop = WORKSHOP,
        store: Store | None = None,
        on_event: Callable[[Event], None] | None = None,
        session: str = "",
        recompute: bool = False,
        facts: Callable[[], Mapping[str, str]] | None = None,
    ) -> None:
        self.workshop = workshop
        self.trained: list[str] = []
        told = on_event or (lambda event: None)

        def note(event: Event) -> None:
            if event.what == COMPUTED:
                self.trained.append(event.name)
            told(event)

        self.memo = Memo(store, "run", recompute=recompute, session=session, on_event=note)
        self._done: dict[RunSpec, TrainedRun] = {}
        self._facts = facts or torch_facts
        self._where: dict[str, str] | None = None

    @property
    def where(self) -> dict[str, str]:
        """This process's platform, as the runs' keys name it."""
        if self._where is None:
            here = Platform.here(session_threads(), self._facts())
            self._where = here.cache_fields()
        return self._where

    def key(self, spec: RunSpec) -> str:
        return run_key(spec, self.workshop, self.where)

    def get(self, spec: RunSpec | str) -> TrainedRun:
        name = spec if isinstance(spec, str) else _name_of(spec)
        if isinstance(spec, str):
            spec = run_named(spec)
        if spec not in self._done:
            run = self._kept(spec, name, wait=True)
            assert run is not None  # waiting for the lock always gives a run
            self._done[spec] = run
        return self._done[spec]

    def prefetch(self, names: Sequence[str]) -> None:
        """Train, longest first, every run of `names` that the store lacks and no process
        sharing it has started yet; skip those another process is training.

        Workers that all call this split the work between them as they go (whoever is free
        takes the next run), so they finish together even when one started late. A run
        found kept is only described (its weights load when a claim asks for the network).
        """
        if self.memo.store is None:
            return
        for name in sorted(names, key=lambda n: -estimated_seconds(run_named(n), self.workshop)):
            spec = run_named(name)
            try:
                run = self._kept(spec, name, wait=False)  # None: another process is training it
            except Exception:
                # A run that cannot be trained (a ReLU net whose every unit starts dead has no
                # output gradient to divide by, as under --init-seed 27) fails the claims that
                # read it, when they ask for it, exactly as in one process: never the session
                # fixture that prefetches, which would fail every claim of this worker.
                continue
            if run is not None:
                self._done[spec] = run

    def _kept(self, spec: RunSpec, name: str, wait: bool) -> TrainedRun | None:
        """The run, loaded from the store or trained now and kept there."""
        key = self.key(spec) if self.memo.store is not None else ""

        def train() -> TrainedRun:
            from bnvg.experiment.train import train_run

            return replace(train_run(spec, two_moons(self.workshop), self.workshop), key=key)

        def about(run: TrainedRun) -> dict[str, Any]:
            return {
                "inputs": run_inputs(spec, self.workshop, self.where),
                "platform": self.where,
                "history": _history_json(run.history),
            }

        return self.memo.get(
            name,
            key,
            train,
            encode=_to_bytes,
            decode=lambda entry: _from_entry(spec, entry, key),
            about=about,
            wait=wait,
        )


def _name_of(spec: RunSpec) -> str:
    return next((name for name, known in RUNS.items() if known == spec), str(spec))
