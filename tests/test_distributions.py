"""claimlog is a distribution of its own, and a workshop is another: each installs alone.

As an author outside this repository would: claimlog's wheel built with `python -m build`,
installed in a fresh virtual environment beside torch (the workshop's own), then
`claimlog init demo` and `pytest` in it; and the dropout workshop installed from its folder
beside the same wheel, its claims and text passing in a copy of that folder.
"""

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from test_init import an_authors_session

ROOT = Path(__file__).resolve().parent.parent


def clean_env():
    """The environment of a newcomer's shell: no project on the path, no pytest options."""
    drop = ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTHONPATH", "VIRTUAL_ENV")
    return {k: v for k, v in os.environ.items() if k not in drop}


def run(*args, cwd):
    done = subprocess.run(args, cwd=cwd, env=clean_env(), capture_output=True, text=True)
    assert done.returncode == 0, f"{args}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """claimlog's wheel, built from engine/ as `python -m build` builds it (from a copy of
    engine/ and claimlog/: a build leaves its working folders beside the sources)."""
    out, source = tmp_path_factory.mktemp("dist"), tmp_path_factory.mktemp("source")
    leftovers = shutil.ignore_patterns("__pycache__", "build", "*.egg-info")
    for folder in ("engine", "claimlog"):
        shutil.copytree(ROOT / folder, source / folder, ignore=leftovers)
    build = [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", out]
    run(*build, source / "engine", cwd=out)
    [built] = out.glob("claimlog-*.whl")
    return built


def test_the_wheel_holds_the_engine_its_types_and_its_scaffold_and_no_workshop(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "claimlog/plugin/__init__.py" in names and "claimlog/py.typed" in names
    assert "claimlog/scaffold/__WORKSHOP__/experiment.py.tmpl" in names
    assert not [n for n in names if n.startswith(("bnvg/", "dropout/", "tests/", "claims/"))]
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    said = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "Requires-Dist: torch" not in said  # a workshop brings its own
    assert "Provides-Extra: text" in said and "Provides-Extra: sweep" in said


@pytest.mark.slow
def test_a_newcomer_installs_the_wheel_writes_a_workshop_and_runs_it_and_dropout(wheel, tmp_path):
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    # --no-compile: what is installed is the same; compiling torch's modules first would take
    # three quarters of the install.
    pip = [venv / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    pip.append("--no-compile")
    run(*pip, wheel, "torch==2.13.0", cwd=tmp_path)

    # `claimlog init demo`, then what its author does with it (tests/test_init.py).
    init = [venv / "bin" / "claimlog", "init", "demo"]
    an_authors_session(tmp_path, "demo", python=venv / "bin" / "python", init=init)

    # Installed from a copy of its folder (pip builds in it), run in another without its
    # package: the claims import the installed one.
    leftovers = shutil.ignore_patterns("build", "*.egg-info", ".pytest_cache", "obtained")
    source = shutil.copytree(ROOT / "workshops" / "dropout", tmp_path / "src", ignore=leftovers)
    run(*pip, "--find-links", wheel.parent, source, cwd=tmp_path)
    copy = shutil.copytree(source, tmp_path / "dropout", ignore=shutil.ignore_patterns("dropout"))
    said = run(venv / "bin" / "pytest", cwd=copy)
    assert "14 passed" in said  # its five claims and the nine citations of its text
    assert any(line.startswith("dropout: ") for line in said.splitlines())
