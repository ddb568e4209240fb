"""code_key: a digest of the code a function may reach in the project, sliced by definition.

Each test writes a small package of its own to a temporary folder (under a name no other test
uses), imports a function from it, edits the files and asks the key again: `code_key` reads
the source on disk, so the function imported before the edit stands for it after.
"""

import ast
import importlib
import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from claimlog.slicing import _slice_names, code_key


@dataclass
class Package:
    name: str  # unique: "PKG" in the files written stands for it
    folder: Path

    def write(self, **modules: str) -> None:
        """Write modules by name (`helpers="..."`), dedented, "PKG" replaced by the name."""
        for module, text in modules.items():
            path = self.folder / f"{module.replace('.', '/')}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text).replace("PKG", self.name).lstrip())
        importlib.invalidate_caches()

    def edit(self, module: str, old: str, new: str) -> None:
        path = self.folder / f"{module}.py"
        text = path.read_text()
        assert text.count(old) == 1, f"{old!r} is not once in {module}.py"
        path.write_text(text.replace(old, new))

    def function(self, module: str, qualname: str) -> Callable[..., Any]:
        found: Any = importlib.import_module(f"{self.name}.{module}")
        for name in qualname.split("."):
            found = getattr(found, name)
        return found


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Package]:
    name = f"ck_{uuid.uuid4().hex[:12]}"
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield Package(name, tmp_path / name)
    importlib.invalidate_caches()
    for module in [m for m in sys.modules if m.startswith(name)]:
        del sys.modules[module]


def changed(
    package: Package, function: Callable[..., Any], module: str, old: str, new: str
) -> bool:
    """Whether editing `old` into `new` in `module` changes `code_key(function)`."""
    before = code_key(function)
    package.edit(module, old, new)
    return code_key(function) != before


def test_a_constant_counts_only_for_the_functions_that_read_it(package):
    # As S2: sigmoid_facts.py imports CHECK_LOGIT, but only bce_logit_gradient reads it.
    package.write(
        config="""
            CHECK_LOGIT = 2.0
            SCALE = 3.0
        """,
        facts="""
            from PKG.config import CHECK_LOGIT, SCALE

            def slope(x):
                return x * SCALE

            def gradient(z=CHECK_LOGIT):
                return z
        """,
        curves="""
            from PKG import config

            def curve(x):
                return x * config.SCALE
        """,
    )
    slope, gradient = package.function("facts", "slope"), package.function("facts", "gradient")
    curve = package.function("curves", "curve")
    before = {f: code_key(f) for f in (slope, gradient, curve)}
    package.edit("config", "CHECK_LOGIT = 2.0", "CHECK_LOGIT = 2.5")
    assert {f: code_key(f) == before[f] for f in before} == {
        slope: True,
        gradient: False,
        curve: True,
    }
    before = {f: code_key(f) for f in before}
    package.edit("config", "SCALE = 3.0", "SCALE = 4.0")
    assert {f: code_key(f) == before[f] for f in before} == {
        slope: False,
        gradient: True,
        curve: False,
    }


def test_a_constant_read_through_another_counts(package):
    package.write(
        config="""
            A = 1.0
            B = A * 2
            C = 5.0
        """,
        facts="""
            from .config import B

            def f():
                return B
        """,
    )
    f = package.function("facts", "f")
    assert changed(package, f, "config", "A = 1.0", "A = 1.5")
    assert not changed(package, f, "config", "C = 5.0", "C = 6.0")


def test_every_statement_that_binds_a_name_counts_with_the_test_of_its_if(package):
    package.write(
        config="""
            FAST = False
            X = 1
            X = X + 1
            if FAST:
                STEPS = 10
            else:
                STEPS = 4000
        """,
        facts="""
            from .config import STEPS, X

            def f():
                return X * STEPS
        """,
    )
    f = package.function("facts", "f")
    assert changed(package, f, "config", "X = 1\n", "X = 2\n")
    assert changed(package, f, "config", "X = X + 1", "X = X + 2")
    assert changed(package, f, "config", "STEPS = 10", "STEPS = 20")
    assert changed(package, f, "config", "FAST = False", "FAST = True")
    assert changed(package, f, "config", "if FAST:", "if not FAST:")


