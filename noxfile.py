"""The Python matrix, and the torch releases as evidence.

    nox -s tests-3.12          # or tests-3.11, tests-3.13; `nox -l` lists them
    nox -s torch-2.15.0        # or torch-2.12.1, torch-2.14.1: that release's fragment
    nox -s arm64               # Linux arm64 (Neoverse N1 and V1), under QEMU's emulation
    nox -s nbval               # the workshop's notebooks, their stored outputs checked by nbval
    nox -s docs                # every command and output the pages show, run on a fresh clone
    nox -s bench               # docs/speed.md's tables, measured again (minutes)
    nox -s generated-workshops # the platform promises over 300 generated workshops (an hour)

Each session makes a fresh virtual environment with that Python, installs the project with
its pinned dependencies (as the README does: the engine, the second workshop and bnvg), then
runs `pytest claims/` and `pytest claims/ tests/`, then compares what they wrote with the
committed log and figures (`python -m claimlog.runner`), and fails if anything differs. On
Python 3.11 pip takes the CPU
build of torch 2.13.0 from this machine's disk; on 3.12 and 3.13 it takes torch 2.13.0 from
the package index, a CUDA build of several GB, which computes on the CPU here, and whose name
the log's versions line carries: the one difference the comparison is told to expect
(`--other-torch-build`). docs/platforms.md ("Pythons") says what each gives. `.ci/run` keeps
to the reference environment (3.11) so CI stays fast.

A `torch-<release>` session installs the project beside that torch (pinned by
requirements/torch-<release>.txt; every other dependency as pyproject.toml pins it), runs the
workshop's claims under the reference kernels and writes the release's fragment into
snapshots/evidence/fragments/, then merges the evidence (`python -m bnvg.sweep --release`).
Its virtual environment is kept: a release already recorded installs and computes nothing,
and the merge rewrites the same bytes.

The `arm64` session builds an aarch64 Python with the pinned dependencies under
`.nox/arm64/`, from Debian's and PyPI's packages, and computes the workshop's fragment on each
emulated CPU model (`emulation/arm64.py` says how); run again, it builds and computes nothing.

nox finds `python3.12` and `python3.13` on PATH; with pyenv, whose shims only answer for the
selected versions, this file adds the bin folder of every installed pyenv Python first.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import nox

PYTHONS = ["3.11", "3.12", "3.13"]
RELEASES = ["2.12.1", "2.14.1", "2.15.0"]  # beside the pinned 2.13.0, the reference

nox.options.sessions = ["tests-3.11"]  # the reference; the others download torch's CUDA build


def _pyenv_pythons_on_path() -> None:
    pyenv = shutil.which("pyenv")
    if pyenv is None:
        return
    root = Path(subprocess.run([pyenv, "root"], capture_output=True, text=True).stdout.strip())
    bins = sorted(str(p / "bin") for p in (root / "versions").glob("3.1[1-3]*"))
    os.environ["PATH"] = os.pathsep.join([*bins, os.environ.get("PATH", "")])


_pyenv_pythons_on_path()


# The project as the README installs it: the engine, the second workshop, bnvg with its tools.
PROJECT = ("-e", "./engine", "-e", "./workshops/dropout", "-e", ".[dev]")


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """The README's two commands, on one Python, writing into the session's own folder, then
    how the log and the figures compare with the committed ones."""
    session.install(*PROJECT)
    # Not session.create_tmp(): it points TMPDIR inside the project, where pytest would take
    # the project's own pyproject.toml for the scratch projects the tests make.
    out = Path(session.virtualenv.location) / "out"
    outputs = [f"--results-log={out / 'results.log'}", f"--diagrams={out / 'diagrams'}"]
    session.run("pytest", "claims/", *outputs, f"--record={out / 'record.json'}", *session.posargs)
    session.run("pytest", "claims/", "tests/", *outputs, *session.posargs)
    # The comparison exits 1 on any difference, which fails the session. The one difference
    # a session expects is said here, explicitly: under another build of the reference's
    # torch release (the CUDA wheel pip takes on 3.12 and 3.13), the log's versions line
    # names that build, and nothing else may differ.
    torch, reference = _installed_torch(session), _reference_torch()
    expected = [] if torch == reference else ["--other-torch-build"]
    if expected:
        session.log(f"torch {torch}, not the reference's {reference}: {expected[0]}")
    session.run("python", "-m", "claimlog.runner", str(out), *expected)


# nbval, the pytest plugin notebook authors check stored outputs with, and the kernel it runs.
NBVAL = ["nbval==0.11.0", "ipykernel==7.4.0", "pytest==9.2.0"]


@nox.session(python="3.11", default=False)
def nbval(session: nox.Session) -> None:
    """The workshop's notebooks as nbval sees them: each executed afresh, its stored outputs
    compared with what it shows now (`nox -s nbval -- FOLDER` for another folder).

    nbval lives here, never in the environment the claims run in: it is a pytest plugin, so
    once installed every pytest start would import jupyter_client and zmq. The notebooks read
    the record (captures/, diagrams/), so this environment needs no torch; the project's own
    conftest.py and ini options (xdist's `-n auto`) belong to the claims, not to it."""
    session.install(*NBVAL)
    folders = session.posargs or ["workshop"]
    session.run(
        "pytest",
        "--nbval",
        "--nbval-current-env",
        "--noconftest",
        "-p",
        "no:cacheprovider",
        "-o",
        "addopts=",
        *folders,
        # The claims' own options (CI's --recompute) mean nothing to this pytest.
        env={"PYTEST_ADDOPTS": ""},
    )


def _installed_torch(session: nox.Session) -> str:
    """The version of the torch installed in the session's environment ("2.13.0+cu130"),
    read from its metadata: importing torch would cost seconds and may print warnings."""
    said = session.run(
        "python",
        "-c",
        "from importlib.metadata import version; print(version('torch'))",
        silent=True,
    )
    return str(said).strip()


def _reference_torch() -> str:
    """The torch of the reference platform, which wrote the committed log and figures."""
    return str(json.loads(Path("snapshots/environment.json").read_text())["torch"])


def _dependencies_but_torch() -> list[str]:
    """The pinned dependencies of the engine (with its extras) and of bnvg, torch left out (a
    release session brings its own), and claimlog itself (it is this checkout's)."""
    engine = tomllib.loads(Path("engine/pyproject.toml").read_text())["project"]
    bnvg = tomllib.loads(Path("pyproject.toml").read_text())["project"]
    pins = [*engine["dependencies"], *engine["optional-dependencies"]["text"]]
    pins += [*engine["optional-dependencies"]["sweep"], *bnvg["dependencies"]]
    return [d for d in pins if re.split(r"[=<>~! \[]", d)[0] not in ("torch", "claimlog")]


def _release_session(release: str) -> None:
    @nox.session(name=f"torch-{release}", python="3.11", reuse_venv=True, default=False)
    def release_session(session: nox.Session) -> None:
        session.install("-r", f"requirements/torch-{release}.txt", *_dependencies_but_torch())
        session.install("--no-deps", *PROJECT)
        session.run("python", "-m", "claimlog.sweep", "--release", *session.posargs)

    release_session.__doc__ = (
        f"The workshop's claims on torch {release} under the reference kernels: its fragment "
        "of the evidence, then the merge."
    )


for _release in RELEASES:
    _release_session(_release)


@nox.session(python=False, default=False)
def arm64(session: nox.Session) -> None:
    """Linux arm64's fragments (Neoverse N1, V1), computed under QEMU; then the merge.

    QEMU's user-mode emulation runs an aarch64 Python with the pinned dependencies, built
    once under .nox/arm64/ from Debian's and PyPI's packages (emulation/arm64.py)."""
    # The Python running nox brings pip, which fetches and unpacks the aarch64 wheels.
    session.run(sys.executable, "emulation/arm64.py", *session.posargs, external=True)


@nox.session(python="3.11", default=False)
def docs(session: nox.Session) -> None:
    """The pages' commands, changes and outputs, played as the author's session on a fresh
    clone of this checkout's last commit, each output compared with what its page shows
    (tests/transcripts.py; CI runs it). The clone installs its own environment, as the
    README's first command does: this one needs nothing but Python."""
    session.run("python", "tests/transcripts.py", *session.posargs)


@nox.session(name="generated-workshops", python="3.11", default=False)
def generated_workshops(session: nox.Session) -> None:
    """The engine's platform promises over 300 workshops Hypothesis generates, each recorded
    on one of MKL's paths and run on both and on another ATen capability
    (tests/test_generated_workshops.py; CI runs a few). A failure is kept in pytest's cache
    and tried first the next time; Hypothesis prints the smallest workshop that fails."""
    session.install(*PROJECT)
    session.run(
        "pytest",
        "tests/test_generated_workshops.py",
        "-n",
        "0",  # one process: each example runs its three machines in turn
        *("-p", "hypothesispytest"),  # pyproject.toml leaves Hypothesis' plugin out
        "--hypothesis-profile=many",
        "--hypothesis-show-statistics",
        *session.posargs,
    )


BENCH = "python bench/run.py --write-docs"  # what docs/speed.md shows, run as it shows it


@nox.session(python="3.11", default=False)
def bench(session: nox.Session) -> None:
    """docs/speed.md's tables measured again, and written into it: the claims against the
    workshop script, back to back (bench/run.py; minutes a round, ../shared beside the
    project). Not in CI: a timing on a shared machine is a measurement, never a test."""
    session.install(*PROJECT)
    session.run(*BENCH.split())
