"""The Python matrix: install bnvg as the README does, then run its two commands, per Python.

    nox -s tests-3.12          # or tests-3.11, tests-3.13; `nox -l` lists them

Each session makes a fresh virtual environment with that Python, installs the project with
its pinned dependencies (`pip install -e '.[dev]'`), then runs `pytest claims/` and
`pytest claims/ tests/`. On Python 3.11 pip takes the CPU build of torch 2.13.0 from this
machine's disk; on 3.12 and 3.13 it takes torch 2.13.0 from the package index, a CUDA build
of several GB, which computes on the CPU here. The README's "Pythons" section says what each
gave. `.ci/run` keeps to the reference environment (3.11) so CI stays fast.

nox finds `python3.12` and `python3.13` on PATH; with pyenv, whose shims only answer for the
selected versions, this file adds the bin folder of every installed pyenv Python first.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import nox

PYTHONS = ["3.11", "3.12", "3.13"]

nox.options.sessions = ["tests-3.11"]  # the reference; the others download torch's CUDA build


def _pyenv_pythons_on_path() -> None:
    pyenv = shutil.which("pyenv")
    if pyenv is None:
        return
    root = Path(subprocess.run([pyenv, "root"], capture_output=True, text=True).stdout.strip())
    bins = sorted(str(p / "bin") for p in (root / "versions").glob("3.1[1-3]*"))
    os.environ["PATH"] = os.pathsep.join([*bins, os.environ.get("PATH", "")])


_pyenv_pythons_on_path()


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """The README's two commands, on one Python, writing into the session's own folder, then
    how the log and the figures compare with the committed ones."""
    session.install("-e", ".[dev]")
    # Not session.create_tmp(): it points TMPDIR inside the project, where pytest would take
    # the project's own pyproject.toml for the scratch projects the tests make.
    out = Path(session.virtualenv.location) / "out"
    outputs = [f"--results-log={out / 'results.log'}", f"--diagrams={out / 'diagrams'}"]
    session.run("pytest", "claims/", *outputs, f"--record={out / 'record.json'}", *session.posargs)
    session.run("pytest", "claims/", "tests/", *outputs, *session.posargs)
    session.run("python", "-m", "bnvg.evidence.outputs", str(out))
