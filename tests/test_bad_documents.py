"""A document of the workshop's text that cannot be read fails alone: one failed item naming
the file and saying why in one line, while the claims and every other document still run,
and nothing is written, under an update neither (`claimlog.plugin.citations`,
`claimlog.text.documents`)."""

import json
import os

import pytest
from nbformat.v4 import new_markdown_cell, new_notebook

from claimlog.text.documents import UnreadableDocument, passages, text_files

RIGHT = "A factor of 0.9 leaves 6.56e-01 after 4 layers (line 58)."
WRONG = "A factor of 0.5 leaves 6.26e-02 after 4 layers (line 59)."  # fails, if ever read


def good_document(root):
    """text/module.md, whose one citation passes."""
    (root / "text").mkdir(exist_ok=True)
    (root / "text" / "module.md").write_text(f"# S5\n\n{RIGHT}\n")


def files(root, under=""):
    """Every file of the project (under `under`) by its bytes, and every link by where it
    points: what a session must leave as it found it. Not what a run writes by design:
    obtained/ (a normal run's log), pytest's cache, Python's bytecode, and the home's .cache/
    (pytester's HOME is the project's folder: matplotlib keeps its fonts there)."""
    written = ("obtained", ".pytest_cache", "__pycache__", ".cache")
    found = {}
    for folder, folders, names in os.walk(root / under):
        folders[:] = [f for f in folders if f not in written]
        for name in folders + names:
            path = os.path.join(folder, name)
            where = os.path.relpath(path, root)
            if os.path.islink(path):
                found[where] = "-> " + os.readlink(path)  # never followed: a loop is here
            elif os.path.isfile(path):
                with open(path, "rb") as f:
                    found[where] = f.read()
    return found


# -- the bad documents: each made in a project's text/, and what its failure says ----------
def not_utf8(root):
    (root / "text" / "latin1.md").write_bytes(b"# S5\n\nUn caf\xe9. " + RIGHT.encode() + b"\n")
    return "text/latin1.md", "not UTF-8 text: byte 0xe9 at byte 12 (line 3); save it as UTF-8"


def not_json(root):
    (root / "text" / "broken.ipynb").write_text('{"cells": [')
    return "text/broken.ipynb", "not JSON: Expecting value: line 1 column 12 (char 11)"


def rejected_by_nbformat(root):
    nb = new_notebook(cells=[new_markdown_cell("# S5"), new_markdown_cell(RIGHT)])
    for i, cell in enumerate(nb.cells, start=1):
        cell["id"] = f"cell-{i}"
    del nb.cells[1]["source"]  # a Markdown cell without its text
    (root / "text" / "invalid.ipynb").write_text(json.dumps(nb))
    reason = "not a notebook nbformat accepts: cell 2: 'source' is a required property"
    return "text/invalid.ipynb", reason


def link_to_nothing(root):
    (root / "text" / "gone.md").symlink_to("nowhere.md")
    return "text/gone.md", "a link to nowhere.md, which does not exist"


def loop_to_the_text(root):
    (root / "text" / "loop").symlink_to(".")
    return "text/loop", "a link to ., a folder that holds it: a loop, not followed"


def loop_further_down(root):
    (root / "text" / "part").mkdir()
    (root / "text" / "part" / "back").symlink_to("..")
    return "text/part/back", "a link to .., a folder that holds it: a loop, not followed"


def loop_above_the_text(root):
    (root / "text" / "up").symlink_to("..")  # the project, which holds the text
    return "text/up", "a link to .., a folder that holds it: a loop, not followed"


def document_out_of_the_folder(root):
    (root / "notes.md").write_text(f"# Notes\n\n{WRONG}\n")
    (root / "text" / "outside.md").symlink_to("../notes.md")
    to = (root / "notes.md").resolve()
    return "text/outside.md", f"a link to ../notes.md, out of the text's folder (to {to}): not read"


def folder_out_of_the_folder(root):
    (root / "more").mkdir()
    (root / "more" / "module.md").write_text(f"# More\n\n{WRONG}\n")
    (root / "text" / "elsewhere").symlink_to("../more")
    to = (root / "more").resolve()
    return "text/elsewhere", f"a link to ../more, out of the text's folder (to {to}): not read"


BAD = [
    not_utf8,
    not_json,
    rejected_by_nbformat,
    link_to_nothing,
    loop_to_the_text,
    loop_further_down,
    loop_above_the_text,
    document_out_of_the_folder,
    folder_out_of_the_folder,
]


def failed(result):
    """The failed items' node ids, as the short summary lists them."""
    return sorted(line.split(" ")[1] for line in result.outlines if line.startswith("FAILED "))


