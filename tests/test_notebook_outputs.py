"""What a notebook's reader sees follows the record: its stored outputs are checked as nbval
checks them (executed afresh, compared cell by cell), and an update refreshes them.

The notebooks here print a line of the record's log (`../captures/results.log`) or display a
figure of `../diagrams/`, as the workshop's own notebook does."""

import base64
import json
import shutil
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from claimlog.text.outputs import CellDifference, Shown, differences, refreshed, shown

ROOT = Path(__file__).resolve().parent.parent
LINE_59 = "  factor 0.5: after 4 layers -> 6.25e-02, after 10 layers -> 9.77e-04\n"
OLD_59 = LINE_59.replace("6.25e-02", "7.25e-02")
PRINT_59 = (
    'from pathlib import Path\nprint(Path("../captures/results.log").read_text().splitlines()[58])'
)
SHOW_FIGURE = 'from IPython.display import Image\nImage("../diagrams/geometric_decay.png")'


def picture(name):
    """A figure of the committed diagrams/, as a notebook stores it (base64)."""
    return base64.b64encode((ROOT / "diagrams" / name).read_bytes()).decode()


def a_notebook(*cells):
    """A notebook as Jupyter writes it: a Markdown cell citing the log, then `cells`, each a
    (source, outputs) code cell."""
    nb = new_notebook(cells=[new_markdown_cell("A factor of 0.5 leaves 6.25e-02 (line 59).")])
    for n, (source, outputs) in enumerate(cells, start=1):
        nb.cells.append(new_code_cell(source, outputs=outputs, execution_count=n))
    for i, cell in enumerate(nb.cells, start=1):
        cell["id"] = f"cell-{i}"
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return nbformat.writes(nb) + "\n"


def printed(text):
    return [new_output("stream", name="stdout", text=text)]


def displayed(png, count):
    """What Jupyter stores of a displayed figure, the result of the cell run `count`th."""
    return [
        new_output(
            "execute_result",
            data={"image/png": png, "text/plain": "<IPython.core.display.Image object>"},
            execution_count=count,
        )
    ]


# -- what a cell shows ----------------------------------------------------------------------
def test_what_a_cell_shows_joins_a_streams_writes_and_reads_a_picture_as_its_bytes():
    outputs = [
        {"output_type": "stream", "name": "stdout", "text": ["a\n", "b"]},
        {"output_type": "stream", "name": "stdout", "text": "c\n"},
        {"output_type": "display_data", "data": {"image/png": "iVBO\nRw0K\n"}, "metadata": {}},
        {"output_type": "error", "ename": "KeyError", "evalue": "'x'", "traceback": ["..."]},
    ]
    assert shown(outputs) == [
        Shown("stdout", "a\nbc\n"),
        Shown("image/png", "iVBORw0K"),
        Shown("error", "KeyError: 'x'"),
    ]


def test_execution_counts_metadata_and_tracebacks_are_not_what_a_reader_is_told():
    one = [{"output_type": "execute_result", "execution_count": 1, "data": {"text/plain": "2"}}]
    two = [
        {
            "output_type": "execute_result",
            "execution_count": 7,
            "metadata": {"x": 1},
            "data": {"text/plain": "2"},
        }
    ]
    assert shown(one) == shown(two)


def test_a_difference_names_both_texts_and_the_numbers_that_moved():
    difference = CellDifference(3, (Shown("stdout", OLD_59),), (Shown("stdout", LINE_59),))
    said = difference.describe()
    assert repr(OLD_59) in said and repr(LINE_59) in said
    assert said.endswith(" (7.25e-02 -> 6.25e-02)")


def test_a_refresh_changes_only_the_outputs_that_differ(tmp_path):
    before = a_notebook((PRINT_59, printed(OLD_59)), ("print(1)", printed("1\n")))
    stored = nbformat.reads(before, as_version=4)
    fresh = nbformat.reads(before, as_version=4)
    fresh.cells[1].outputs = printed(LINE_59)
    fresh.cells[1].execution_count = 41  # a fresh run counts anew: never written back
    fresh.cells[2].outputs = printed("1\n")
    [difference] = differences(stored, fresh)
    assert difference.cell == 2
    after = refreshed(stored, fresh, [difference.cell])
    changed = [
        (a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=True) if a != b
    ]
    assert changed == [(f"      {json.dumps(OLD_59)}", f"      {json.dumps(LINE_59)}")]


# -- in a session ---------------------------------------------------------------------------
@pytest.fixture
def reader_project(s5_project):
    """The S5 scratch project with the record a notebook reads: the committed log and the
    S5 figure."""
    (s5_project.path / "captures").mkdir()
    shutil.copy(ROOT / "captures" / "results.log", s5_project.path / "captures")
    (s5_project.path / "diagrams").mkdir()
    shutil.copy(ROOT / "diagrams" / "geometric_decay.png", s5_project.path / "diagrams")
    (s5_project.path / "text").mkdir()
    return s5_project


def tree(project):
    """Every file of the project and its bytes, but pytest's and the session's own folders."""
    return {
        p.relative_to(project.path): p.read_bytes()
        for p in sorted(project.path.rglob("*"))
        if p.is_file() and not {".pytest_cache", "obtained", "__pycache__"} & set(p.parts)
    }


