"""`claimlog init DIR`: what it writes, and what it refuses.

The scaffold (claimlog/scaffold/) is ordinary PyTorch, 32 wide: torch imported at the top,
`nn.Linear`, SGD with momentum. How the workshop it writes then lives (it passes at once, an
edit of its recipe fails its claim, one `--snapshot-update` records the edit) is the
newcomer's session in tests/test_distributions.py, from the built wheel in a fresh venv.
"""

import subprocess

import pytest

from claimlog.declaration import init


def test_a_folder_named_with_a_dash_makes_a_package_named_with_an_underscore(tmp_path, monkeypatch):
    """The scaffold is written under the package name; the recording it then runs (a pytest
    session: the newcomer's, in tests/test_distributions.py, lives the whole of it) is
    stood in for here."""
    recorded = []

    def record(command, cwd, **kwargs):
        recorded.append(cwd)
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(subprocess, "run", record)
    said = init(tmp_path / "my-demo")
    assert "wrote the workshop 'my_demo' into" in said and recorded == [tmp_path / "my-demo"]
    written = {str(p.relative_to(tmp_path / "my-demo")) for p in (tmp_path / "my-demo").rglob("*")}
    assert {"my_demo/experiment.py", "my_demo/workshop.py", ".gitignore"} <= written
    assert not any("__WORKSHOP__" in name for name in written)
    pyproject = (tmp_path / "my-demo" / "pyproject.toml").read_text()
    assert 'claimlog_declaration = "my_demo.workshop:DECLARATION"' in pyproject


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
