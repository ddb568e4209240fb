"""Code keys: the code a function may execute, sliced by definition.

A claim's evidence is keyed by the code it can reach (`claimlog.evidence.keys.claim_keys`),
so that an edit makes stale only the claims it can change. `code_key(function)` digests that
code: the function's own definition and, transitively, every definition of the workshop's
folders it names (functions, classes, constants, each by the statement that sets it), each by
its parsed code (a comment or a docstring counts for nothing). Nothing here imports what it
slices: it reads source.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from claimlog.store import digest, module_name


def code_key(function: Callable[..., Any], roots: Iterable[Path] | None = None) -> str:
    """A digest of the code `function` may execute inside the project, sliced by definition:
    it changes when code the function can reach changes, and only then. Keyed by it, a kept
    result is computed again when the code that computed it changed, and not for an edit
    elsewhere in the same files (what `source_digest`, by whole files, cannot tell apart).

        code_key(slope_curve)  # unchanged when S2's CHECK_LOGIT moves: only
                               # bce_logit_gradient reads it, though both modules import it

    What counts, each top-level statement by its parsed code (so a comment or a docstring
    counts for nothing; decorators, defaults and annotations count):
    - the definition of `function`, a module-level function (a method counts with its whole
      class: it can reach any of it through `self`);
    - every top-level statement that binds a name the counted code uses, in the module where
      it is used: `def`, `class`, every assignment to it (`X = 1` and a later `X = X + 1`;
      `X[k] = v` too), those inside a top-level `if` (with its test) or `try`; and in turn
      whatever those use (`B = A * 2` reads `A`). Names reach other modules through imports,
      top-level or local to a function, relative ones included; `module.name` through a
      module alias. A module used bare (passed on, `vars(m)`) counts with all its names.
    - nothing else: builtins, parameters, locals, and every module whose source file is not
      under one of `roots` (torch, numpy, the standard library): their versions are the
      platform's business. `roots` defaults to the `claimlog` package and the folder of
      the function's own file (a claim's test function counts its own file's helpers).

    A slice by names, not a proof. It may over-count: a statement counts whole (`A, B = 1, 2`
    for a reader of `A`), a named class with all its methods, a local that shadows a global.
    It cannot see code reached only through values: a method called on an object the
    function was handed (unless it names its class), or a module-level call that mutates a
    value (`REGISTRY.append(f)`). Stable across processes and checkouts: the parts are named
    by module and name (`bnvg.experiment.config.CHECK_LOGIT`), never by path or line. A
    lambda, a function defined inside another, or one without Python source: ValueError.
    """
    return digest(*sorted(_code_slice(function, roots)))


def code_keys_at(definitions: Sequence[tuple[Path, str]], roots: Iterable[Path]) -> list[str]:
    """`code_key` of the definition `qualname` in `file`, for each (file, qualname), from the
    source alone: nothing is imported (a claim's key is read without importing the claim, or
    torch). The modules are found and parsed once for all."""
    project = _Project(tuple(root.resolve() for root in roots))
    return [_key_at(file, qualname, project) for file, qualname in definitions]


def _key_at(file: Path, qualname: str, project: _Project) -> str:
    file = file.resolve()
    return digest(*sorted(_slice_at(file, module_name(file), qualname, project)))


def _slice_names(function: Callable[..., Any], roots: Iterable[Path] | None = None) -> set[str]:
    """What `code_key(function)` counts, by name: {"bnvg.experiment.config.CHECK_LOGIT", ...}."""
    return {part.partition("\n")[0] for part in _code_slice(function, roots)}


@dataclass(frozen=True)
class _Import:
    """What an import binds a name to: `name` of module `module` (`from module import name`;
    "*" for all of them), or the module itself (`import module`: name None). `level` is the
    number of dots of a relative import."""

    module: str
    name: str | None
    level: int = 0


@dataclass(frozen=True, eq=False)
class _Code:
    """A top-level statement that binds a name, as it counts: its parsed code (docstrings
    stripped) and what it reads."""

    dump: str
    uses: frozenset[tuple[str, ...]]  # names, and attribute chains on them: ("mod", "helper")
    imports: Mapping[str, tuple[_Import, ...]]  # the imports inside it (a function's local ones)


_Binding = _Import | _Code
# What a name means: the statements binding `name` in `module`, or (name None) a module.
_Target = tuple[str, str | None]


@dataclass(frozen=True)
class _Source:
    bindings: Mapping[str, tuple[_Binding, ...]]  # by top-level name; "*": star imports
    definitions: Mapping[str, tuple[ast.stmt, ...]]  # the `def`s and `class`es, by name
    package: str  # what its relative imports are relative to


def _code_slice(function: Callable[..., Any], roots: Iterable[Path] | None) -> set[str]:
    """The parts `code_key` digests: "module.name\\n" and a statement's dump, for each
    statement counted."""
    function = inspect.unwrap(function)  # functools.cache, wraps: the code is the wrapped one
    qualname, module = getattr(function, "__qualname__", ""), getattr(function, "__module__", "")
    if "<" in qualname:  # <lambda>, outer.<locals>.inner: no top-level statement names it
        raise ValueError(
            f"code_key needs a module-level function (or a method of a module-level class): "
            f"{module}.{qualname} is a lambda or is defined inside another function"
        )
    try:
        file = inspect.getsourcefile(function)
    except TypeError:  # a builtin, or a function written in C
        file = None
    if file is None or not qualname or not module:
        raise ValueError(f"code_key needs a Python function with source, not {function!r}")
    path = Path(file).resolve()
    # claimlog (this file's package), and the function's own folder (claims/test_*.py).
    folders = (Path(__file__).parent, path.parent) if roots is None else roots
    return _slice_at(path, module, qualname, _Project(tuple(f.resolve() for f in folders)))


def _slice_at(path: Path, module: str, qualname: str, project: _Project) -> set[str]:
    """The parts of the definition `qualname` in the file `path`, read as module `module`:
    from the source alone, without importing it (only the packages of what it imports)."""
    source = project.add(module, path)
    first, *inner = qualname.split(".")
    found = source.definitions.get(first, ())
    for part in inner:  # a method: A.b, found in the body of class A
        found = tuple(
            node
            for cls in found
            if isinstance(cls, ast.ClassDef)
            for node in cls.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and node.name == part
        )
    if not found:
        raise ValueError(f"no top-level definition of {qualname} in {path}")

    parts: set[str] = set()
    visited: set[_Target] = set()
    pending: list[_Target] = [(module, first)]
    while pending:  # visited targets make cycles (mutual recursion) safe
        target = pending.pop()
        if target in visited:
            continue
        visited.add(target)
        where, name = target
        here = project.module(where)
        if here is None:
            continue
        if where in project.foreign and target != (module, first):
            # An entry's module outside the roots (the plugin's fixtures.py) counts the entry
            # alone: its other names are machinery that checks, not code that computes.
            continue
        if name is None:  # a module used bare: any of its names (but not the modules it names)
            for bound in here.bindings:
                if bound != "*":
                    meant = project.meaning(where, bound, attribute=True)
                    pending.extend(t for t in meant if t[1] is not None)
            continue
        for binding in here.bindings.get(name, ()):
            if isinstance(binding, _Code):
                parts.add(f"{where}.{name}\n{binding.dump}")
                for chain in binding.uses:
                    pending.extend(project.reached(where, chain, binding.imports))
    return parts


class _Project:
    """The project's modules (those whose source lies under a root), found and read once per
    `code_key` call; parsed once per text (`_parsed`)."""

    def __init__(self, roots: tuple[Path, ...]) -> None:
        self.roots = roots
        self.modules: dict[str, _Source | None] = {}
        self.foreign: set[str] = set()  # entries' modules that lie under no root

    def add(self, name: str, path: Path) -> _Source:
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        source = self.modules[name] = _parsed(path.read_bytes(), package)
        if not _under(path, self.roots):
            self.foreign.add(name)
        return source

    def module(self, name: str) -> _Source | None:
        """The project's module `name`, None if it is not a module or not the project's."""
        if name not in self.modules:
            self.modules[name] = self._find(name)
        return self.modules[name]

    def _find(self, name: str) -> _Source | None:
        found = _locate(name, self.roots)
        if found is None:
            return None
        path, package = found
        return _parsed(b"" if path is None else path.read_bytes(), package)

    def reached(
        self, module: str, chain: tuple[str, ...], local: Mapping[str, tuple[_Import, ...]]
    ) -> set[_Target]:
        """What a name, or an attribute chain on it (`mod.helper`), used in `module` means;
        `local`: the imports of the statement that uses it."""
        targets = self.meaning(module, chain[0], local=local)
        for attribute in chain[1:]:  # an attribute of a module; of anything else, stop there
            targets = {t for t in targets if t[1] is not None} | {
                meant
                for where, name in targets
                if name is None
                for meant in self.meaning(where, attribute, attribute=True)
            }
        return targets

    def meaning(
        self,
        module: str,
        name: str,
        *,
        local: Mapping[str, tuple[_Import, ...]] | None = None,
        attribute: bool = False,
        seen: set[tuple[str, str]] | None = None,
    ) -> set[_Target]:
        """What `name` means in `module`: the statements there that bind it, or what its
        imports bind it to, followed to the module that defines it. As an `attribute`
        (`module.name`, `from module import name`), a submodule too."""
        seen = set() if seen is None else seen
        source = self.module(module)
        if source is None and attribute and self.module(f"{module}.{name}") is not None:
            # A module of ours in a package that is not (`from bnvg.log import fill`, where
            # only fill.py is among the roots).
            return {(f"{module}.{name}", None)}
        if source is None or (module, name) in seen:  # an import cycle: means nothing more
            return set()
        seen.add((module, name))
        bound = [*(local or {}).get(name, ()), *source.bindings.get(name, ())]
        if not bound:  # `from m import *` may bring it
            stars = source.bindings.get("*", ())
            bound = [replace(star, name=name) for star in stars if isinstance(star, _Import)]
        found: set[_Target] = set()
        for binding in bound:
            if isinstance(binding, _Code):
                found.add((module, name))
            else:
                found |= self._imported(source, binding, seen)
        if attribute and not found and self.module(f"{module}.{name}") is not None:
            found.add((f"{module}.{name}", None))
        return found

    def _imported(
        self, source: _Source, imported: _Import, seen: set[tuple[str, str]]
    ) -> set[_Target]:
        relative = "." * imported.level + imported.module
        try:
            module = importlib.util.resolve_name(relative, source.package)
        except (ImportError, ValueError):  # beyond the top-level package
            return set()
        if imported.name is None:
            return {(module, None)} if self.module(module) is not None else set()
        return self.meaning(module, imported.name, attribute=True, seen=seen)


def _under(path: Path, roots: tuple[Path, ...]) -> bool:
    """Whether `path` lies under one of `roots` (resolved): the project's."""
    path = path.resolve()
    return any(path.is_relative_to(root) for root in roots)


