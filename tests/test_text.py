"""The text follows the numbers: the workshop's text in Markdown (MyST), Quarto and notebooks,
its numbers that cite no line, and an update that rewrites the quotes that moved."""

import json
import re
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from claimlog.evidence.fragility import EMPTY
from claimlog.evidence.verdicts import Moved
from claimlog.log.lines import CitedLine
from claimlog.log.readings import LOSS, PERCENT, Quantity, Reading
from claimlog.places import Places
from claimlog.text.citations import find_citations, uncited_numbers
from claimlog.text.documents import Edit, StaleEdit, passages, rewritten
from claimlog.text.prose import NOTHING_CITED
from claimlog.text.rewrites import FAILED_CLAIM, plan, rewrite_documents, written_like
from claimlog.transaction import Update

ROOT = Path(__file__).resolve().parent.parent
S5 = "test_s5_geometric_decay"


# -- what of a document is prose ------------------------------------------------------------
def numbers(source):
    return [u.number for u in uncited_numbers("m.md", source)]


@pytest.mark.parametrize(
    "source",
    [
        "```\nIt takes 12 steps.\n```\n",
        "~~~python\nIt takes 12 steps.\n~~~\n",
        "```{python}\nsteps = 12\n```\n",  # Quarto's code chunk
        "```{code-cell} ipython3\nsteps = 12\n```\n",  # MyST's
        "---\ntitle: Module 12\ndate: 2026\n---\n",  # front matter
        "Call `train(12)` first.\n",
        "<!-- 12 of these -->\n",
        '<img src="x.png" width="12">\n',
        "See [the log](results-12.log) and ![a figure](fig12.png).\n",
        "## 3.2 Training\n",  # a heading's section number
        "1. Train the net.\n2. Look at the figure.\n",  # list markers
        "It was published on 2015-02-11, in 2015.\n",  # a date and a year
        "Layer 4 of S4 uses x1 and ln 2.\n",  # names
    ],
)
def test_what_is_not_a_quoted_number(source):
    assert numbers(source) == []


def test_prose_inside_a_myst_admonition_is_prose():
    assert numbers("```{note}\n:class: tip\nIt takes 12 steps.\n```\n") == ["12"]


def test_a_heading_and_each_list_item_stand_apart():
    """A heading ends before the text under it, as it renders: a citation below it does not
    cover a number of the heading."""
    source = "## Why 3015x\nThe ratio is 3015x (line 40).\n\n- it is 12\n- see line 40\n"
    assert numbers(source) == ["3015", "12"]
    [c, _] = find_citations("m.md", source)
    assert c.quoted == ("3015",) and c.md_line == 2


def test_every_uncited_number_is_listed_with_where_it_stands():
    source = (
        "# S4\n\nThe workshop takes 90 minutes.\nIt uses 4 layers (line 4). Then 0.25 and\n3015x.\n"
    )
    found = list(uncited_numbers("m.md", source))
    assert [(u.line, u.number) for u in found] == [(3, "90"), (4, "0.25"), (5, "3015")]
    assert found[0].describe() == "m.md:3  90 in 'The workshop takes 90 minutes.'"


@pytest.mark.parametrize(
    "source",
    [
        f"The workshop takes 90 minutes. {NOTHING_CITED}\n",
        f"The workshop takes 90 minutes {NOTHING_CITED}.\n",
        f"The workshop takes 90\nminutes.\n{NOTHING_CITED}\n",
    ],
)
def test_the_marker_says_a_sentence_cites_nothing_on_purpose(source):
    assert numbers(source) == []
    assert numbers(source + "It has 4 layers.\n") == ["4"]  # the next sentence still counts


def test_a_quote_keeps_where_it_stands_for_a_rewrite():
    source = "Intro.\n\nThe plain net ends at `x` 51.5% and\nthen 0.6926 (line 65).\n"
    [c] = find_citations("m.md", source)
    assert [(q.text, q.where) for q in c.quotes] == [("51.5", ((3, 26),)), ("0.6926", ((4, 5),))]
    lines = source.splitlines()
    assert lines[2][26:30] == "51.5" and lines[3][5:11] == "0.6926"