@pytest.mark.parametrize("bad", BAD, ids=lambda bad: bad.__name__)
def test_a_document_that_cannot_be_read_says_which_and_why_in_one_line(tmp_path, bad):
    """What each bad document's failure says (the session test below runs them all at once:
    each fails alone there, as its own item, while the rest runs)."""
    (tmp_path / "text").mkdir()
    shown, reason = bad(tmp_path)
    with pytest.raises(UnreadableDocument) as caught:
        passages(tmp_path / shown, within=tmp_path / "text")
    assert caught.value.reason == reason and "\n" not in reason


def test_one_bad_document_fails_alone_and_the_claims_and_the_other_documents_run(
    s5_project, run_with_text
):
    root = s5_project.path
    good_document(root)
    shown, reason = not_json(root)
    before = files(root)
    result = run_with_text(s5_project)
    result.assert_outcomes(passed=7, failed=1)  # the 6 claims and the good citation
    assert failed(result) == [f"{shown}::read"]
    assert f"{shown}: {reason}" in result.outlines  # the whole failure, on one line
    assert "Traceback" not in result.stdout.str()
    assert files(root) == before


def test_every_bad_document_at_once_fails_each_alone_and_the_rest_runs(s5_project, run_with_text):
    root = s5_project.path
    good_document(root)
    made = [bad(root) for bad in BAD]
    before = files(root)
    result = run_with_text(s5_project)
    result.assert_outcomes(passed=7, failed=len(BAD))
    assert failed(result) == sorted(f"{shown}::read" for shown, _ in made)
    for shown, reason in made:
        assert f"{shown}: {reason}" in result.outlines
    assert "Traceback" not in result.stdout.str()
    assert files(root) == before


def test_an_update_beside_bad_documents_completes_and_writes_none_of_them(
    s5_project, run_with_text
):
    root = s5_project.path
    good_document(root)
    made = [bad(root) for bad in BAD]
    text = {under: files(root, under) for under in ("text", "notes.md", "more")}
    result = run_with_text(s5_project, "--snapshot-update")
    result.assert_outcomes(passed=7, failed=len(BAD))
    assert failed(result) == sorted(f"{shown}::read" for shown, _ in made)
    assert "Traceback" not in result.stdout.str()
    update = root / "obtained" / ".update"
    assert not any(update.iterdir())  # committed: no journal, no copy left behind
    assert {under: files(root, under) for under in text} == text


def test_a_folder_named_like_a_document_is_a_folder_whose_documents_are_read(
    s5_project, run_with_text
):
    """pytest collects a folder as a folder whatever its name, and so does bnvg: `x.md/` is
    no document that failed to read, and the documents inside it are the text's."""
    (s5_project.path / "text" / "chapter.md").mkdir(parents=True)
    (s5_project.path / "text" / "chapter.md" / "module.md").write_text(f"# S5\n\n{RIGHT}\n")
    run_with_text(s5_project).assert_outcomes(passed=7)


def test_the_documents_an_update_keeps_are_the_readable_ones_inside_each_once(tmp_path):
    """What an update's transaction copies: never a link to nothing, a loop or a link out
    (copying one would crash, or keep what is not the text), and a document linked to from
    inside the folder once, by its real path."""
    good_document(tmp_path)
    for bad in BAD:
        bad(tmp_path)
    (tmp_path / "text" / "alias.md").symlink_to("module.md")
    (tmp_path / "text" / "part" / "other.qmd").write_text("# Other\n")
    (tmp_path / "text" / "chapter.md").mkdir()
    keep = ["latin1.md", "broken.ipynb", "invalid.ipynb", "module.md", "part/other.qmd"]
    assert text_files(tmp_path / "text") == sorted(
        (tmp_path / "text" / name).resolve() for name in keep
    )


def test_a_second_name_of_a_document_inside_the_folder_is_read_once_by_its_own(
    s5_project, run_with_text
):
    """A link to a document of the text is the same document: collected once, by its own
    name, so its quotes are checked once and an update rewrites them once."""
    good_document(s5_project.path)
    (s5_project.path / "text" / "alias.md").symlink_to("module.md")
    result = run_with_text(s5_project)
    result.assert_outcomes(passed=7)  # 6 claims and module.md's one citation
    assert "alias.md" not in result.stdout.str()


@pytest.mark.slow
def test_beside_every_bad_document_the_59_claims_of_the_workshop_still_pass(
    claims_here, shared_cache
):
    """The whole workshop, its networks reused from the test session's cold run: each bad
    document fails alone, every claim passes, and the project is left as it was."""
    root = claims_here.path
    good_document(root)
    bad_ones = sorted(f"{bad(root)[0]}::read" for bad in BAD)
    before = files(root)
    run = claims_here("out", "--workshop", "text", cache=shared_cache, passes=False)
    outcomes = [c.outcome for c in run.record.claims.values()]
    assert outcomes.count("passed") == 59 and "failed" not in outcomes
    failed_items = [
        line.split(" ")[1] for line in run.stdout.splitlines() if line.startswith("FAILED ")
    ]
    assert sorted(failed_items) == bad_ones
    assert files(root) == before