@cache  # where a module lives changes only when files come or go: looked up once per process
def _locate(name: str, roots: tuple[Path, ...]) -> tuple[Path | None, str] | None:
    """The file of the module `name` and its package, if it is the project's (under one of
    `roots`; a namespace package has no file): the top-level package found by `find_spec`
    (which imports nothing for a top-level name), the rest by its folders. Never by importing
    a parent: `bnvg.experiment.runtime` imports torch."""

    top, *rest = name.split(".")
    try:
        spec = importlib.util.find_spec(top)
    except Exception:  # not a module, no __spec__
        return None
    if spec is None:
        return None
    folders = [Path(f) for f in spec.submodule_search_locations or ()]
    if not rest:
        if spec.origin and spec.has_location and spec.origin.endswith(".py"):
            path = Path(spec.origin)
            return (path, name if folders else "") if _under(path, roots) else None
        return (None, name) if any(_under(folder, roots) for folder in folders) else None
    for i, part in enumerate(rest):
        last = i == len(rest) - 1
        if any((folder / part / "__init__.py").is_file() for folder in folders):
            folder = next(f for f in folders if (f / part / "__init__.py").is_file()) / part
            if last:
                init = folder / "__init__.py"
                return (init, name) if _under(init, roots) else None
            folders = [folder]
        elif last and any((folder / f"{part}.py").is_file() for folder in folders):
            path = next(f / f"{part}.py" for f in folders if (f / f"{part}.py").is_file())
            return (path, name.rpartition(".")[0]) if _under(path, roots) else None
        else:
            return None
    return None