# -- the formats ----------------------------------------------------------------------------
def notebook(*markdown, output="  factor 0.5: after 4 layers -> 6.25e-02\n"):
    """A notebook as Jupyter writes it: Markdown cells, and a code cell with an output."""
    cells = [new_markdown_cell(text) for text in markdown]
    cells.insert(
        1,
        new_code_cell(
            # It runs: a normal run executes the notebook to check what its outputs show.
            f"print({output.rstrip(chr(10))!r})  # see line 7",
            outputs=[new_output("stream", name="stdout", text=output)],
            execution_count=3,
        ),
    )
    nb = new_notebook(cells=cells)
    for i, cell in enumerate(nb.cells, start=1):
        cell["id"] = f"cell-{i}"
    return nbformat.writes(nb) + "\n"


def test_a_notebook_is_read_by_markdown_cell_numbered_as_it_shows(tmp_path):
    path = tmp_path / "m.ipynb"
    path.write_text(notebook("# S5", "It leaves 6.25e-02 (line 59)."))
    found = passages(path)
    assert [(p.cell, p.source) for p in found] == [
        (1, "# S5"),
        (3, "It leaves 6.25e-02 (line 59)."),
    ]
    [c] = find_citations("m.ipynb", found[1].source, found[1].cell)
    assert c.where == "m.ipynb, cell 3, line 1" and c.lines == (59,)


def test_a_rewritten_notebook_changes_one_line_and_keeps_its_outputs_byte_identical(tmp_path):
    path = tmp_path / "m.ipynb"
    before = notebook("# S5", "A factor 0.5 leaves\n6.26e-02 after 4 layers (line 59).")
    path.write_text(before)
    [_, cell] = passages(path)
    [c] = find_citations("m.ipynb", cell.source, cell.cell)
    quote = next(q for q in c.quotes if q.text == "6.26e-02")
    ((line, column),) = quote.where
    after = rewritten(path, [Edit(3, line, column, "6.26e-02", "6.25e-02")])
    nbformat.validate(nbformat.reads(after, as_version=4))
    changed = [
        (a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=True) if a != b
    ]
    assert changed == [
        ('    "6.26e-02 after 4 layers (line 59)."', '    "6.25e-02 after 4 layers (line 59)."')
    ]
    outputs = [c["outputs"] for c in json.loads(before)["cells"] if c["cell_type"] == "code"]
    assert [c["outputs"] for c in json.loads(after)["cells"] if c["cell_type"] == "code"] == outputs


def test_a_rewrite_keeps_every_other_byte_of_a_text_file(tmp_path):
    path = tmp_path / "m.md"
    path.write_bytes("Caf\u00e9 net\r\nends at 51.5% (line 65).\r\n".encode())
    after = rewritten(path, [Edit(None, 2, 8, "51.5", "48.5")])
    assert after.encode() == "Caf\u00e9 net\r\nends at 48.5% (line 65).\r\n".encode()


def test_a_document_edited_since_it_was_read_is_not_rewritten(tmp_path):
    path = tmp_path / "m.md"
    path.write_text("It ends at 52.5% (line 65).\n")
    with pytest.raises(StaleEdit, match=r"m.md, line 1: expected '51.5' at column 11"):
        rewritten(path, [Edit(None, 1, 11, "51.5", "48.5")])


# -- what an update does to a quote ---------------------------------------------------------
@pytest.mark.parametrize(
    ("quoted", "value", "new"),
    [
        ("51.5", 48.5, "48.5"),
        ("3015", 3017.4, "3017"),
        ("3.32e-04", 3.4149e-04, "3.41e-04"),
        ("+0.880797", 0.8808, "+0.880800"),
        ("0.0079", 0.01944, "0.0194"),
        ("100", 150, "150"),
    ],
)
def test_a_new_number_is_written_in_the_quotes_form_and_precision(quoted, value, new):
    assert written_like(quoted, value) == new


ACCURACY = Quantity("final test accuracy", PERCENT, ".1f")
TRAIN_LOSS = Quantity("final train loss", LOSS, ".4f")


