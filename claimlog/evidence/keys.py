"""Each claim's key: which computation its evidence is of.

Evidence of another computation is no evidence for this one: after the recipe's `steps` go
from 4000 to 3000, the old fragments' 0.0079 is no value any platform prints for this
workshop. So every claim has a key (`claim_keys`): the digest of the code it executes,
sliced by definition (`claimlog.slicing.code_key`): its own function, the fixtures it
requests, and every function, class and recipe constant of the experiment, the log and the
figures' data that they reach, each by its parsed code; and, for a claim that reads what the
workshop declares beyond its code (`Declaration.key_parts`: for bnvg's trained runs, the
code that trains one and every run's spec). A fragment records each claim's key as its
session computed it, and which claim owns each of its readings and checked each of its
tables. Its parts whose claim's key is still the checkout's are fresh (`Fragment.fresh`);
the others are stale, and only they are computed again. An edit of S2's `CHECK_LOGIT`
changes the key of the one claim whose code reads it, so every other reading keeps its
evidence on every platform and seed; an edit of one claim's bound makes that claim alone
stale. A key is the same on every platform and at every seed: what computed a fragment is
its platform and its variant, beside it.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import os
import sys
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from claimlog.declaration import Declaration, KeyPart
from claimlog.places import Places
from claimlog.store import Memo, Store, digest, module_name, python_files, source_digest

# The code that slices, whose digest is part of every kept key: found by its path, since the
# slicing itself is imported only where the keys are not kept.
SLICING = Path(__file__).resolve().parent.parent / "slicing.py"

# The engine's fixture that hands a claim its trained runs (`claimlog.plugin.fixtures.runs`).
RUNS_FIXTURE = "runs"
# The engine's fixture that hands a claim the recipe (`claimlog.plugin.fixtures.recipe`).
RECIPE_FIXTURE = "recipe"


# The engine's own code a claim's key reaches: what its bounds mean (`about`, `below`).
READINGS = Path(__file__).resolve().parent.parent / "log" / "readings.py"


def claim_of(nodeid: str) -> str:
    """The claim a test id is of, without its parameters: a key is per claim function (its
    parameters are in its code)."""
    return nodeid.split("[", 1)[0]


def claim_keys(places: Places, workshop: Declaration, kept: Store | None = None) -> dict[str, str]:
    """Each claim of `workshop`, the project at `places` ("claims/test_s2_....py::test_x"),
    but those marked `evidence` (which read the sweep's tables and are no evidence), with its
    key (see the module): read from the source, without importing a claim or torch; once per
    process while no file it reads changes, and, given a store (`kept`: in pytest's cache),
    once for all processes while no file it reads (nor the slicing itself) changes.

    Where the code is sliced is the workshop's to say (`Declaration.computing`): its
    experiment, how its results become readings, what a figure plots. The slice stops at the
    engine (which checks numbers and never computes them) but for what a bound means, and at
    whatever else the workshop leaves out (bnvg leaves out its layout: it builds every line
    at once, and through it every claim would read S2's CHECK_LOGIT)."""
    claims = places.root / "claims"
    plugins = _plugin_files(workshop.plugins)
    roots = (*workshop.computing, *workshop.quoting, READINGS, claims)
    files = sorted({*claims.glob("*.py"), *plugins, *python_files(roots)})
    state = tuple((str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in files)
    parts = tuple(sorted(workshop.key_parts.items()))
    training = _training_code(workshop.training)
    recipe = _function_code(workshop.recipe)
    if kept is None:
        return dict(_claim_keys(claims, roots, plugins, state, parts, training, recipe))

    # Slicing costs about half a second a process; reading what it reads costs milliseconds.
    # The keys depend on the files' contents and module names alone, not where they lie: a
    # scratch copy of the project finds them too. So does the digest of what is sliced (by
    # name and content) and how: the engine's slicing code, and the Python that parses it
    # (the keys are the same from 3.11 on, but a new Python's parser may read code anew).
    def as_sliced(file: Path) -> list[str]:
        return [module_name(file), digest(file.read_bytes())]

    sliced = {
        "files": sorted(as_sliced(f) for f in files),
        "declared": [
            [name, *as_sliced(made[0]), made[1]] if isinstance(made, tuple) else [name, made]
            for name, declare in parts
            for made in declare()
        ],
        "training": [[*as_sliced(file), qualname] for file, qualname in training],
        "recipe": [[*as_sliced(file), qualname] for file, qualname in recipe],
        "slicing": source_digest([Path(__file__), SLICING]),
        "python": sys.version,
    }
    inputs = digest(json.dumps(sliced))
    return Memo(kept, "claim keys").get(
        "claim keys",
        inputs,
        lambda: dict(_claim_keys(claims, roots, plugins, state, parts, training, recipe)),
        encode=lambda keys: json.dumps(keys, sort_keys=True).encode(),
        decode=lambda entry: json.loads(entry.content),
    )


def code_of(workshop: Declaration) -> dict[str, str]:
    """The code a workshop computes with, as this process imported it: the digest of its
    `computing` and `quoting` files (by name and content), and the folder they lie in. Two
    checkouts of one commit give one digest; a sweep's job that imported another checkout's
    code names both."""
    files = python_files((*workshop.computing, *workshop.quoting))
    folders = [str(root if root.is_dir() else root.parent) for root in workshop.computing]
    where = os.path.commonpath(folders) if folders else "nowhere"
    return {"digest": source_digest(files)[:16], "where": where}


def _training_code(training: Callable[[], Any] | None) -> tuple[tuple[Path, str], ...]:
    """Where the workshop's `Training` is defined: every claim that reads runs reaches it, and
    through it the training and the data (read without importing torch)."""
    return _function_code(None if training is None else type(training()))


def _function_code(function: Callable[..., Any] | None) -> tuple[tuple[Path, str], ...]:
    """Where the workshop's `recipe` is defined: every claim that reads the recipe reaches
    it, and through it the recipe's constant (`RECIPE = Recipe(steps=300)`), whose edit no
    function of the experiment sees (they take the recipe as an argument)."""
    if function is None:
        return ()
    return ((Path(inspect.getfile(function)).resolve(), function.__qualname__),)


def _plugin_files(modules: Sequence[str]) -> tuple[Path, ...]:
    """The files of the workshop's plugin modules, found without importing them."""
    found = []
    for module in modules:
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.origin:
            raise ValueError(f"the workshop's plugin {module!r} is not importable")
        found.append(Path(spec.origin).resolve())
    return tuple(found)


@cache
def _claim_keys(
    claims: Path,
    roots: tuple[Path, ...],
    plugins: tuple[Path, ...],
    state: tuple[tuple[str, int, int], ...],
    declared_parts: tuple[tuple[str, Callable[[], Sequence[KeyPart]]], ...],
    training: tuple[tuple[Path, str], ...],
    recipe: tuple[tuple[Path, str], ...],
) -> tuple[tuple[str, str], ...]:
    key_parts = dict(declared_parts)
    fixtures = {name: path for path in plugins for name in _fixtures(path)}
    reads_recipe = _reading_recipe(plugins)
    # Each claim: its own definition, then its fixtures', then what they declare beyond it.
    wanted: dict[str, list[KeyPart]] = {}
    for module in sorted(claims.glob("test_*.py")):
        tree = ast.parse(module.read_text())
        # A claims module's own fixtures come first, as pytest finds them (S9's `eval_bug`).
        here = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef) and _is_fixture(n)}
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef) or not node.name.startswith("test"):
                continue
            if any(_is_mark(d, "evidence") for d in node.decorator_list):
                continue
            parts: list[KeyPart] = [(module, node.name)]
            # Every fixture it requests, and those its module's own fixtures request in turn.
            # Not those the workshop's plugin fixtures request: a fixture that asks for the
            # trained runs would make every claim read the training; what a fixture depends on
            # beyond its code it declares (`key_parts`: bnvg's for claimlog's `runs`).
            pending, seen = [a.arg for a in node.args.args], set()
            while pending:
                name = pending.pop()
                if name in seen:
                    continue
                seen.add(name)
                if name in here:
                    parts.append((module, name))
                    pending += [a.arg for a in here[name].args.args]
                elif name in fixtures:
                    parts.append((fixtures[name], name))
            if RUNS_FIXTURE in seen:  # the workshop's Training, and what it reaches
                parts += training
            if RECIPE_FIXTURE in seen or seen & reads_recipe:  # its recipe, and its constant
                parts += recipe
            for name in sorted(seen & key_parts.keys()):  # what a fixture declares beyond it
                parts += key_parts[name]()
            wanted[f"claims/{module.name}::{node.name}"] = parts
    definitions = sorted({p for parts in wanted.values() for p in parts if isinstance(p, tuple)})
    from claimlog.slicing import code_keys_at  # only where the keys are not kept

    keyed = dict(zip(definitions, code_keys_at(definitions, roots), strict=True))
    return tuple(
        (claim, digest(*(keyed[p] if isinstance(p, tuple) else p for p in parts)))
        for claim, parts in wanted.items()
    )


def _reading_recipe(plugins: tuple[Path, ...]) -> frozenset[str]:
    """The workshop's plugin fixtures that read the recipe, themselves or through another of
    its fixtures: a claim that requests one computes with the recipe, and an edit of the
    recipe is an edit of that claim (whatever else those fixtures request, such as the
    trained runs, is declared by `key_parts` instead)."""
    requests = {name: asked for plugin in plugins for name, asked in _fixtures(plugin).items()}
    reading = {name for name, asked in requests.items() if RECIPE_FIXTURE in asked}
    while True:
        more = {name for name, asked in requests.items() if asked & reading} - reading
        if not more:
            return frozenset(reading)
        reading |= more


@cache
def _fixtures(plugin: Path) -> dict[str, frozenset[str]]:
    """The fixtures a plugin module defines, each with the names of what it requests."""
    tree = ast.parse(plugin.read_text())
    return {
        node.name: frozenset(a.arg for a in node.args.args)
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and _is_fixture(node)
    }


def _is_fixture(node: ast.FunctionDef) -> bool:
    return any("fixture" in ast.unparse(d) for d in node.decorator_list)


def _is_mark(decorator: ast.expr, name: str) -> bool:
    """Whether a decorator is `@pytest.mark.<name>` (called or not)."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return isinstance(target, ast.Attribute) and target.attr == name
