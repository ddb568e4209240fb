"""A notebook's stored outputs are part of its text: what they show is checked, and refreshed.

A reader of a notebook sees its stored outputs as they are (Jupyter, Jupyter Book and
MyST-NB show them without running anything), so an output that prints an old line of the
log is a wrong number in print. The check is the one nbval makes: the notebook is executed
afresh (nbclient, in the notebook's own folder, with a kernel of this Python: the project's
environment), and each code cell's stored outputs are compared with what it shows now.

What is compared, per code cell, in order (`shown`):

- a stream's text, consecutive writes to one stream joined (as Jupyter shows them);
- a result's or a display's data, mimetype by mimetype: text as text, and images
  (`image/png`, ...) byte for byte. nbval skips images by default; here a displayed figure
  of `diagrams/` is the picture the reader sees, and the record draws it to the same bytes
  on every machine, so an old picture is as wrong as an old number;
- an error's name and value (never its traceback, which names paths and line numbers).

Execution counts, output metadata, cell ids and timings are never compared: they say how a
run went, not what the reader is told.

`refreshed` gives a notebook its fresh outputs where they differ, and nothing else: a cell
whose outputs still show the same keeps its stored ones byte for byte, and a refreshed cell
keeps its execution count, its id and its metadata, so the notebook's diff holds only the
outputs that changed.
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from claimlog.store import atomic_write, relative

# A cell may take this long: the workshop's notebooks read the log and the figures; a notebook
# that trains a network takes as long as the network.
CELL_TIMEOUT = 600
# The kernel's start, which imports IPython: seconds here, more on a loaded machine.
STARTUP_TIMEOUT = 120

# Shown as text: the kinds of data a reader reads (the rest are pictures, compared as bytes).
_TEXT = ("text/", "application/json", "application/javascript")
_WORD = re.compile(r"[^\s,;()]+")


@dataclass(frozen=True)
class Shown:
    """One thing a code cell shows: a stream's text, one mimetype of a result or display, or
    an error; `what` names it for people ("stdout", "text/plain", "image/png", "error")."""

    what: str
    content: str

    @property
    def is_text(self) -> bool:
        return not self.what.startswith(("image/", "application/pdf"))

    def describe(self) -> str:
        """For a one-line message: "stdout '... 51.5% ...'", or a picture by its size."""
        if self.is_text:
            return f"{self.what} {self.content!r}"
        return f"a picture ({self.what}, {len(self.content)} base64 characters)"


def _joined(text: object) -> str:
    return "".join(text) if isinstance(text, list) else str(text)


def shown(outputs: Iterable[Mapping[str, Any]]) -> list[Shown]:
    """What a code cell's outputs show a reader, in order (see the module's docstring)."""
    out: list[Shown] = []
    for output in outputs:
        kind = output.get("output_type")
        if kind == "stream":
            name, text = str(output.get("name", "stdout")), _joined(output.get("text", ""))
            if out and out[-1].what == name:  # one stream written twice shows as one text
                out[-1] = Shown(name, out[-1].content + text)
            else:
                out.append(Shown(name, text))
        elif kind in ("execute_result", "display_data"):
            data = output.get("data", {})
            for mimetype in sorted(data):
                content = _joined(data[mimetype])
                if not mimetype.startswith(_TEXT):
                    content = "".join(content.split())  # base64 may be wrapped at any width
                out.append(Shown(mimetype, content))
        elif kind == "error":
            out.append(Shown("error", f"{output.get('ename')}: {output.get('evalue')}"))
    return out


@dataclass(frozen=True)
class CellDifference:
    """A code cell whose stored outputs no longer show what it shows now."""

    cell: int  # 1-based, as the notebook shows its cells (Markdown cells counted)
    stored: tuple[Shown, ...]
    fresh: tuple[Shown, ...]

    def first_difference(self) -> tuple[Shown | None, Shown | None]:
        """The first thing shown differently: (stored, fresh), either None where one shows
        less than the other."""
        pairs = itertools.zip_longest(self.stored, self.fresh)
        return next(((old, new) for old, new in pairs if old != new), (None, None))

    def describe(self) -> str:
        """ "stored stdout '... 51.5% ...', fresh stdout '... 48.5% ...'" on one line."""
        old, new = self.first_difference()
        stored = old.describe() if old else "nothing more"
        fresh = new.describe() if new else "nothing more"
        moved = _words_moved(old.content, new.content) if old and new and old.is_text else None
        said = f"the stored output shows {stored}; executed now it shows {fresh}"
        return said + (f" ({moved})" if moved else "")


class ExecutionFailed(Exception):
    """A notebook that did not run to its end: its kernel died, a cell timed out, or a cell
    raised where the notebook does not say it may (`raises-exception` tag)."""


def _project_kernel() -> type:
    """A kernel manager whose kernel is this Python, whatever kernels the machine has
    installed: the notebook is checked in the environment the claims ran in."""
    from ipykernel.kernelspec import RESOURCES, get_kernel_dict
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import default

    class ThisPython(KernelSpecManager):
        def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
            return KernelSpec(resource_dir=RESOURCES, **get_kernel_dict())

    class ProjectKernel(AsyncKernelManager):
        @default("kernel_spec_manager")
        def _kernel_spec_manager_default(self) -> KernelSpecManager:
            return ThisPython(data_dir=self.data_dir)

    return ProjectKernel


@dataclass(frozen=True)
class Compared:
    """A notebook as stored, the same executed afresh, and the code cells whose stored
    outputs show something else than their fresh ones."""

    stored: Any
    fresh: Any
    differences: list[CellDifference]


def compared(path: Path) -> Compared:
    """The notebook at `path`, read once, and executed afresh in its own folder (on a copy:
    the file is not written); raises ExecutionFailed with one line saying why it did not run
    to its end."""
    import copy

    import nbformat

    try:
        stored = nbformat.read(path, as_version=4)
    except Exception as error:  # json's, nbformat's and validation errors alike
        raise ExecutionFailed(
            f"not a notebook nbformat can read: {error}".splitlines()[0]
        ) from None
    fresh = _execute(copy.deepcopy(stored), path.parent)
    return Compared(stored, fresh, differences(stored, fresh))


def _execute(notebook: Any, folder: Path) -> Any:
    """`notebook` executed afresh in `folder` (its outputs replaced in place)."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    client = NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT,
        startup_timeout=STARTUP_TIMEOUT,
        kernel_manager_class=_project_kernel(),
        record_timing=False,
        # The kernel listens on loopback only; its warning that TCP is not encrypted would be
        # the one line it prints, under an update outside pytest's capture.
        extra_arguments=["--IPKernelApp.log_level=ERROR"],
        resources={"metadata": {"path": str(folder)}},
    )
    try:
        client.execute()
    except CellExecutionError as error:
        # Its first line names the cell's error; the rest is the cell's source and traceback.
        raise ExecutionFailed(
            f"a cell raised {error.ename}: {error.evalue}" if error.ename else str(error)
        ) from None
    except CellTimeoutError:
        raise ExecutionFailed(f"a cell ran longer than {CELL_TIMEOUT} s") from None
    except DeadKernelError as error:
        raise ExecutionFailed(f"its kernel died: {error}") from None
    except Exception as error:  # the kernel would not start: name it, not a traceback
        raise ExecutionFailed(f"{type(error).__name__}: {error}".splitlines()[0]) from None
    return notebook