def moved(quantity, before, now, line=65):
    return Moved(Reading("S6 plain", quantity, now), before, line, "robust")


def cited(text, verified=True, readings=()):
    return {65: CitedLine(65, text, tuple(readings), verified=verified)}


def test_a_quote_whose_number_moved_is_rewritten_as_the_author_wrote_it():
    [c] = find_citations("m.md", "The plain net ends at 51.5% with its loss at 0.6926 (line 65).")
    now = [moved(ACCURACY, 51.5, 48.5), moved(TRAIN_LOSS, 0.6926, 0.6929)]
    planned = plan(c, now, cited("..."), EMPTY)
    assert [r.describe() for r in planned.rewrites] == [
        "m.md:1  51.5 -> 48.5 (log line 65, S6 plain, final test accuracy)",
        "m.md:1  0.6926 -> 0.6929 (log line 65, S6 plain, final train loss)",
    ]
    assert planned.citation.quoted == ("48.5", "0.6929") and planned.left == []


def test_the_sentence_of_a_failing_claim_is_left_for_the_author_to_reword():
    [c] = find_citations("m.md", "The plain net ends at 51.5% (line 65).")
    planned = plan(c, [moved(ACCURACY, 51.5, 48.5)], cited("...", verified=False), EMPTY)
    assert planned.rewrites == [] and planned.citation == c
    assert [one.describe() for one in planned.left] == [
        f"m.md:1  51.5 (log line 65): left, {FAILED_CLAIM}"
    ]


def test_a_range_that_still_covers_the_new_value_is_left():
    [c] = find_citations("m.md", "Its loss ends between 0.69 and 0.71 (line 65).")
    planned = plan(c, [moved(TRAIN_LOSS, 0.6926, 0.6929)], cited("..."), EMPTY)
    assert planned.rewrites == []
    assert [one.reason for one in planned.left] == [
        "a range that still covers the new value (0.6929)"
    ]


def test_a_copy_of_a_fragile_reading_follows_the_references_print():
    """The snapshot holds the reference's numbers: a copy of a fragile reading copied what the
    reference printed, and becomes what it prints now."""
    [c] = find_citations("m.md", "The plain net ends at 51.5% (line 65).")
    fragile = Moved(Reading("S6 plain", ACCURACY, 48.5), 51.5, 65, "fragile")
    planned = plan(c, [fragile], cited("..."), EMPTY)
    assert [(r.old, r.new) for r in planned.rewrites] == [("51.5", "48.5")]
    assert planned.left == [] and planned.citation.quoted == ("48.5",)


# -- the update, in a session ---------------------------------------------------------------
def s5_text(project, suffix, *sentences):
    """The workshop's text in `project`: one document of `sentences`, in the format."""
    folder = project.path / "text"
    folder.mkdir(exist_ok=True)
    path = folder / f"module{suffix}"
    if suffix == ".ipynb":
        path.write_text(notebook("# S5", *sentences))
    elif suffix == ".qmd":
        chunk = "```{python}\n# a code chunk quoting line 7: 0.123 (line 7)\n```\n\n"
        path.write_text("---\ntitle: S5\n---\n\n" + chunk + "\n\n".join(sentences) + "\n")
    else:
        path.write_text("# S5\n\n" + "\n\n".join(sentences) + "\n")
    return path


RIGHT = "A factor of 0.9 leaves 6.56e-01 after 4 layers (line 58)."
WRONG_NUMBER = "A factor of 0.5 leaves 6.26e-02 after 4 layers (line 59)."
WRONG_LINE = "A factor of 0.25 leaves 9.54e-07 after 10 layers (line 160)."


