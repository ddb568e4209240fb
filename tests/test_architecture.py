"""The layout draws the architecture: imports flow one way, and each folder keeps its promise.

Imports inside a function count as much as those at the top. Two packages: claimlog, the
engine, imports nothing of any workshop (not even for type checking), and bnvg, this
workshop, is written on it. Across both, what runs never circles back; inside each folder (a
room: experiment/, plugin/, ...) the modules are layers, and not even an import made for
type checking only reaches up.

- bnvg/experiment/: torch and numpy, no pytest, no text (it imports nothing of the log);
- the log and claimlog/evidence/: no torch and no pytest at run time (the xdist controller
  writes the log from its workers' readings without importing torch);
- claimlog/plugin/ and the workshop's own plugin (bnvg/fixtures.py): the only users of pytest,
  with the runner; they load without torch, matplotlib or pandas;
- a workshop (bnvg, dropout) imports of claimlog only its public API (`claimlog.__all__`).
"""

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import claimlog

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "claimlog"
# Package name -> folder: every workshop in this repository.
WORKSHOPS = {"bnvg": ROOT / "bnvg", "dropout": ROOT / "workshops" / "dropout" / "dropout"}


def _type_checking_only(test: ast.expr) -> bool:
    """Whether an `if` test is `TYPE_CHECKING` (or `typing.TYPE_CHECKING`): its body never runs."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(source, package, *, typing=False):
    """The modules `source` (a module of `package`) imports, wherever the import sits: at the
    top, or inside a function or a method, which imports when it runs and so depends on the
    module all the same.

    `from a.b import c` names `a.b` and `a.b.c` (c may be a submodule: `from claimlog.sweep import
    report`); a relative import is made absolute. Without `typing`, what is imported only for
    type checking (the body of `if TYPE_CHECKING:`, not its `else`) is left out: it never runs.
    """
    tree = ast.parse(source)
    skipped = set()
    if not typing:
        skipped = {
            id(node)
            for block in ast.walk(tree)
            if isinstance(block, ast.If) and _type_checking_only(block.test)
            for stmt in block.body
            for node in ast.walk(stmt)
        }
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom):
            above = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join([*(above if node.level else []), *filter(None, [node.module])])
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names if alias.name != "*"}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found


def modules_of(package: Path) -> dict[str, Path]:
    return {
        ".".join(p.relative_to(package.parent).with_suffix("").parts).removesuffix(".__init__"): p
        for p in package.rglob("*.py")
    }


ENGINE_MODULES = modules_of(ENGINE)
MODULES = {**ENGINE_MODULES, **modules_of(WORKSHOPS["bnvg"])}


def package_of(module):
    return module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]


def runtime_imports(path):
    """The bnvg modules (and others) a module imports when it runs, function bodies included
    (not those imported for type checking only)."""
    module = next(m for m, p in MODULES.items() if p == path)
    return imports_of(path.read_text(), package_of(module))


def import_graph(modules, *, typing=False):
    """Which of `modules` each of them imports."""
    return {
        m: {
            d
            for d in imports_of(MODULES[m].read_text(), package_of(m), typing=typing)
            if d in modules and d != m
        }
        for m in modules
    }


def cycle_in(graph):
    """One import cycle of `graph` (its modules in order, the first repeated last), or None."""
    done, path = set(), []

    def visit(module):
        if module in path:
            return [*path[path.index(module) :], module]
        if module in done:
            return None
        path.append(module)
        for dep in sorted(graph[module]):
            if found := visit(dep):
                return found
        path.pop()
        done.add(module)
        return None

    return next((c for c in map(visit, sorted(graph)) if c), None)


@pytest.mark.parametrize("module", sorted(ENGINE_MODULES))
def test_the_engine_imports_nothing_of_a_workshop(module):
    """claimlog knows no workshop: what it needs of one, the workshop declares
    (`claimlog.declaration`). Not even for type checking, nor inside a function."""
    imports = imports_of(ENGINE_MODULES[module].read_text(), package_of(module), typing=True)
    assert not {i for i in imports if i.split(".")[0] in WORKSHOPS}


WORKSHOP_MODULES = {
    module: path for package in WORKSHOPS.values() for module, path in modules_of(package).items()
}
# What a workshop may import of claimlog: its public API (docs/engine.md), and the sweep's
# command, which `python -m bnvg.sweep` starts under this workshop's name.
PUBLIC = {"claimlog", *(f"claimlog.{name}" for name in claimlog.__all__)}
COMMANDS = {"claimlog.sweep.__main__", "claimlog.sweep.__main__.main"}


@pytest.mark.parametrize("module", sorted(WORKSHOP_MODULES))
def test_a_workshop_uses_only_the_engines_public_api(module):
    """Both workshops are written on claimlog's documented API alone (`claimlog.__all__`),
    even for type checking: what a workshop needs of the engine is on one page."""
    path = WORKSHOP_MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    imports = imports_of(path.read_text(), package, typing=True)
    used = {i for i in imports if i.split(".")[0] == "claimlog"}
    assert used <= PUBLIC | COMMANDS, sorted(used - PUBLIC - COMMANDS)


def test_bnvg_has_no_import_cycle():
    """At run time, the imports of claimlog and bnvg flow one way, function-level imports
    included."""
    cycle = cycle_in(import_graph(set(MODULES)))
    assert cycle is None, " -> ".join(cycle)


# A room is a folder of bnvg (its top level too): the modules that sit side by side in it.
ROOMS = {
    room: {m for m, p in MODULES.items() if p.parent == folder}
    for folder in sorted({p.parent for p in MODULES.values()})
    for room in [".".join(folder.relative_to(ROOT).parts)]
}


@pytest.mark.parametrize("room", list(ROOMS))
def test_no_import_cycle_within_a_room(room):
    """Inside a room the modules are layers, each importing only those below it, even for
    type checking: a module that needs a type from one above it holds that type in the wrong
    layer (RunSpec once lived in experiment/runs.py, above the results and the training that
    take one). Function-level imports count too: they run when the function does."""
    cycle = cycle_in(import_graph(ROOMS[room], typing=True))
    assert cycle is None, " -> ".join(cycle)


def test_imports_count_function_bodies_submodules_and_relative_imports():
    source = (
        "from typing import TYPE_CHECKING\n"
        "import claimlog.store\n"
        "from claimlog.sweep import report\n"
        "from .runs import RunSpec\n"
        "from .. import places\n"
        "if TYPE_CHECKING:\n"
        "    from claimlog.plugin.session import ClaimOutcome\n"
        "else:\n"
        "    from bnvg.log import layout\n"
        "def train():\n"
        "    from bnvg.experiment.train import train_run\n"
        "class Cache:\n"
        "    def get(self):\n"
        "        import bnvg.figures.draw\n"
    )
    at_run_time = imports_of(source, "bnvg.experiment")
    assert {
        "claimlog.store",
        "claimlog.sweep.report",
        "bnvg.experiment.runs",
        "bnvg.places",
        "bnvg.log.layout",
        "bnvg.experiment.train",
        "bnvg.figures.draw",
    } <= at_run_time
    assert "claimlog.plugin.session" not in at_run_time
    assert "claimlog.plugin.session" in imports_of(source, "bnvg.experiment", typing=True)


def test_a_cycle_closed_inside_a_function_is_found():
    sources = {
        "bnvg.experiment.runs": "def train():\n    from bnvg.experiment.train import train_run\n",
        "bnvg.experiment.train": "from bnvg.experiment.results import History\n",
        "bnvg.experiment.results": "def network():\n    from bnvg.experiment import runs\n",
    }
    graph = {m: imports_of(s, "bnvg.experiment") & set(sources) for m, s in sources.items()}
    assert cycle_in(graph) == [
        "bnvg.experiment.results",
        "bnvg.experiment.runs",
        "bnvg.experiment.train",
        "bnvg.experiment.results",
    ]


@pytest.mark.parametrize(
    "module", sorted(m for m in MODULES if m.startswith(("claimlog.plugin", "claimlog.evidence")))
)
def test_neither_the_plugin_nor_the_evidence_imports_the_sweep(module):
    """The sweep builds evidence; what judges a run (and the plugin that runs it) never
    needs the machinery that builds it."""
    assert not {i for i in runtime_imports(MODULES[module]) if i.startswith("claimlog.sweep")}


# The features of claimlog that are plugins of their own, each with the modules only it uses.
FEATURES = {
    "claimlog.text": (
        "claimlog.plugin.text",
        "claimlog.plugin.citations",
        "claimlog.text.",
    ),
    "claimlog.reports": ("claimlog.plugin.reports", "claimlog.plugin.reporting"),
    "claimlog.evidence": ("claimlog.plugin.evidence", "claimlog.plugin.standing"),
    "claimlog.update": ("claimlog.plugin.update",),
}
CORE = sorted(
    m
    for m in ENGINE_MODULES
    if m.startswith("claimlog.plugin")
    and not any(m.startswith(f) for modules in FEATURES.values() for f in modules)
)


@pytest.mark.parametrize("module", CORE)
def test_the_core_imports_no_feature_plugin(module):
    """Issue 60: a feature (`-p no:claimlog.text`) depends on the core, never the core on
    it, not even for type checking: the core calls its hooks (claimlog/plugin/hookspecs.py)."""
    imports = imports_of(ENGINE_MODULES[module].read_text(), package_of(module), typing=True)
    features = (f for modules in FEATURES.values() for f in modules)
    assert not {i for i in imports for f in features if i == f.rstrip(".") or i.startswith(f)}


def test_every_feature_plugin_has_an_entry_point_of_its_name():
    """Each feature is found by pytest under the name `-p no:` turns it off by, and the
    summary names it when it is off."""
    import tomllib

    from claimlog.plugin.summary import FEATURES as NAMED

    engine = tomllib.loads((ROOT / "engine" / "pyproject.toml").read_text())
    points = engine["project"]["entry-points"]["pytest11"]
    for name, modules in FEATURES.items():
        assert points.get(name) == modules[0], name
    assert set(NAMED) == {*FEATURES, "claimlog.sweep"}


def test_no_hook_asks_whether_a_workshop_is_declared():
    """Issue 60: the core's hooks are on an object registered only where a workshop is
    declared; the entry point's own are the declaration's ini option and its reading."""
    import claimlog.plugin as entry

    hooks = sorted(n for n in vars(entry) if n.startswith("pytest_"))
    assert hooks == ["pytest_addoption", "pytest_load_initial_conftests"]
    source = (ENGINE / "plugin" / "__init__.py").read_text()
    assert "SESSION, None) is None" not in source and "_session(" not in source


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("bnvg.experiment")))
def test_the_experiment_knows_neither_pytest_nor_the_logs_text(module):
    imports = runtime_imports(MODULES[module])
    assert not {
        i
        for i in imports
        if i.split(".")[0] == "pytest"
        or i.startswith(("bnvg.log", "claimlog.evidence", "claimlog.plugin"))
    }


def test_the_log_the_evidence_and_the_plugin_load_without_torch_matplotlib_or_pandas():
    modules = sorted(
        m
        for m in MODULES
        if m.startswith(("bnvg.log", "claimlog.log", "claimlog.evidence", "claimlog.plugin"))
        or m in ("bnvg.fixtures", "bnvg.workshop")
    )
    probe = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "print(sorted(h for h in ('torch', 'matplotlib', 'pandas') if h in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


# What a claims session imports before it computes anything: with every result in pytest's
# cache it computes nothing, and must not pay for importing torch.
TORCH_FREE_EXPERIMENT = (
    "bnvg.experiment.config",
    "bnvg.experiment.data",
    "bnvg.experiment.facts",
    "claimlog.platform",
    "bnvg.experiment.results",
    "bnvg.experiment.runs",
    "bnvg.figures.series",
)


def test_the_claims_and_what_they_read_load_without_torch():
    claims = sorted(p.stem for p in (ROOT / "claims").glob("test_*.py"))
    probe = (
        "import importlib, sys\n"
        f"sys.path.insert(0, {str(ROOT / 'claims')!r})\n"
        f"for m in {[*TORCH_FREE_EXPERIMENT, *claims]!r}: importlib.import_module(m)\n"
        "print(sorted(h for h in ('torch', 'matplotlib') if h in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


# What a warm session of the claims may import of the engine, as a share of its non-blank lines
# (issue 60): the core, and no feature it does not use (the update's transaction, the kernels'
# hearing, the sweep, the text, the reports, the code slicing of a first session).
IMPORTED_AT_MOST = 0.55
IMPORTED = """
import json, sys
import pytest
pytest.main(sys.argv[1:])
print(json.dumps(sorted(m for m in sys.modules if m.startswith("claimlog"))))
"""


@pytest.mark.parametrize("selection", [[], ["-k", "eval_bug"]], ids=["all", "eval_bug"])
def test_a_warm_claims_session_imports_little_of_the_engine(selection):
    """A `pytest claims/` whose results pytest's cache holds (the first session, run here,
    makes it so) imports at most `IMPORTED_AT_MOST` of the engine's lines; `-k eval_bug`
    no more than that."""
    command = ["claims/", "-q", "-p", "no:randomly", "-n", "0", *selection]
    warm = subprocess.run([sys.executable, "-m", "pytest", *command], cwd=ROOT, capture_output=True)
    assert warm.returncode == 0, warm.stdout.decode()[-2000:]
    done = subprocess.run(
        [sys.executable, "-c", IMPORTED, *command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    imported = set(json.loads(done.stdout.strip().splitlines()[-1]))

    def lines(module):
        return sum(1 for line in ENGINE_MODULES[module].read_text().splitlines() if line.strip())

    share = sum(lines(m) for m in imported & set(ENGINE_MODULES))
    total = sum(lines(m) for m in ENGINE_MODULES)
    assert share / total <= IMPORTED_AT_MOST, sorted(imported & set(ENGINE_MODULES))


def _writes(tree, target):
    """The lines where `tree` changes `target` ("os.environ", "config.option"): an item or
    attribute assigned or deleted, or a mutating method called (`update`, `pop`, ...), on
    it or on a name it is handed to (`env = os.environ if environ is None else environ`)."""
    mutating = {"update", "pop", "popitem", "setdefault", "clear", "__setitem__", "__delitem__"}

    def names(value):
        found = [value.body, value.orelse] if isinstance(value, ast.IfExp) else [value]
        return {ast.unparse(v) for v in found}

    aliases = {target} | {
        node.targets[0].id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Name)
        and target in names(node.value)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript | ast.Attribute) and isinstance(
            node.ctx, ast.Store | ast.Del
        ):
            changed = ast.unparse(node.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            changed = ast.unparse(node.func.value) if node.func.attr in mutating else ""
        else:
            continue
        if any(changed == a or changed.endswith(f".{a}") for a in aliases):
            yield node.lineno


def test_options_only_read_and_the_environment_is_written_in_one_place():
    """Issue 60: no hidden effects. Only `claimlog.platform.apply` writes the environment
    (the reference kernels and torch's thread count, which the summary names). Reading the
    options changes nothing: another plugin's option is set in two places of the core, each
    saying why (the session's configure tells pytest-regressions that --snapshot-update
    regenerates its files; the controller keeps syrupy from deleting, in an update a claim
    failed, the snapshot the failing claim never read)."""
    environment = {
        m for m, p in ENGINE_MODULES.items() if any(_writes(ast.parse(p.read_text()), "os.environ"))
    }
    assert environment == {"claimlog.platform"}
    tree = ast.parse(ENGINE_MODULES["claimlog.platform"].read_text())
    apply = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "apply")
    assert set(_writes(tree, "os.environ")) == set(_writes(apply, "os.environ"))
    options = {
        m
        for m, p in ENGINE_MODULES.items()
        if any(_writes(ast.parse(p.read_text()), "config.option"))
    }
    assert options == {"claimlog.plugin.session", "claimlog.plugin.controller"}


def test_the_session_holds_each_concept_in_one_member_and_at_most_12():
    """Issue 60: `ClaimSession` is no longer the object that holds everything (36 public
    members before): the platform, pytest's cache, the kernels, the evidence and the update
    are each one member, an object of its own (the update is now a plugin of its own)."""
    tree = ast.parse(ENGINE_MODULES["claimlog.plugin.session"].read_text())
    session = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ClaimSession")
    methods = {n.name for n in session.body if isinstance(n, ast.FunctionDef)}
    attributes = {
        n.attr
        for n in ast.walk(session)
        if isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Name)
        and n.value.id == "self"
        and isinstance(n.ctx, ast.Store)
    }
    members = sorted(m for m in methods | attributes if not m.startswith("_"))
    assert len(members) <= 12, members


def test_a_claims_outcome_has_one_type_from_the_report_to_the_fragment():
    """Issue 60: one claim-outcome type. The controller gathers a `ClaimOutcome` from the
    reports, a record holds one per claim and a fragment one per claim; no other class of
    the engine stands for a claim's outcome or result."""
    from typing import get_type_hints

    from claimlog.evidence.fragments import Fragment
    from claimlog.evidence.record import ClaimOutcome, Record
    from claimlog.plugin.outcomes import take

    holders = [get_type_hints(Record)["claims"], get_type_hints(Record)["citations"]]
    holders.append(get_type_hints(Fragment)["claims"])
    assert all(hint.__args__ == (str, ClaimOutcome) for hint in holders), holders
    assert get_type_hints(take)["claim"] is ClaimOutcome
    outcome_like = sorted(
        f"{m}.{n.name}"
        for m, path in ENGINE_MODULES.items()
        for n in ast.walk(ast.parse(path.read_text()))
        if isinstance(n, ast.ClassDef) and re.search(r"(Outcome|Result)s?$", n.name)
    )
    assert outcome_like == ["claimlog.evidence.record.ClaimOutcome"]


def test_only_the_plugins_and_the_runner_import_pytest():
    """claimlog's plugin, the update's sweep (a plugin of its own, `-p no:claimlog.sweep`) and
    the workshop's own (its fixtures); the runner starts claims sessions (a sweep's worker
    runs them in its own process)."""
    users = {
        m
        for m, p in MODULES.items()
        if any(i.split(".")[0] in ("pytest", "_pytest") for i in runtime_imports(p))
    }
    plugins = ("claimlog.runner", "claimlog.sweep.plugin", "bnvg.fixtures")
    assert users and all(m.startswith("claimlog.plugin") or m in plugins for m in users)


WORKSHOP_NAMES = re.compile(r"bnvg|dropout|\[S\d+\]|test_s\d+_", re.I)


def _code_words(tree):
    """Every name and string of a module's code: its docstrings and comments left out, where
    a workshop may stand as an example."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            yield node.id
        elif isinstance(node, ast.Attribute):
            yield node.attr
        elif isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
            yield node.name
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            yield node.value


@pytest.mark.parametrize("module", sorted(ENGINE_MODULES))
def test_no_workshops_name_or_numbering_in_the_engines_code(module):
    """Issue 50: the engine's code names no workshop, and knows no workshop's section
    numbering ("[S0]", "test_s4_"): it reads what a workshop declares, in its own words."""
    tree = ast.parse(ENGINE_MODULES[module].read_text())
    named = sorted({w for w in _code_words(tree) if WORKSHOP_NAMES.search(w)})
    assert not named, named


# -- the house: no circle, no global workshop, the size said ----------------------------------
# No cap on a module's lines: a module holds one responsibility, whatever its size, and a file
# split to fit a number is no design (issue 60).


def test_the_engine_has_no_import_cycle_not_even_for_type_checking():
    """Issue 50: the engine's modules are layers as a whole, not only within each room."""
    graph = import_graph(set(ENGINE_MODULES), typing=True)
    cycle = cycle_in(graph)
    assert cycle is None, " -> ".join(cycle)


# What a process, not a session, did: the modules it froze once imported, the project a sweep
# worker unpacked for its later jobs. Neither says anything of a workshop or a session.
PROCESS_STATE = {"claimlog.machine": {"_FROZEN"}, "claimlog.sweep.job": {"_UNPACKED"}}


def _module_level_state(tree):
    """The names a module binds at its top level to something mutable that code may fill in
    later (a list, a dict or a set): where a process-wide global would live."""
    containers = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)
    for node in tree.body:
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        made = isinstance(value, ast.Call) and getattr(value.func, "id", "") in (
            "list",
            "dict",
            "set",
        )
        if isinstance(value, containers) or made:
            yield from (t.id for t in targets if isinstance(t, ast.Name))


