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


def run(folder, *args):
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER")
    }
    return subprocess.run(
        [sys.executable, *args], cwd=folder, env=env, capture_output=True, text=True
    )


def git(folder, *args):
    return subprocess.run(
        ["git", "-C", folder, *args], check=True, capture_output=True, text=True
    ).stdout


@pytest.mark.slow
def test_a_new_workshop_passes_at_once_and_records_an_edit_of_its_recipe(tmp_path):
    done = run(tmp_path, "-m", "claimlog", "init", "my-demo")
    assert done.returncode == 0, done.stderr
    assert "wrote the workshop 'my_demo' into my-demo" in done.stdout
    folder = tmp_path / "my-demo"
    git(folder, "init", "-q")
    git(folder, "add", ".")
    git(folder, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")

    said = run(folder, "-m", "pytest")
    assert said.returncode == 0, said.stdout[-3000:]
    header = next(line for line in said.stdout.splitlines() if line.startswith("my_demo: "))
    assert (
        header.startswith("my_demo: the reference platform (")
        and "its kernels giving the bits" in header
    )
    assert "4 passed" in said.stdout  # two claims, and the text's two citations
    assert (
        git(folder, "status", "--porcelain") == ""
    )  # obtained/ and pytest's cache ignore themselves

    experiment = folder / "my_demo" / "experiment.py"
    experiment.write_text(experiment.read_text().replace("steps: int = 300", "steps: int = 200"))
    said = run(folder, "-m", "pytest")
    assert said.returncode == 1 and "test_the_net_learns_the_circle FAILED" not in said.stdout
    assert "FAILED claims/test_my_demo.py::test_the_net_learns_the_circle" in said.stdout
    assert git(folder, "status", "--porcelain").splitlines() == [" M my_demo/experiment.py"]

    said = run(folder, "-m", "pytest", "--snapshot-update")
    assert said.returncode == 0, said.stdout[-3000:]
    assert "text/my_demo.md:3  300 -> 200 (log line 3, net, steps)" in said.stdout
    changed = {line[3:] for line in git(folder, "status", "--porcelain").splitlines()}
    assert "my_demo/experiment.py" in changed and "captures/results.log" in changed
    assert all(
        p == "my_demo/experiment.py" or p.startswith(("captures/", "snapshots/", "text/"))
        for p in changed
    )
    assert run(folder, "-m", "pytest").returncode == 0


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
