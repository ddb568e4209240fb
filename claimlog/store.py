"""A content-addressed store of results, kept in a folder (pytest's cache directory), and
the atomic writes every file of the project is written with.

An entry is named by a key: a digest of everything its content depends on, so a changed input
finds no entry and the result is computed again. Each entry is two files: the content
(`<key>.bin`) and, written last, its description (`<key>.json`): what it is, when and where it
was computed, and the sha256 and size of the content. Reading checks both; an entry that is
truncated, corrupt or written for another key is reported as `Damaged` and never used.
Writes are atomic and take a lock per key, so xdist workers and concurrent sessions never
see, or leave, half an entry. A `Memo` is the one way a result is kept and reused: the key,
the lock, the damaged entry computed again, and the event said.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import inspect
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from filelock import FileLock, Timeout

if TYPE_CHECKING:
    from claimlog.declaration import Training


def digest(*parts: bytes | str) -> str:
    """sha256 of the parts, each length-prefixed so that ("ab", "c") != ("a", "bc")."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()


def python_files(roots: Iterable[Path]) -> list[Path]:
    """The Python files of `roots`, each a file or a folder searched whole: where a workshop's
    code lives (`Declaration.computing`, `Declaration.quoting`)."""
    return [f for root in roots for f in ([root] if root.is_file() else root.rglob("*.py"))]


def source_digest(files: Iterable[Path]) -> str:
    """A digest of source files' contents, by name: editing any line, a comment included,
    changes it."""
    return digest(*(part for f in sorted(files) for part in (f.name, f.read_bytes())))


# -- code keys: the code a function may execute, sliced by definition -----------------------
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


def module_name(file: Path) -> str:
    """The dotted name a file is imported by, up to its top package (a claims module, in no
    package: its stem)."""
    names = [file.stem] if file.name != "__init__.py" else []
    folder = file.parent
    while (folder / "__init__.py").exists():
        names.insert(0, folder.name)
        folder = folder.parent
    return ".".join(names)


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
            names = {
                a.arg
                for a in (
                    *arguments.posonlyargs,
                    *arguments.args,
                    *arguments.kwonlyargs,
                    *(x for x in (arguments.vararg, arguments.kwarg) if x is not None),
                )
            }
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


@dataclass(frozen=True)
class Entry:
    content: bytes
    about: Mapping[str, Any]  # the description written with it (without the checksum)


@dataclass(frozen=True)
class Damaged:
    """An entry that exists but cannot be trusted, and why."""

    key: str
    reason: str


class Store:
    """Entries in one folder, by key."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _paths(self, key: str) -> tuple[Path, Path]:
        return self.folder / f"{key}.bin", self.folder / f"{key}.json"

    def lock(self, key: str, timeout: float = -1) -> FileLock:
        """A lock for computing and writing one entry (blocking; `timeout=0` to try)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self.folder / f"{key}.lock"), timeout=timeout)

    def has(self, key: str) -> bool:
        return all(p.exists() for p in self._paths(key))

    def get(self, key: str) -> Entry | Damaged | None:
        """The entry for `key`, None if there is none, or Damaged."""
        content_path, about_path = self._paths(key)
        if not about_path.exists() and not content_path.exists():
            return None
        try:
            about = json.loads(about_path.read_text())
            content = content_path.read_bytes()
        except (OSError, ValueError) as error:
            return Damaged(key, f"unreadable ({type(error).__name__}: {error})")
        if not isinstance(about, dict) or about.get("key") != key:
            return Damaged(key, "written for another key")
        if len(content) != about.get("size") or digest(content) != about.get("sha256"):
            return Damaged(key, "its content does not match its checksum (truncated or corrupt)")
        return Entry(content, {k: v for k, v in about.items() if k not in ("sha256", "size")})

    def put(self, key: str, content: bytes, about: Mapping[str, Any]) -> None:
        """Write an entry: the content first, its description (the commit) last."""
        content_path, about_path = self._paths(key)
        with replacing(content_path) as tmp:
            tmp.write_bytes(content)
        description = {**about, "key": key, "size": len(content), "sha256": digest(content)}
        with replacing(about_path) as tmp:
            tmp.write_text(json.dumps(description, indent=1, sort_keys=True) + "\n")


COMPUTED, REUSED, DAMAGED = "computed", "reused", "damaged"


@dataclass(frozen=True)
class Event:
    """What a process did with one kept result: computed it (and kept it), reused it, or
    found it damaged (and so computed it again)."""

    what: str  # COMPUTED, REUSED or DAMAGED
    kind: str  # what a `Memo` keeps: "run", "result", "figure", "torch facts"
    name: str  # which one: "batch norm", "S2 sigmoid facts", "two_moons.png"
    detail: Any = None  # reused: the entry's description; damaged: why
    # computed: how long computing it took, in seconds of wall time (for the sweep's floor)
    seconds: float | None = field(default=None, compare=False)