@pytest.mark.parametrize("module", sorted(ENGINE_MODULES))
def test_no_module_keeps_the_workshop_or_the_session_in_a_global(module):
    """Issue 50: the declaration and the session's state live in a `ClaimSession` on
    pytest's config, handed to what needs them; no module keeps a workshop (or anything a
    session fills in) in a global, and no function hands out "the declared workshop"."""
    source = ENGINE_MODULES[module].read_text()
    tree = ast.parse(source)
    assert "global " not in source.replace("global generators", "")
    filled = [
        name
        for name in _module_level_state(tree)
        if name not in PROCESS_STATE.get(module, ())
        and re.search(rf"\b{name}\s*(\[[^\]]*\]\s*=|\.(append|add|update|setdefault)\()", source)
    ]
    assert not filled, f"{module} fills module-level state: {filled}"
    functions = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    assert not functions & {"declared", "declare"}, module


def engine_lines():
    """The engine's size, as docs/architecture.md says it: its modules and non-blank lines."""
    texts = [p.read_text() for p in ENGINE_MODULES.values()]
    lines = sum(1 for text in texts for line in text.splitlines() if line.strip())
    return f"{len(texts)} modules, {lines:,} non-blank lines of Python"


SIZE = re.compile(r"(<!-- engine size -->)(.*?)(<!-- end engine size -->)", re.S)


def test_the_architecture_page_says_the_engines_size():
    """Issue 50: docs/architecture.md gives the engine's line count, generated: run
    `python tests/test_architecture.py` to write it again."""
    page = (ROOT / "docs" / "architecture.md").read_text()
    found = SIZE.search(page)
    assert found, "docs/architecture.md has no <!-- engine size --> section"
    assert found[2] == engine_lines(), "run `python tests/test_architecture.py`"


if __name__ == "__main__":  # writes docs/architecture.md's generated size
    PAGE = ROOT / "docs" / "architecture.md"
    PAGE.write_text(SIZE.sub(lambda m: m[1] + engine_lines() + m[3], PAGE.read_text()))