@cache  # parsed once per text: repeated keys read a module's files, not its grammar, again
def _parsed(text: bytes, package: str) -> _Source:
    tree = ast.parse(text)
    for node in ast.walk(tree):  # docstrings count for nothing (comments never reach the AST)
        scope = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Module
        if isinstance(node, scope) and node.body and _is_docstring(node.body[0]):
            node.body = node.body[1:]
    bindings: dict[str, list[_Binding]] = {}
    definitions: dict[str, list[ast.stmt]] = {}

    def bind(statement: ast.stmt, guards: tuple[ast.expr, ...]) -> None:
        if isinstance(statement, ast.If):  # `if TYPE_CHECKING:`: a branch counts with its test
            for inner in statement.body:
                bind(inner, (*guards, statement.test))
            for inner in statement.orelse:
                bind(inner, (*guards, ast.UnaryOp(ast.Not(), statement.test)))
        elif isinstance(statement, ast.Try | ast.TryStar):  # every block may bind it
            handlers = [inner for handler in statement.handlers for inner in handler.body]
            for inner in [*statement.body, *handlers, *statement.orelse, *statement.finalbody]:
                bind(inner, guards)
        elif isinstance(statement, ast.With):
            for inner in statement.body:
                bind(inner, guards)
        elif isinstance(statement, ast.Import | ast.ImportFrom):
            for name, imported in _imports(statement):
                bindings.setdefault(name, []).append(imported)
        elif names := _bound_names(statement):
            code = _code(statement, guards)
            for name in names:
                bindings.setdefault(name, []).append(code)
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                definitions.setdefault(statement.name, []).append(statement)

    for statement in tree.body:
        bind(statement, ())
    return _Source(
        {name: tuple(bound) for name, bound in bindings.items()},
        {name: tuple(nodes) for name, nodes in definitions.items()},
        package,
    )