T = TypeVar("T")


class Memo:
    """Results of one kind, each computed at most once per key and kept in a `Store`.

        memo = Memo(store, "result", on_event=events.append)
        facts = memo.get("S2 sigmoid facts", key, compute, encode=pickle.dumps, decode=...)

    The one way every result bnvg reuses from pytest's cache is kept (trained runs, computed
    results, figures, torch's facts of the platform): the key names everything the result
    depends on; a lock per key lets one process compute while the others wait and then read
    it (xdist workers, concurrent sessions); a damaged entry, or one that no longer decodes,
    is reported and computed again; and every reuse, computation and damage is told to
    `on_event`. With `recompute`, only entries this `session` wrote are used: every result is
    computed again once, and shared between the session's processes. Without a store (pytest's
    cache disabled) it computes every time.
    """

    def __init__(
        self,
        store: Store | None,
        kind: str,
        *,
        recompute: bool = False,
        session: str = "",
        on_event: Callable[[Event], None] | None = None,
    ) -> None:
        self.store = store
        self.kind = kind
        self.recompute = recompute
        self.session = session
        self.on_event = on_event or (lambda event: None)

    def get(
        self,
        name: str,
        key: str,
        compute: Callable[[], T],
        *,
        encode: Callable[[T], bytes],
        decode: Callable[[Entry], T],
        about: Callable[[T], Mapping[str, Any]] = lambda value: {},
        wait: bool = True,
    ) -> T | None:
        """The result `name`: kept from before, or computed now by `compute()` and kept
        (`encode` makes its bytes, `about` its description; `decode` reads an entry back).
        With `wait=False`, None when another process holds the key's lock (computing it)."""
        if self.store is None:
            started = time.perf_counter()
            value = compute()
            self.on_event(Event(COMPUTED, self.kind, name, seconds=time.perf_counter() - started))
            return value
        lock = self.store.lock(key, timeout=-1 if wait else 0)
        try:
            lock.acquire()
        except Timeout:
            return None
        try:
            found = self.store.get(key)
            if isinstance(found, Damaged):
                self.on_event(Event(DAMAGED, self.kind, name, found.reason))
            elif found is not None and self._usable(found):
                try:
                    kept = decode(found)
                except Exception as error:  # a class that moved or changed: compute anew
                    self.on_event(
                        Event(DAMAGED, self.kind, name, f"{type(error).__name__}: {error}")
                    )
                else:
                    if found.about.get("session") != self.session:
                        self.on_event(Event(REUSED, self.kind, name, dict(found.about)))
                    return kept
            started = time.perf_counter()
            value = compute()
            seconds = time.perf_counter() - started
            when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
            description = {"name": name, "kind": self.kind, "session": self.session, "at": when}
            self.store.put(key, encode(value), {**about(value), **description})
            self.on_event(Event(COMPUTED, self.kind, name, seconds=seconds))
            return value
        finally:
            lock.release()

    def peek(self, key: str, decode: Callable[[Entry], T]) -> T | None:
        """The kept result for `key` if there is a sound one, without computing anything."""
        found = None if self.store is None else self.store.get(key)
        if not isinstance(found, Entry):
            return None
        try:
            return decode(found)
        except Exception:
            return None

    def _usable(self, entry: Entry) -> bool:
        return not self.recompute or entry.about.get("session") == self.session


# -- trained runs: a workshop's networks, each trained at most once -------------------------
def known_run(training: Training, name: str) -> str:
    """`name`, if `training` has a run of that name; else a ValueError listing the valid names."""
    names = training.names()
    if name not in names:
        raise ValueError(
            f"unknown run {name!r}: valid names are " + ", ".join(repr(n) for n in names)
        )
    return name