def test_comments_and_docstrings_count_for_nothing_and_code_does(package):
    package.write(
        facts='''
            """The module's docstring."""

            LIMIT = 3  # a comment on the constant


            class Box:
                """The class's docstring."""

                size: int = LIMIT


            def f(x):
                """The function's docstring."""
                # a comment in the body
                return Box().size * x
        ''',
    )
    f = package.function("facts", "f")
    for old, new in [
        ("The module's docstring.", "Edited."),
        ("The class's docstring.", "Edited."),
        ("The function's docstring.", "Edited."),
        ("# a comment on the constant", "# edited"),
        ("# a comment in the body", "# edited"),
        ("LIMIT = 3", "\n\nLIMIT = 3"),  # moved: no line numbers in the key
    ]:
        assert not changed(package, f, "facts", old, new), (old, new)
    assert changed(package, f, "facts", "return Box().size * x", "return Box().size * -x")
    assert changed(package, f, "facts", "LIMIT = 3", "LIMIT = 4")


def test_an_edit_counts_where_the_function_can_reach_it_and_nowhere_else(package):
    package.write(
        helpers="""
            def helper():
                return 1

            def unused():
                return 2
        """,
        facts="""
            from .helpers import helper

            def f():
                return helper()

            def other():
                return 3
        """,
    )
    f = package.function("facts", "f")
    assert not changed(package, f, "facts", "return 3", "return 4")  # same module, unreached
    assert not changed(package, f, "helpers", "return 2", "return 5")  # imported module, unreached
    assert changed(package, f, "helpers", "return 1", "return 6")  # a helper in another module


@pytest.mark.parametrize(
    "facts",
    [
        pytest.param(
            """
            def f():
                from PKG.helpers import helper
                return helper()
            """,
            id="a local import",
        ),
        pytest.param(
            """
            def f():
                from . import helpers
                return helpers.helper()
            """,
            id="a relative local import of a module",
        ),
        pytest.param(
            """
            from PKG import helpers

            def f():
                return helpers.helper()
            """,
            id="from pkg import mod",
        ),
        pytest.param(
            """
            import PKG.helpers as h

            def f():
                return h.helper()
            """,
            id="import pkg.mod as m",
        ),
        pytest.param(
            """
            import PKG.helpers

            def f():
                return PKG.helpers.helper()
            """,
            id="import pkg.mod",
        ),
    ],
)
def test_imports_are_followed_however_they_are_written(package, facts):
    package.write(
        helpers="""
            def helper():
                return 1

            def unused():
                return 2
        """,
        facts=facts,
    )
    f = package.function("facts", "f")
    assert f"{package.name}.helpers.helper" in _slice_names(f)
    assert not changed(package, f, "helpers", "return 2", "return 5")
    assert changed(package, f, "helpers", "return 1", "return 6")


def test_a_module_used_bare_counts_with_all_its_names(package):
    package.write(
        config="""
            A = 1
            B = 2
        """,
        facts="""
            from . import config

            def recipe():
                return {name: getattr(config, name) for name in ("A", "B")}
        """,
    )
    recipe = package.function("facts", "recipe")
    assert _slice_names(recipe) >= {f"{package.name}.config.A", f"{package.name}.config.B"}
    assert changed(package, recipe, "config", "B = 2", "B = 3")


def test_a_class_annotated_or_called_counts_by_its_code(package):
    package.write(
        config="""
            from dataclasses import dataclass

            @dataclass(frozen=True)
            class Workshop:
                steps: int = 4000
        """,
        model="""
            class Net:
                width: int = 8
        """,
        facts="""
            from __future__ import annotations

            from typing import TYPE_CHECKING

            from .config import Workshop

            if TYPE_CHECKING:
                from .model import Net

            def annotated(net: Net) -> int:
                return 1

            def called() -> int:
                return Workshop().steps
        """,
    )
    annotated, called = package.function("facts", "annotated"), package.function("facts", "called")
    assert not changed(package, annotated, "config", "steps: int = 4000", "steps: int = 60")
    assert changed(package, called, "config", "steps: int = 60", "steps: int = 70")
    assert changed(package, annotated, "model", "width: int = 8", "width: int = 16")


def test_a_method_counts_with_its_whole_class(package):
    package.write(
        facts="""
            class Net:
                def forward(self, x):
                    return self.scale(x)

                def scale(self, x):
                    return 2 * x
        """,
    )
    forward = package.function("facts", "Net.forward")
    assert _slice_names(forward) == {f"{package.name}.facts.Net"}
    assert changed(package, forward, "facts", "return 2 * x", "return 3 * x")  # via self


