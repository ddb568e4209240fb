"""The formats workshop authors write, read as passages of prose and written back.

- Markdown (`.md`, MyST Markdown included) and Quarto (`.qmd`): the whole file is one
  passage; what is not prose (code chunks, front matter) is hidden by `claimlog.text.prose`.
- Jupyter notebooks (`.ipynb`): each Markdown cell is a passage, numbered as the notebook
  shows its cells (1-based, code cells counted). Notebooks are read and written with
  nbformat, so a rewritten notebook is still valid; an edit never touches a code cell or
  its outputs (what those show is `claimlog.text.outputs`'s).

An `Edit` replaces one number where it stands (its line and column in its passage), and only
if the text there is still the one it replaces: a file is rewritten whole or not at all.

The text is what lies inside its folder. A link in it is followed only where it leads to a
document or folder inside (`why_not_followed`): a link to nothing, a loop (a link to a folder
that holds it) and a link out of the folder are never read, never recursed into and never
copied or rewritten by an update. A document that cannot be read raises `UnreadableDocument`
with its reason in one line, so that it fails alone and the rest of the text is still read.
"""

from __future__ import annotations

import os
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
    """Every document of the workshop's text under a folder, each once, by its real path and in
    order: what an update may rewrite, so what its transaction copies first. Only regular
    files that can be read, reached through links that lead inside the folder; never what a
    link to nothing, a loop or a link out of the folder would give (Jupyter's checkpoints are
    copies, not the text)."""
    folder = Path(os.path.abspath(folder))  # so a loop to a folder above it is seen as one
    found: set[Path] = set()
    folders = [folder]
    while folders:
        here = folders.pop()
        for path in here.iterdir():
            if path.name == ".ipynb_checkpoints" or why_not_followed(path, folder) is not None:
                continue
            if path.is_dir():
                folders.append(path)
            elif path.is_file() and is_text(path) and os.access(path, os.R_OK):
                found.add(path.resolve())  # a document and a link to it are one file to keep
    return sorted(found)


def why_not_followed(path: Path, folder: Path) -> str | None:
    """Why the text's reader does not follow `path`, a link in the text's `folder`, in one
    line; None for a link it follows (to a document or folder inside) and for what is no link.

    A link to a folder that holds it (the text's folder, one of its parents or any folder on
    the way down) is a loop: followed, it would be collected again at every level until the
    system refuses. A link out of the folder would read, and let an update rewrite, what is
    not the text."""
    if not path.is_symlink():
        return None
    written = os.readlink(path)  # the link as its author wrote it, to name it by
    try:
        target = path.resolve(strict=True)
    except FileNotFoundError:
        return f"a link to {written}, which does not exist"
    except (OSError, RuntimeError):  # links to each other (RuntimeError before Python 3.13)
        return f"a link to {written}, links that lead to each other and never to a file"
    holders = Path(os.path.abspath(path)).parents
    if target.is_dir() and target in {holder.resolve() for holder in holders}:
        return f"a link to {written}, a folder that holds it: a loop, not followed"
    inside = folder.resolve()
    if target != inside and inside not in target.parents:
        return f"a link to {written}, out of the text's folder (to {target}): not read"
    return None


@dataclass(frozen=True)
class Passage:
    """A run of prose: a text file whole, or one Markdown cell of a notebook."""

    source: str
    cell: int | None = None  # the notebook cell, 1-based; None for a text file


class UnreadableDocument(Exception):
    """A document of the workshop's text that cannot be read as its format says, and its
    `reason` in one line (without the path, which a caller names as its reader knows it)."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def _one_line(message: str, width: int = 160) -> str:
    """A library's message as one line of a failure: its first line, cut at `width` (a
    schema error quotes the whole cell it rejects)."""
    first = message.strip().splitlines()[0] if message.strip() else message
    return first if len(first) <= width else first[: width - 3] + "..."


def _notebook(path: Path) -> object:
    import nbformat  # only a notebook needs it
    from nbformat.reader import NotJSONError

    source = read_text(path)  # nbformat's JSON is UTF-8 too
    rejected: dict[str, Exception] = {}  # nbformat logs a schema error, and reads on
    try:
        notebook = nbformat.reads(source, as_version=4, capture_validation_error=rejected)
    except NotJSONError as error:  # json's own error, with where, is its cause
        raise UnreadableDocument(path, f"not JSON: {error.__cause__ or error}") from None
    except Exception as error:  # an unknown version, a document that is no notebook
        reason = f"not a notebook nbformat can read: {_one_line(str(error))}"
        raise UnreadableDocument(path, reason) from None
    if "ValidationError" in rejected:
        reason = f"not a notebook nbformat accepts: {_schema_error(rejected['ValidationError'])}"
        raise UnreadableDocument(path, reason)
    return notebook


def _schema_error(error: Exception) -> str:
    """A notebook's schema error in one line, at the cell a reader counts (from 1)."""
    where = list(getattr(error, "absolute_path", ()))
    message = _one_line(getattr(error, "message", None) or str(error))
    if len(where) >= 2 and where[0] == "cells" and isinstance(where[1], int):
        return f"cell {where[1] + 1}: {message}"
    return "/".join(str(part) for part in where) + f": {message}" if where else message


def read_text(path: Path) -> str:
    """A text file as written: UTF-8, its line endings kept (a rewrite keeps them too)."""
    try:
        data = path.read_bytes()
    except OSError as error:  # gone since it was listed, a folder, no permission
        raise UnreadableDocument(path, f"cannot be read: {error.strerror}") from None
    try:
        return data.decode("utf-8")  # whole, so an error's position is the file's
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        reason = (
            f"not UTF-8 text: byte 0x{data[error.start]:02x} at byte {error.start} "
            f"(line {line}); save it as UTF-8"
        )
        raise UnreadableDocument(path, reason) from None


def passages(path: Path, within: Path | None = None) -> list[Passage]:
    """A document's passages of prose. `within`: the text's folder, when `path` may be a
    link in it that is not followed (`why_not_followed`), which raises UnreadableDocument as
    an unreadable document does."""
    if within is not None and (refused := why_not_followed(path, within)) is not None:
        raise UnreadableDocument(path, refused)
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