@pytest.mark.slow
def test_outputs_that_show_an_old_log_line_or_an_old_picture_fail_their_cells_and_the_update_refreshes_only_them(
    reader_project,
    run_with_text,
):
    path = reader_project.path / "text" / "module.ipynb"
    path.write_text(
        a_notebook(
            (PRINT_59, printed(OLD_59)),  # cell 2: the log line as it was
            ("print(2 + 2)", printed("4\n")),  # cell 3: still shows what it shows
            (SHOW_FIGURE, displayed(picture("bce_loss.png"), 3)),  # cell 4: another figure
        )
    )
    before = path.read_text()
    normal = run_with_text(reader_project)
    normal.assert_outcomes(passed=8, failed=2)  # the claims, the citation, cell 3
    normal.stdout.fnmatch_lines(
        [
            "text/module.ipynb, cell 2: the stored output shows stdout '  factor 0.5: after 4 "
            "layers -> 7.25e-02, after 10 layers -> 9.77e-04\\n'; executed now it shows stdout "
            "'  factor 0.5: after 4 layers -> 6.25e-02, after 10 layers -> 9.77e-04\\n' "
            "(7.25e-02 -> 6.25e-02)",
            "text/module.ipynb, cell 4: the stored output shows a picture (image/png, * base64 "
            "characters); executed now it shows a picture (image/png, * base64 characters)",
            "FAILED text/module.ipynb::cell 2, outputs - *",
            "FAILED text/module.ipynb::cell 4, outputs - *",
        ]
    )
    assert path.read_text() == before  # a normal run never writes the text

    update = run_with_text(reader_project, "--snapshot-update")
    assert update.ret == pytest.ExitCode.OK
    update.stdout.fnmatch_lines(
        [
            "refreshed the outputs of 2 cells that now show otherwise, in 1 notebook:",
            "  text/module.ipynb, cell 2  7.25e-02 -> 6.25e-02 (stdout)",
            "  text/module.ipynb, cell 4  a picture (image/png, * base64 characters) -> a picture "
            "(image/png, * base64 characters) (image/png)",
        ]
    )
    changed = [
        (a, b)
        for a, b in zip(before.splitlines(), path.read_text().splitlines(), strict=True)
        if a != b
    ]
    assert changed == [
        (f"      {json.dumps(OLD_59)}", f"      {json.dumps(LINE_59)}"),
        (
            f'      "image/png": "{picture("bce_loss.png")}",',
            f'      "image/png": "{picture("geometric_decay.png")}",',
        ),
    ]

    kept = tree(reader_project)
    again = run_with_text(reader_project, "--snapshot-update")
    assert "refreshed" not in again.stdout.str() and tree(reader_project) == kept
    run_with_text(reader_project).assert_outcomes(passed=10)


@pytest.mark.slow
def test_a_notebook_that_does_not_run_fails_its_cells_and_the_update_leaves_it_naming_why(
    reader_project,
    run_with_text,
):
    path = reader_project.path / "text" / "module.ipynb"
    path.write_text(a_notebook(("1 / 0", printed("never\n"))))
    before = path.read_text()
    normal = run_with_text(reader_project)
    normal.assert_outcomes(passed=7, failed=1)
    normal.stdout.fnmatch_lines(
        [
            "text/module.ipynb, cell 2: the notebook did not run to its end: a cell raised "
            "ZeroDivisionError: division by zero"
        ]
    )
    update = run_with_text(reader_project, "--snapshot-update")
    assert update.ret == pytest.ExitCode.TESTS_FAILED  # every item passed; the text did not
    update.stdout.fnmatch_lines(
        [
            "text/module.ipynb: not executed (a cell raised ZeroDivisionError: division by "
            "zero): its stored outputs were left as they were; make it run, then update again"
        ]
    )
    assert path.read_text() == before


@pytest.mark.slow
def test_an_update_killed_while_refreshing_leaves_every_notebook_as_it_was(
    tmp_path, monkeypatch, kill_on_the_second_rename
):
    """The refreshes join the update's transaction: every notebook is executed before the
    first is written, each is put in place by one rename, and a kill between two renames is
    undone by the next session's recovery."""
    from claimlog.places import Places
    from claimlog.text.outputs import refresh_notebooks
    from claimlog.transaction import Update

    places = Places(tmp_path / "project")
    places.root.mkdir()
    text = tmp_path / "text"
    text.mkdir()
    notebooks = [text / "a.ipynb", text / "b.ipynb"]
    for notebook in notebooks:
        notebook.write_text(a_notebook(("print('new')", printed("old\n"))))
    before = [n.read_text() for n in notebooks]
    update = Update(places)
    update.acquire()
    update.begin(notebooks)
    kill_on_the_second_rename()
    with pytest.raises(KeyboardInterrupt):
        refresh_notebooks(notebooks, tmp_path, write=True)
    monkeypatch.undo()
    update.release()
    assert notebooks[0].read_text() == before[0].replace('"old\\n"', '"new\\n"')
    assert notebooks[1].read_text() == before[1]
    assert sorted(p.name for p in text.iterdir()) == ["a.ipynb", "b.ipynb"]  # none half written
    said = Update(places).recover()
    assert said is not None and "1 files restored" in said
    assert [n.read_text() for n in notebooks] == before