def _dumped(node: Any) -> str:
    """Code as the keys read it: `ast.dump` without line numbers (the same code anywhere in
    the file dumps the same), and the same on every Python from 3.11. A field that is empty
    (None, []) is left out: 3.13's `ast.dump` leaves those out, and 3.12 adds new ones
    (`type_params`), so `ast.dump` itself gives each Python other keys."""
    if isinstance(node, ast.AST):
        fields = ", ".join(
            f"{name}={_dumped(value)}"
            for name, value in ast.iter_fields(node)
            if value is not None and value != []
        )
        return f"{type(node).__name__}({fields})"
    if isinstance(node, list):
        return "[" + ", ".join(_dumped(item) for item in node) + "]"
    return repr(node)


def _is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def _code(statement: ast.stmt, guards: tuple[ast.expr, ...]) -> _Code:
    dump = "\n".join([_dumped(statement), *(f"if {_dumped(guard)}" for guard in guards)])
    uses = {chain for node in (statement, *guards) for chain in _references(node)}
    imports: dict[str, list[_Import]] = {}
    for node in ast.walk(statement):
        if isinstance(node, ast.Import | ast.ImportFrom):
            for name, imported in _imports(node):
                imports.setdefault(name, []).append(imported)
    return _Code(dump, frozenset(uses), {name: tuple(i) for name, i in imports.items()})


def _imports(statement: ast.Import | ast.ImportFrom) -> Iterator[tuple[str, _Import]]:
    """The names an import binds, and to what: `import a.b` binds `a` to module a."""
    if isinstance(statement, ast.Import):
        for alias in statement.names:
            if alias.asname:
                yield alias.asname, _Import(alias.name, None)
            else:
                top = alias.name.partition(".")[0]
                yield top, _Import(top, None)
    else:
        for alias in statement.names:
            imported = _Import(statement.module or "", alias.name, statement.level)
            yield alias.asname or alias.name, imported


def _bound_names(statement: ast.stmt) -> list[str]:
    """The names a top-level statement binds: a `def` or `class` its name; an assignment its
    targets, and the value it changes when it assigns to an item or attribute (`X[k] = v`)."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [statement.name]
    targets: list[ast.expr] = []
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, ast.AugAssign | ast.AnnAssign):
        targets = [statement.target]
    names: list[str] = []
    while targets:
        target = targets.pop()
        if isinstance(target, ast.Tuple | ast.List):
            targets.extend(target.elts)
            continue
        while isinstance(target, ast.Attribute | ast.Subscript | ast.Starred):
            target = target.value
        if isinstance(target, ast.Name):
            names.append(target.id)
    return names


def _references(tree: ast.AST) -> set[tuple[str, ...]]:
    """The names used in `tree`, each with the attributes read from it: `mod.helper()` is
    ("mod", "helper"), so a module alias used as one is followed, and not counted whole. A
    function's parameters are its own inside its body: a fixture's `computed` argument is not
    the module's `computed` fixture."""
    found: set[tuple[str, ...]] = set()
    pending: list[tuple[ast.AST, frozenset[str]]] = [(tree, frozenset())]
    while pending:
        node, own = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            arguments = node.args
            listed = (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
            names = {a.arg for a in (*listed, arguments.vararg, arguments.kwarg) if a is not None}
            inner = own | names
            outside: list[ast.AST] = [*arguments.defaults, *(d for d in arguments.kw_defaults if d)]
            if not isinstance(node, ast.Lambda):
                outside += [*node.decorator_list, *(x for x in [node.returns] if x is not None)]
                outside += [
                    a.annotation
                    for a in ast.walk(arguments)
                    if isinstance(a, ast.arg) and a.annotation
                ]
                body: list[ast.AST] = list(node.body)
            else:
                body = [node.body]
            pending += [(n, own) for n in outside] + [(n, inner) for n in body]
            continue
        attributes: list[str] = []
        base = node
        while isinstance(base, ast.Attribute):
            attributes.append(base.attr)
            base = base.value
        if isinstance(base, ast.Name):
            if base.id not in own:
                found.add((base.id, *reversed(attributes)))
        else:
            pending.extend((child, own) for child in ast.iter_child_nodes(node))
    return found
