"""`claimlog init DIR`: a new workshop that passes at once, and lives as an author's would.

The scaffold (claimlog/scaffold/) is ordinary PyTorch, 32 wide: torch imported at the top,
`nn.Linear`, SGD with momentum. Written and recorded in one command, it passes `pytest` in its
folder; an edit of its recipe fails its claim; one `--snapshot-update` records the edit and
rewrites the text's quotes, and git sees nothing else move.
"""

import os
import subprocess
import sys

import pytest

from claimlog.declaration import init


def git(folder, *args):
    return subprocess.run(
        ["git", "-C", folder, *args], check=True, capture_output=True, text=True
    ).stdout


def run(folder, *args, python=sys.executable):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTHONPATH", "VIRTUAL_ENV")
    }
    return subprocess.run([python, *args], cwd=folder, env=env, capture_output=True, text=True)


def an_authors_session(where, name, python=sys.executable, init=None):
    """`claimlog init` (or the `init` command given), then as its author lives with it: the
    workshop passes at once on the reference platform, git sees nothing of what pytest wrote,
    an edit of the recipe fails its claim, and one `--snapshot-update` records the edit and
    rewrites the text's quotes, git seeing nothing else move."""
    package = name.replace("-", "_")
    done = subprocess.run(
        init or [python, "-m", "claimlog", "init", name], cwd=where, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert f"wrote the workshop '{package}' into {name}" in done.stdout
    folder = where / name
    git(folder, "init", "-q")
    git(folder, "add", ".")
    git(folder, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    said = run(folder, "-m", "pytest", python=python)
    assert said.returncode == 0, said.stdout[-3000:]
    header = next(line for line in said.stdout.splitlines() if line.startswith(f"{package}: "))
    assert header.startswith(f"{package}: the reference platform (")
    assert "its kernels giving the bits" in header
    assert "4 passed" in said.stdout  # two claims, and the text's two citations
    # obtained/ and pytest's cache ignore themselves.
    assert git(folder, "status", "--porcelain") == ""
    experiment = folder / package / "experiment.py"
    experiment.write_text(experiment.read_text().replace("steps: int = 300", "steps: int = 200"))
    said = run(folder, "-m", "pytest", python=python)
    assert said.returncode == 1 and "test_the_net_learns_the_circle FAILED" not in said.stdout
    assert f"FAILED claims/test_{package}.py::test_the_net_learns_the_circle" in said.stdout
    assert git(folder, "status", "--porcelain").splitlines() == [f" M {package}/experiment.py"]
    said = run(folder, "-m", "pytest", "--snapshot-update", python=python)
    assert said.returncode == 0, said.stdout[-3000:]
    assert f"text/{package}.md:3  300 -> 200 (log line 3, net, steps)" in said.stdout
    changed = {line[3:] for line in git(folder, "status", "--porcelain").splitlines()}
    assert f"{package}/experiment.py" in changed and "captures/results.log" in changed
    assert all(
        p == f"{package}/experiment.py" or p.startswith(("captures/", "snapshots/", "text/"))
        for p in changed
    )
    assert run(folder, "-m", "pytest", python=python).returncode == 0


@pytest.mark.slow
def test_a_new_workshop_passes_at_once_and_records_an_edit_of_its_recipe(tmp_path):
    an_authors_session(tmp_path, "my-demo")


@pytest.mark.parametrize(
    ("name", "why"),
    [("2nd", "makes no Python package name"), ("class", "makes no Python package name")],
)
def test_a_folder_whose_name_makes_no_package_is_refused_naming_the_rule(tmp_path, name, why):
    with pytest.raises(ValueError, match=why):
        init(tmp_path / name)
    assert not (tmp_path / name).exists()


def test_a_folder_with_files_is_refused_and_left_alone(tmp_path):
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "notes.md").write_text("mine")
    with pytest.raises(ValueError, match="exists and is not an empty folder"):
        init(tmp_path / "demo")
    assert [p.name for p in (tmp_path / "demo").iterdir()] == ["notes.md"]