def code_cells(notebook: Any) -> list[tuple[int, Any]]:
    """(number, cell) of each code cell, numbered as the notebook shows its cells."""
    return [
        (number, cell)
        for number, cell in enumerate(notebook.cells, start=1)
        if cell.cell_type == "code"
    ]


def differences(stored: Any, fresh: Any) -> list[CellDifference]:
    """The code cells whose stored outputs show something else than their fresh ones."""
    out = []
    for (number, old), (_, new) in zip(code_cells(stored), code_cells(fresh), strict=True):
        before, now = shown(old.outputs), shown(new.outputs)
        if before != now:
            out.append(CellDifference(number, tuple(before), tuple(now)))
    return out


def refreshed(stored: Any, fresh: Any, cells: Sequence[int]) -> str:
    """The stored notebook with the fresh outputs of `cells`, as nbformat writes it. A
    result's execution count is the stored cell's, so nothing but the outputs changes."""
    import nbformat

    by_number = dict(code_cells(fresh))
    for number, cell in code_cells(stored):
        if number not in cells:
            continue
        outputs = by_number[number].outputs
        for output in outputs:
            if "execution_count" in output:
                output["execution_count"] = cell.get("execution_count")
        cell.outputs = outputs
    nbformat.validate(stored)
    text: str = nbformat.writes(stored)
    return text if text.endswith("\n") else text + "\n"


