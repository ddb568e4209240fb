"""The layout draws the architecture: imports flow one way, and each folder keeps its promise.

- experiment/: torch and numpy, no pytest, no text (it imports nothing of the log);
- log/ and evidence/: no torch and no pytest at run time (the xdist controller writes the log
  from its workers' readings without importing torch);
- plugin/: the only user of pytest; its modules load without torch, matplotlib or pandas.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "bnvg"


def runtime_imports(path):
    """The bnvg modules a module imports when it runs (not those imported for type checking)."""
    tree = ast.parse(path.read_text())
    guarded = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for stmt in block.body
        for node in ast.walk(stmt)
    }
    found = set()
    for node in ast.walk(tree):
        if id(node) in guarded:
            continue
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found


MODULES = {
    ".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): p
    for p in PACKAGE.rglob("*.py")
}


def test_bnvg_has_no_import_cycle():
    graph = {m: {d for d in runtime_imports(p) if d in MODULES} for m, p in MODULES.items()}
    done, path = set(), []

    def visit(module):
        assert module not in path, " -> ".join([*path[path.index(module) :], module])
        if module in done:
            return
        path.append(module)
        for dep in graph[module]:
            visit(dep)
        path.pop()
        done.add(module)

    for module in graph:
        visit(module)


@pytest.mark.parametrize(
    "module", sorted(m for m in MODULES if m.startswith(("bnvg.plugin", "bnvg.evidence")))
)
def test_neither_the_plugin_nor_the_evidence_imports_the_sweep(module):
    """The sweep builds evidence; what judges a run (and the plugin that runs it) never
    needs the machinery that builds it."""
    assert not {i for i in runtime_imports(MODULES[module]) if i.startswith("bnvg.sweep")}


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("bnvg.experiment")))
def test_the_experiment_knows_neither_pytest_nor_the_logs_text(module):
    imports = runtime_imports(MODULES[module])
    assert not {
        i
        for i in imports
        if i.split(".")[0] == "pytest" or i.startswith(("bnvg.log", "bnvg.evidence", "bnvg.plugin"))
    }


def test_the_log_the_evidence_and_the_plugin_load_without_torch_matplotlib_or_pandas():
    modules = sorted(
        m for m in MODULES if m.startswith(("bnvg.log", "bnvg.evidence", "bnvg.plugin"))
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
    "bnvg.experiment.platform",
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


def test_only_the_plugin_imports_pytest():
    users = {
        m
        for m, p in MODULES.items()
        if any(i.split(".")[0] == "pytest" for i in runtime_imports(p))
    }
    assert users and all(m.startswith("bnvg.plugin") for m in users)