@pytest.mark.parametrize("suffix", [".md", ".qmd", ".ipynb"])
def test_each_format_fails_exactly_its_wrong_number_and_its_wrong_line(
    s5_project, suffix, run_with_text
):
    s5_text(s5_project, suffix, RIGHT, WRONG_NUMBER, WRONG_LINE)
    result = run_with_text(s5_project)
    # 6 claims and the right citation; and a notebook's code cell, whose outputs still show
    # what it prints.
    result.assert_outcomes(passed=7 + (suffix == ".ipynb"), failed=2)
    at = {".md": "line {}", ".qmd": "line {}", ".ipynb": "cell {}, line 1"}[suffix]
    lines = {".md": (3, 5, 7), ".qmd": (9, 11, 13), ".ipynb": (3, 4, 5)}[suffix]
    failed = [line.split(" - ")[0] for line in result.outlines if line.startswith("FAILED ")]
    assert failed == [f"FAILED text/module{suffix}::{at.format(n)}" for n in lines[1:]]
    where = f"text/module{suffix}" + (":{}" if suffix != ".ipynb" else ", cell {}, line 1")
    result.stdout.fnmatch_lines_random(
        [
            where.format(lines[1])
            + ": quotes 6.26e-02 for 'S5 factor 0.5, left at the shallow depth': here 6.25e-02*",
            where.format(lines[2]) + ": cites line 160, but results.log has 107 lines",
        ]
    )


def an_old_value(project):
    """Make the S5 snapshots say that a factor of 0.5 left 7.25e-02 after 4 layers (it
    leaves 6.25e-02): an update moves that number back, as a recipe edit would move it."""
    numbers = (
        project.path
        / "snapshots/numbers/claims"
        / S5
        / ("test_factor_per_layer_compounds_over_4_and_10_layers-0.5.csv")
    )
    numbers.write_text(numbers.read_text().replace(",0.0625", ",0.0725"))
    text = project.path / "snapshots/text" / f"{S5}.ambr"
    text.write_text(text.read_text().replace("-> 6.25e-02", "-> 7.25e-02"))


OLD = "A factor of 0.5 leaves 7.25e-02 after 4 layers (line 59)."
NEW = "A factor of 0.5 leaves 6.25e-02 after 4 layers (line 59)."


@pytest.mark.parametrize("suffix", [".md", ".ipynb"])
def test_an_update_rewrites_the_quote_that_moved_and_a_second_update_changes_nothing(
    s5_project, suffix, run_with_text
):
    an_old_value(s5_project)
    path = s5_text(s5_project, suffix, RIGHT, OLD, f"It takes 90 minutes. {NOTHING_CITED}")
    before = path.read_text()
    normal = run_with_text(s5_project)  # a normal run never writes the text
    assert normal.ret == pytest.ExitCode.TESTS_FAILED and path.read_text() == before
    update = run_with_text(s5_project, "--snapshot-update", "--claims-report=report.md")
    update.assert_outcomes(passed=8)
    where = "text/module.md:5" if suffix == ".md" else "text/module.ipynb, cell 4, line 1"
    update.stdout.fnmatch_lines(
        [
            "*the workshop's text*",
            "rewrote 1 quote whose numbers moved, in 1 document (review them with git diff):",
            f"  {where}  7.25e-02 -> 6.25e-02 (log line 59, S5 factor 0.5, left at the shallow depth)",
        ]
    )
    assert path.read_text() == before.replace("7.25e-02", "6.25e-02")
    report = (s5_project.path / "report.md").read_text()
    assert "## What the update did to the text" in report
    assert f"  {where}  7.25e-02 -> 6.25e-02 (log line 59, " in report
    run_with_text(s5_project).assert_outcomes(passed=8 + (suffix == ".ipynb"))  # and its code cell
    again = run_with_text(s5_project, "--snapshot-update")
    again.assert_outcomes(passed=8)
    assert "rewrote" not in again.stdout.str() and path.read_text() == before.replace(
        "7.25e-02", "6.25e-02"
    )


def test_the_claims_report_lists_the_numbers_that_cite_no_line_and_the_marker_silences_them(
    s5_project,
    run_with_text,
):
    s5_text(s5_project, ".md", RIGHT, "The module takes 90 minutes and 3 exercises.")
    result = run_with_text(s5_project, "--claims-report=report.md")
    result.assert_outcomes(passed=7)
    result.stdout.fnmatch_lines(["text/module.md: 2 numbers cite no line"])
    report = (s5_project.path / "report.md").read_text()
    assert "## Numbers that cite no line" in report
    assert "- `text/module.md:5` 90: The module takes 90 minutes and 3 exercises." in report
    s5_text(
        s5_project, ".md", RIGHT, f"The module takes 90 minutes and 3 exercises. {NOTHING_CITED}"
    )
    result = run_with_text(s5_project, "--claims-report=report.md")
    assert "cite no line" not in result.stdout.str()
    assert "**text/module.md**: none" in (s5_project.path / "report.md").read_text()


