"""The workshop's training runs: what decides each, and what each depends on.

A `RunSpec` (`bnvg.experiment.config`) says what decides a run beside the recipe: the
network, the learning rate and whether the at-init gradient ratio was measured on the very
network before it trained (that one train-mode pass nudges batch norm's running statistics,
and so the early history).
`RUNS` names the twelve distinct runs the log needs; `bnvg.experiment.train.train_run`
trains one.

`TRAINING` declares them to claimlog (`Declaration.training`), which trains each run a
session's claims read at most once and keeps it in pytest's cache under a key of everything
its numbers depend on (`run_inputs`, and the platform: torch and numpy, the kernels they
dispatch to, the thread count, the CPU and the Python):

- the source of the experiment modules a run executes (`RUN_SOURCES`; a comment is enough to
  change it: hashing files is simple and never misses a change that matters). The recipe,
  `config.py`, counts by what a run reads of it (`training_source`): its code (the classes,
  their defaults and rules) and the constants a run's modules import, each by the statement
  that sets it. A constant no run reads (S2's `CHECK_LOGIT`, S9's `EVAL_BUG_BATCH`) retrains
  nothing;
- the run's spec and the workshop's recipe, seeds included.

Change any of them and no entry has the key: the run is trained again.

No torch at import: the keys are read by processes that never train (pytest-xdist's
controller).
"""

from __future__ import annotations

import ast
import hashlib
import io
import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from bnvg.experiment.config import DEEP_DEPTH, WORKSHOP, NetSpec, RunSpec, Workshop
from bnvg.experiment.data import two_moons
from bnvg.experiment.results import History, TrainedRun
from claimlog import Table, Training

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


@cache  # read once per process for each text: a warm session's check asks it for every run
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
    parts = [
        *(part for name, text in sorted(modules) for part in (name, text)),
        ast.dump(ast.Module(body=code, type_ignores=[])),
        *set_by,
    ]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def run_inputs(spec: RunSpec, workshop: Workshop) -> dict[str, str]:
    """What a run's numbers depend on beside the platform: the code training runs, the run's
    spec and the recipe (seeds included)."""
    return {"source": training_source(), "spec": repr(spec), "workshop": repr(workshop)}


def history_table(run: str, history: History) -> Table:
    """A run's history as it is stored and plotted: the test accuracy in percent, computed
    as the figures compute it (`a * 100`)."""
    return Table.of_run(
        run,
        index_name="step",
        index=history.step,
        columns={
            "train loss": history.loss,
            "test accuracy %": [a * 100 for a in history.test_acc],
        },
    )


# -- the runs as claimlog trains and keeps them ---------------------------------------------
def _weights(content: bytes) -> Callable[[], Mapping[str, Any]]:
    """The weights of a kept run, loaded (with torch) when first asked for."""

    @cache
    def load() -> Mapping[str, Any]:
        from bnvg.experiment.runtime import torch

        payload = torch.load(io.BytesIO(content), weights_only=True)
        return MappingProxyType(payload["state"])

    return load


class Runs(Training):
    """The workshop's runs, declared to claimlog (`claimlog.Training`): it trains each at most
    once and keeps it in pytest's cache under `run_inputs` and the platform.

    A run's history is kept in its entry's description and its weights in the content,
    loaded when a claim first asks for the network, so a session that reads only histories
    needs no torch. Loading is exact: the saved tensors and floats are the trained ones, bit
    for bit.
    """

    def names(self) -> tuple[str, ...]:
        return tuple(RUNS)

    def inputs(self, name: str, recipe: Workshop) -> dict[str, str]:
        return run_inputs(RUNS[name], recipe)

    def cost(self, name: str, recipe: Workshop) -> float:
        return estimated_seconds(RUNS[name], recipe)

    def train(self, name: str, recipe: Workshop, key: str) -> TrainedRun:
        from bnvg.experiment.train import train_run

        return replace(train_run(RUNS[name], two_moons(recipe), recipe), key=key)

    def encode(self, run: TrainedRun) -> bytes:
        from bnvg.experiment.runtime import torch

        buffer = io.BytesIO()
        torch.save({"state": dict(run.state())}, buffer)
        return buffer.getvalue()

    def describe(self, run: TrainedRun) -> dict[str, Any]:
        h = run.history
        return {"history": [list(h.step), list(h.loss), list(h.test_acc)]}

    def decode(
        self, name: str, content: bytes, description: Mapping[str, Any], key: str
    ) -> TrainedRun:
        step, loss, acc = description["history"]
        history = History(step=tuple(step), loss=tuple(loss), test_acc=tuple(acc))
        return TrainedRun(spec=RUNS[name], history=history, _state=_weights(content), key=key)

    def table(self, name: str, run: TrainedRun) -> Table:
        return history_table(name, run.history)


TRAINING = Runs()