def _words_moved(old: str, new: str) -> str | None:
    """ "0.6926 -> 0.6929, 51.5% -> 48.5%": the words of one text that another replaces, or
    None where the two differ in more than a few places (then both are shown whole)."""
    # Words as a reader counts them: "0.6926," is the number 0.6926 before a comma.
    a, b = _WORD.findall(old), _WORD.findall(new)
    changes = [
        f"{' '.join(a[i1:i2]) or '(nothing)'} -> {' '.join(b[j1:j2]) or '(nothing)'}"
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b).get_opcodes()
        if tag != "equal"
    ]
    return ", ".join(changes) if 0 < len(changes) <= 4 else None


@dataclass(frozen=True)
class Refresh:
    """One code cell given its fresh outputs: where, and what it shows now instead (the
    first thing it shows otherwise: a text, or a picture described by its size)."""

    path: str
    cell: int
    what: str  # "stdout", "text/plain", "image/png", ...
    old: str
    new: str
    picture: bool = False

    def describe(self) -> str:
        """ "workshop/s6.ipynb, cell 3  0.6926 -> 0.6929, 51.5% -> 48.5% (stdout)" """
        if self.picture:
            change = f"{self.old} -> {self.new}"
        else:
            change = _words_moved(self.old, self.new) or f"{self.old!r} -> {self.new!r}"
        return f"{self.path}, cell {self.cell}  {change} ({self.what})"


def refresh_of(path: str, difference: CellDifference) -> Refresh:
    """How a refresh of `difference` is listed."""
    old, new = difference.first_difference()
    what = (old or new or Shown("output", "")).what
    if (old is None or old.is_text) and (new is None or new.is_text):
        before, after = (old.content if old else ""), (new.content if new else "")
        return Refresh(path, difference.cell, what, before, after)
    before = old.describe() if old else "(no output)"
    after = new.describe() if new else "(no output)"
    return Refresh(path, difference.cell, what, before, after, picture=True)


@dataclass
class Refreshed:
    """What an update did to the notebooks' outputs: the cells refreshed, the notebooks
    written, and the notebooks that did not run (each with why), left as they were."""

    refreshes: list[Refresh]
    written: list[Path]
    not_executed: dict[str, str]

    def describe(self, done: bool) -> list[str]:
        out: list[str] = []
        if self.refreshes:
            n, notebooks = len(self.refreshes), len({r.path for r in self.refreshes})
            verb = (
                "refreshed" if done else "would refresh (not written: the update did not complete)"
            )
            out.append(
                f"{verb} the outputs of {n} cell{'s' if n > 1 else ''} that now "
                f"show{'' if n > 1 else 's'} otherwise, in {notebooks} "
                f"notebook{'s' if notebooks > 1 else ''}:"
            )
            out += [f"  {r.describe()}" for r in self.refreshes]
        for path, why in self.not_executed.items():
            out.append(
                f"{path}: not executed ({why}): its stored outputs were left as they were; "
                "make it run, then update again"
            )
        return out


def refresh_notebooks(paths: Sequence[Path], root: Path, write: bool) -> Refreshed:
    """Execute each notebook and give the cells whose outputs show otherwise their fresh
    outputs. Every new notebook is made before the first is written (`write`), each by one
    atomic rename; a notebook that does not run is left as it is, and named."""

    refreshes: list[Refresh] = []
    texts: dict[Path, str] = {}
    not_executed: dict[str, str] = {}
    for path in paths:
        shown_as = relative(path, root)
        try:
            found = compared(path)
        except ExecutionFailed as error:
            not_executed[shown_as] = str(error)
            continue
        if found.differences:
            refreshes += [refresh_of(shown_as, d) for d in found.differences]
            cells = [d.cell for d in found.differences]
            texts[path] = refreshed(found.stored, found.fresh, cells)
    if write:
        for path, text in texts.items():
            atomic_write(path, text)
    return Refreshed(refreshes, list(texts) if write else [], not_executed)