# -- all documents or none ------------------------------------------------------------------
def test_rewrites_are_made_before_any_document_is_written(tmp_path):
    """A document that changed since it was read stops the lot: nothing is written."""
    from claimlog.text.rewrites import Rewrite

    first, second = tmp_path / "a.md", tmp_path / "b.md"
    first.write_text("It ends at 51.5% (line 65).\n")
    second.write_text("It ends at 52.5% (line 65).\n")
    rewrites = [
        Rewrite("a.md", None, 1, 11, "51.5", "48.5", 65, "S6 plain"),
        Rewrite("b.md", None, 1, 11, "51.5", "48.5", 65, "S6 plain"),
    ]
    with pytest.raises(StaleEdit):
        rewrite_documents(rewrites, tmp_path)
    assert first.read_text() == "It ends at 51.5% (line 65).\n"


def test_an_update_killed_while_writing_the_text_leaves_every_document_as_it_was(
    tmp_path, monkeypatch, kill_on_the_second_rename
):
    """The text joins the update's transaction: a kill after the first document was
    rewritten and before the second is undone by the next session's recovery, and a document
    is never half written (each is put in place by one rename)."""
    from claimlog.text.rewrites import Rewrite

    places = Places(tmp_path / "project")
    places.root.mkdir()
    text = tmp_path / "text"  # the text may live outside the project
    text.mkdir()
    documents = [text / "a.md", text / "b.md"]
    for document in documents:
        document.write_text("It ends at 51.5% (line 65).\n")
    update = Update(places)
    update.acquire()
    update.begin(documents)
    rewrites = [Rewrite(str(d), None, 1, 11, "51.5", "48.5", 65, "S6 plain") for d in documents]
    kill_on_the_second_rename()
    with pytest.raises(KeyboardInterrupt):
        rewrite_documents(rewrites, Path("/"))
    monkeypatch.undo()
    update.release()
    assert [d.read_text() for d in documents] == [
        "It ends at 48.5% (line 65).\n",
        "It ends at 51.5% (line 65).\n",
    ]
    assert sorted(p.name for p in text.iterdir()) == ["a.md", "b.md"]  # no half-written file
    said = Update(places).recover()
    assert said is not None and "1 files restored" in said
    assert [d.read_text() for d in documents] == ["It ends at 51.5% (line 65).\n"] * 2


# -- the worked example ---------------------------------------------------------------------
def test_the_worked_example_has_every_format_and_every_citation_form_the_readme_teaches():
    """The worked example (workshop/, checked in CI with `pytest claims/ --workshop
    workshop/`) shows an author each format and each way to cite the log."""
    folder = ROOT / "workshop"
    assert sorted(p.suffix for p in folder.iterdir()) == [".ipynb", ".md", ".qmd"]
    found = [
        (passage.source, citation)
        for document in sorted(folder.iterdir())
        for passage in passages(document)
        for citation in find_citations(document.name, passage.source, passage.cell)
    ]
    forms = {
        "line N": r"\bline \d+",
        "lines N and M": r"\blines \d+ and \d+",
        "lines N-M": r"\blines \d+-\d+",
        "results.log:N": r"results\.log:\d+",
    }
    for form, pattern in forms.items():
        assert any(re.search(pattern, c.sentence) for _, c in found), f"no citation as {form}"
    assert any(q.bound for _, c in found for q in c.quotes), "no bound worded as one"
    assert any(q.span for _, c in found for q in c.quotes), "no range"
    assert any(NOTHING_CITED in source for source, _ in found) or any(
        NOTHING_CITED in p.source for d in folder.iterdir() for p in passages(d)
    )