def test_recursion_terminates_and_a_cycle_has_one_key(package):
    package.write(
        a="""
            def ping(n):
                from .b import pong
                return pong(n - 1) if n else 0

            def even(n):
                return n == 0 or odd(n - 1)

            def odd(n):
                return n != 0 and even(n - 1)
        """,
        b="""
            def pong(n):
                from .a import ping
                return ping(n - 1) if n else 1
        """,
    )
    ping, pong = package.function("a", "ping"), package.function("b", "pong")
    even, odd = package.function("a", "even"), package.function("a", "odd")
    assert _slice_names(ping) == {f"{package.name}.a.ping", f"{package.name}.b.pong"}
    assert code_key(ping) == code_key(pong)
    assert code_key(even) == code_key(odd) != code_key(ping)


def test_a_module_outside_the_roots_counts_for_nothing(package, tmp_path, monkeypatch):
    vendor = tmp_path / "vendor"
    vendor.mkdir()
    (vendor / f"{package.name}_vendored.py").write_text("def helper():\n    return 1\n")
    monkeypatch.syspath_prepend(str(vendor))
    package.write(
        facts="""
            from PKG_vendored import helper

            def f():
                return helper()
        """,
    )
    f = package.function("facts", "f")
    before = code_key(f)
    (vendor / f"{package.name}_vendored.py").write_text("def helper():\n    return 2\n")
    assert code_key(f) == before  # by default: bnvg and the function's own folder
    assert code_key(f, roots=[package.folder, vendor]) != before


def test_the_key_is_the_same_in_another_process(package, tmp_path):
    package.write(
        config="A = 1\n",
        facts="""
            from .config import A

            def f():
                return A
        """,
    )
    program = (
        "import importlib, sys; from claimlog.slicing import code_key; "
        f"print(code_key(importlib.import_module('{package.name}.facts').f))"
    )
    paths = os.pathsep.join([str(tmp_path), *sys.path])
    env = {**os.environ, "PYTHONPATH": paths, "PYTHONHASHSEED": "12345"}
    other = subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, check=True
    )
    assert other.stdout.strip() == code_key(package.function("facts", "f"))


def test_a_lambda_a_nested_function_or_a_builtin_is_refused(package):
    package.write(
        facts="""
            square = lambda x: x * x

            def outer():
                def inner():
                    return 1
                return inner
        """,
    )
    with pytest.raises(ValueError, match=r"module-level function.*lambda or is defined inside"):
        code_key(package.function("facts", "square"))
    with pytest.raises(ValueError, match=r"module-level function.*outer\.<locals>\.inner"):
        code_key(package.function("facts", "outer")())
    with pytest.raises(ValueError, match="Python function with source"):
        code_key(len)


def test_the_real_s2_slope_curve_does_not_read_check_logit():
    from bnvg.experiment import facts, sigmoid_facts

    key = code_key(facts.sigmoid_facts)
    assert isinstance(key, str) and len(key) == 64
    assert "bnvg.experiment.config.CHECK_LOGIT" in _slice_names(sigmoid_facts.bce_logit_gradient)
    assert "bnvg.experiment.config.CHECK_LOGIT" not in _slice_names(sigmoid_facts.slope_curve)
    assert "bnvg.experiment.sigmoid_facts.slope_curve" in _slice_names(facts.sigmoid_facts)


def test_code_reads_the_same_on_every_python_from_3_11():
    """A key digests code as `_dumped` reads it: empty fields left out. `ast.dump` itself
    differs by Python (3.12 adds `type_params=[]` to every function, 3.13 leaves empty fields
    out), and gave every claim another key on each; this reading is the same on 3.11, 3.12
    and 3.13 (checked over every statement of the project when it was written)."""
    from claimlog.slicing import _dumped

    function = ast.parse("def f(x):\n    return x + 1\n").body[0]
    assert _dumped(function) == (
        "FunctionDef(name='f', args=arguments(args=[arg(arg='x')]), "
        "body=[Return(value=BinOp(left=Name(id='x', ctx=Load()), op=Add(), "
        "right=Constant(value=1)))])"
    )
