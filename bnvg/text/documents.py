"""The formats workshop authors write, read as passages of prose and written back.

- Markdown (`.md`, MyST Markdown included) and Quarto (`.qmd`): the whole file is one
  passage; what is not prose (code chunks, front matter) is hidden by `bnvg.text.prose`.
- Jupyter notebooks (`.ipynb`): each Markdown cell is a passage, numbered as the notebook
  shows its cells (1-based, code cells counted). Notebooks are read and written with
  nbformat, so a rewritten notebook is still valid; code cells and their outputs are never
  touched.

An `Edit` replaces one number where it stands (its line and column in its passage), and only
if the text there is still the one it replaces: a file is rewritten whole or not at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

FORMATS = {
    ".md": "Markdown (MyST Markdown too)",
    ".qmd": "Quarto",
    ".ipynb": "Jupyter notebook (its Markdown cells)",
}


def is_text(path: Path) -> bool:
    """Whether a file is a document of the workshop's text, by its suffix."""
    return path.suffix in FORMATS and not path.name.startswith(".")


def text_files(folder: Path) -> list[Path]:
    """Every document of the workshop's text under a folder, in order (Jupyter's checkpoints
    are copies, not the text)."""
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and is_text(p) and ".ipynb_checkpoints" not in p.parts
    )


@dataclass(frozen=True)
class Passage:
    """A run of prose: a text file whole, or one Markdown cell of a notebook."""

    source: str
    cell: int | None = None  # the notebook cell, 1-based; None for a text file


class UnreadableDocument(Exception):
    """A document of the workshop's text that cannot be read as its format says."""


def _notebook(path: Path) -> object:
    import nbformat  # only a notebook needs it

    try:
        return nbformat.read(path, as_version=4)
    except Exception as error:  # nbformat raises json's, its own and validation errors
        message = f"{path}: not a Jupyter notebook nbformat can read: {error}"
        raise UnreadableDocument(message) from None


def read_text(path: Path) -> str:
    """A text file as written: UTF-8, its line endings kept (a rewrite keeps them too)."""
    with path.open(encoding="utf-8", newline="") as f:
        return f.read()


def passages(path: Path) -> list[Passage]:
    """A document's passages of prose."""
    if path.suffix != ".ipynb":
        return [Passage(read_text(path))]
    notebook = _notebook(path)
    return [
        Passage(cell.source, number)
        for number, cell in enumerate(notebook.cells, start=1)  # type: ignore[attr-defined]
        if cell.cell_type == "markdown"
    ]


@dataclass(frozen=True)
class Edit:
    """One number of a passage, replaced where it stands."""

    cell: int | None
    line: int  # 1-based, in its passage
    column: int  # 0-based
    old: str
    new: str


class StaleEdit(Exception):
    """The text is no longer what an edit replaces (edited since it was read)."""


def _apply(source: str, edits: Iterable[Edit], path: Path) -> str:
    lines = source.splitlines(keepends=True)
    # Right to left within a line, so an earlier column stays where it was.
    for edit in sorted(edits, key=lambda e: (e.line, e.column), reverse=True):
        line = lines[edit.line - 1] if edit.line <= len(lines) else ""
        if line[edit.column : edit.column + len(edit.old)] != edit.old:
            where = f"{path}" + (f", cell {edit.cell}" if edit.cell else "")
            raise StaleEdit(
                f"{where}, line {edit.line}: expected {edit.old!r} at column {edit.column}, "
                f"found {line.rstrip()!r}; the file changed since it was read"
            )
        lines[edit.line - 1] = line[: edit.column] + edit.new + line[edit.column + len(edit.old) :]
    return "".join(lines)


def rewritten(path: Path, edits: Sequence[Edit]) -> str:
    """The document's text with every edit made, and nothing else changed."""
    if path.suffix != ".ipynb":
        return _apply(read_text(path), edits, path)
    import nbformat

    notebook = _notebook(path)
    cells = notebook.cells  # type: ignore[attr-defined]
    for number in sorted({e.cell for e in edits if e.cell is not None}):
        cell = cells[number - 1]
        if cell.cell_type != "markdown":
            raise StaleEdit(f"{path}, cell {number}: no longer a Markdown cell")
        cell.source = _apply(cell.source, [e for e in edits if e.cell == number], path)
    nbformat.validate(notebook)
    text: str = nbformat.writes(notebook)
    return text if text.endswith("\n") else text + "\n"