class TrainedRuns:
    """A workshop's trained runs (`claimlog.declaration.Training`), each trained at most once
    and handed to every caller, so claims that quote the same run share one training.

    Given a `Store`, a finished run is kept there, through a `Memo` of kind "run", under a key
    of everything its numbers depend on: the run's `Training.inputs` (its code, its settings,
    the recipe) and `where` (`claimlog.platform.Platform.cache_fields`: torch, the kernels,
    the threads, the CPU). Change any of them and no entry has the key: the run is trained
    again. The entry's description holds the run's own (`Training.describe`: its history)
    beside those inputs, so that `kept_names` tells which runs are there without torch.
    `session` and `recompute` are the `Memo`'s; `prepare` runs before the first training (the
    engine imports torch with the session's thread count there).
    """

    def __init__(
        self,
        training: Training,
        recipe: Any,
        where: Callable[[], Mapping[str, str]],
        store: Store | None = None,
        *,
        on_event: Callable[[Event], None] | None = None,
        session: str = "",
        recompute: bool = False,
        prepare: Callable[[], object] = lambda: None,
    ) -> None:
        self.training = training
        self.recipe = recipe
        self.trained: list[str] = []  # by this process, in order
        told = on_event or (lambda event: None)

        def note(event: Event) -> None:
            if event.what == COMPUTED:
                self.trained.append(event.name)
            told(event)

        self.memo = Memo(store, "run", recompute=recompute, session=session, on_event=note)
        self._where_of = where
        self._where: dict[str, str] | None = None
        self._prepare = prepare
        self._done: dict[str, Any] = {}

    @property
    def where(self) -> dict[str, str]:
        """The platform, as the runs' keys name it (asked once)."""
        if self._where is None:
            self._where = dict(self._where_of())
        return self._where

    def inputs(self, name: str) -> dict[str, dict[str, str]]:
        """Everything the run's numbers depend on: the workshop's inputs and the platform,
        apart (a workshop's input may share a name with a platform field)."""
        return {"run": dict(self.training.inputs(name, self.recipe)), "platform": self.where}

    def key(self, name: str) -> str:
        """The key of the run's entry: a digest of everything its numbers depend on."""
        return digest(json.dumps(self.inputs(name), sort_keys=True))

    def kept_names(self) -> set[str]:
        """The names of the runs whose entries the store holds for these inputs: a cheap look,
        without torch, at what a session would reuse (reading one checks its whole entry)."""
        if self.memo.store is None:
            return set()
        wanted = {name: self.inputs(name) for name in self.training.names()}
        found = set()
        for about_path in self.memo.store.folder.glob("*.json"):
            try:
                inputs = json.loads(about_path.read_text()).get("inputs", {})
            except (OSError, ValueError, AttributeError):
                continue
            found |= {name for name, w in wanted.items() if inputs == w}
        return found

    def get(self, name: str) -> Any:
        """The run `name`: kept from before, or trained now (waiting for a process that is
        training it)."""
        if known_run(self.training, name) not in self._done:
            self._done[name] = self._load_or_train(name, wait=True)
        return self._done[name]

    def prefetch(self, names: Sequence[str]) -> None:
        """Train, longest first, every run of `names` that the store lacks and no process
        sharing it has started yet; skip those another process is training.

        Processes that all call this split the work between them as they go (whoever is free
        takes the next run), so they finish together even when one started late. A run found
        kept is only described (a workshop may load its weights when they are asked for).
        """
        if self.memo.store is None:
            return
        for name in sorted(names, key=lambda n: -self.training.cost(n, self.recipe)):
            try:
                # None: another process is training it.
                run = self._load_or_train(known_run(self.training, name), wait=False)
            except Exception:
                # A run that cannot be trained fails the claims that read it, when they ask
                # for it, exactly as in one process: never the session fixture that
                # prefetches, which would fail every claim of this process.
                continue
            if run is not None:
                self._done[name] = run

    def _load_or_train(self, name: str, wait: bool) -> Any:
        key = self.key(name) if self.memo.store is not None else ""

        def train() -> Any:
            self._prepare()
            return self.training.train(name, self.recipe, key)

        return self.memo.get(
            name,
            key,
            train,
            encode=self.training.encode,
            decode=lambda entry: self.training.decode(name, entry.content, entry.about["run"], key),
            about=lambda run: {
                "inputs": self.inputs(name),
                "platform": self.where,  # for the summary: where a reused run was trained
                "run": dict(self.training.describe(run)),
            },
            wait=wait,
        )


# -- atomic writes: a file replaced whole, or not at all ------------------------------------
UNFINISHED = ".tmp"  # the suffix of `replacing`'s temporary files


@contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A temporary file beside `path` to write to; when the block ends without an error it
    replaces `path` in one rename, so readers see the old file or the new one, never half.
    The temporary file is removed whatever happens, unless the process is killed first
    (`unfinished_writes` finds what it then leaves)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=UNFINISHED)
    os.close(fd)
    # mkstemp makes the file private (0600); give it the mode a plain open() would have.
    os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask())
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def unfinished_writes(folder: Path) -> list[Path]:
    """The temporary files that writes under `folder`, at any depth, left when their process
    was killed inside `replacing`: never a file's content, and never to be committed."""
    return sorted(folder.rglob(f".*{UNFINISHED}"))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: Path, text: str) -> None:
    """Write `text` to `path` atomically (see `replacing`)."""
    with replacing(path) as tmp, open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def relative(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)
