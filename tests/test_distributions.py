"""claimlog is a distribution of its own, and a workshop is another: each installs alone.

As an author outside this repository would: claimlog's wheel built with `python -m build`,
then the commands docs/engine.md gives a newcomer, run as the page writes them (engine/
README.md gives the same), in a fresh virtual environment: the wheel installed beside torch
(the workshop's own), `claimlog init my-workshop` and `pytest` in it; and the dropout
workshop installed from its folder beside the same wheel, its claims and text passing in a
copy of that folder.
"""

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from transcripts import blocks

ROOT = Path(__file__).resolve().parent.parent
ENGINE_PAGE = ROOT / "docs" / "engine.md"


def newcomers_commands() -> str:
    """The commands docs/engine.md gives a newcomer, which engine/README.md (the wheel's own
    page) gives too: the block the page marks as run here."""
    shown, _ = _blocks_run_here()
    readme = (ROOT / "engine" / "README.md").read_text()
    assert f"```sh\n{shown}\n```" in readme, "engine/README.md gives other commands"
    return shown


def _blocks_run_here() -> list[str]:
    """The two blocks of docs/engine.md this file runs: a newcomer's first commands, then
    the sweep of the workshop they wrote."""
    mark = ("run by", "tests/test_distributions.py")
    return [b.text for b in blocks(ENGINE_PAGE) if b.mark == mark]


def sweep_commands() -> str:
    """The commands docs/engine.md gives for the sweep of a workshop `claimlog init` wrote."""
    _, shown = _blocks_run_here()
    return shown


def clean_env():
    """The environment of a newcomer's shell: no project on the path, no pytest options, and
    Python keeping what it compiles (a sandbox may say otherwise: then every session in the
    fresh venv compiled torch's modules again as it imported them, 8 s instead of 2)."""
    drop = ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTHONPATH", "VIRTUAL_ENV")
    drop += ("PYTHONDONTWRITEBYTECODE",)
    return {k: v for k, v in os.environ.items() if k not in drop}


def run(*args, cwd, passes=True):
    done = subprocess.run(args, cwd=cwd, env=clean_env(), capture_output=True, text=True)
    said = f"{args}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert (done.returncode == 0) == passes, said
    return done.stdout


def git(folder, *args):
    return run("git", "-C", folder, *args, cwd=folder)


def an_authors_session(folder, venv):
    """A workshop `claimlog init` wrote into `folder`, as its author lives with it: the
    workshop passes at once on the reference platform, git sees nothing of what pytest wrote,
    an edit of the recipe fails its claim, and one `--snapshot-update` records the edit and
    rewrites the text's quotes, git seeing nothing else move."""
    package = folder.name.replace("-", "_")
    git(folder, "init", "-q")
    git(folder, "add", ".")
    git(folder, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    pytest_ = [venv / "bin" / "python", "-m", "pytest"]
    said = run(*pytest_, cwd=folder)
    header = next(line for line in said.splitlines() if line.startswith(f"{package}: "))
    assert header.startswith(f"{package}: the reference platform (")
    assert "its kernels giving the bits" in header
    assert "4 passed" in said  # two claims, and the text's two citations
    # What `claimlog init` computed to record the workshop is reused, not computed again.
    assert "reused 1 results computed earlier by the same code on this platform" in said
    # obtained/ and pytest's cache ignore themselves.
    assert git(folder, "status", "--porcelain") == ""
    experiment = folder / package / "experiment.py"
    experiment.write_text(experiment.read_text().replace("steps: int = 300", "steps: int = 200"))
    said = run(*pytest_, cwd=folder, passes=False)
    assert "test_the_net_learns_the_circle FAILED" not in said
    assert f"FAILED claims/test_{package}.py::test_the_net_learns_the_circle" in said
    assert git(folder, "status", "--porcelain").splitlines() == [f" M {package}/experiment.py"]
    said = run(*pytest_, "--snapshot-update", cwd=folder)
    assert f"text/{package}.md:3  300 -> 200 (log line 3, net, steps)" in said
    changed = {line[3:] for line in git(folder, "status", "--porcelain").splitlines()}
    assert f"{package}/experiment.py" in changed and "captures/results.log" in changed
    assert all(
        p == f"{package}/experiment.py" or p.startswith(("captures/", "snapshots/", "text/"))
        for p in changed
    )
    run(*pytest_, cwd=folder)


def its_evidence(newcomer, venv, env):
    """The sweep of the workshop `claimlog init` wrote, as the page gives it, with no install
    of the workshop: it writes the tables and nothing else git sees; a merge with nothing to
    merge says so in a sentence; and an editable install, for those who make one, leaves
    nothing git sees either."""
    folder = newcomer / "my-workshop"
    git(folder, "add", ".")
    git(folder, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "update")
    python = venv / "bin" / "python"
    done = subprocess.run(
        ["bash", "-e", "-c", sweep_commands()],
        cwd=newcomer,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "FAILED" not in done.stdout
    assert "wrote snapshots/evidence/fragility.json and snapshots/evidence/robustness.json" in (
        done.stdout
    )
    assert git(folder, "status", "--porcelain").splitlines() == ["?? snapshots/evidence/"]
    fragments = folder / "snapshots" / "evidence" / "fragments"
    shutil.rmtree(fragments)
    said = run(python, "-m", "claimlog.sweep", "--merge-only", cwd=folder, passes=False)
    assert "the tables were not written: no fresh fragment of the workshop itself" in said
    shutil.rmtree(folder / "snapshots" / "evidence")
    assert git(folder, "status", "--porcelain") == ""
    run(python, "-m", "pip", "install", "-q", "--no-deps", "-e", ".", cwd=folder)
    assert git(folder, "status", "--porcelain") == ""


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
    # three quarters of the install (the first session compiles only what it imports).
    pip = [venv / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    pip.append("--no-compile")  # see below
    # The page's commands, in the folder that holds the wheel, the venv's commands first on
    # the PATH as an activated venv has them. --no-compile (as pip reads it from the
    # environment): what is installed is the same; compiling torch's modules first would take
    # three quarters of the install (the first session compiles only what it imports).
    newcomer = tmp_path / "newcomer"
    newcomer.mkdir()
    shutil.copy(wheel, newcomer)
    path = os.pathsep.join([str(venv / "bin"), os.environ["PATH"]])
    env = {**clean_env(), "PATH": path, "PIP_NO_COMPILE": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    done = subprocess.run(
        ["bash", "-e", "-c", newcomers_commands()],
        cwd=newcomer,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "wrote the workshop 'my_workshop' into my-workshop" in done.stdout
    assert "passed" in done.stdout.splitlines()[-1]

    # Then what its author does with it.
    an_authors_session(newcomer / "my-workshop", venv)
    its_evidence(newcomer, venv, env)

    # Installed from a copy of its folder (pip builds in it), run in another without its
    # package: the claims import the installed one.
    leftovers = shutil.ignore_patterns("build", "*.egg-info", ".pytest_cache", "obtained")
    source = shutil.copytree(ROOT / "workshops" / "dropout", tmp_path / "src", ignore=leftovers)
    run(*pip, "--find-links", wheel.parent, source, cwd=tmp_path)
    copy = shutil.copytree(source, tmp_path / "dropout", ignore=shutil.ignore_patterns("dropout"))
    said = run(venv / "bin" / "pytest", cwd=copy)
    assert "14 passed" in said  # its five claims and the nine citations of its text
    assert any(line.startswith("dropout: ") for line in said.splitlines())
