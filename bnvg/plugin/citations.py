"""--workshop DIR: one pytest item per citation of the log in the workshop's text.

The text is Markdown and MyST (`.md`), Quarto (`.qmd`) and Jupyter notebooks (`.ipynb`, their
Markdown cells; `bnvg.text.documents`). Each item checks its citation against the log this
session verified (`bnvg.text.citations`), so citations run after every claim, in the same
process. An item is named by where its citation stands: `module.md::line 12`, and in a
notebook `module.ipynb::cell 3, line 2`.

Under `--snapshot-update`, an item first plans what the update does to its citation
(`bnvg.text.rewrites`): the quotes whose numbers moved are rewritten, and checked as
rewritten; the controller writes the rewrites into the documents after the last item, inside
the update's transaction. A normal run never writes the text.

Collecting a document also lists the numbers of its prose that cite no line
(`bnvg.text.uncited`), for the summary and the claims report.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from bnvg.log.layout import context_of
from bnvg.plugin.options import (
    CITATION,
    CITED,
    DRIFT,
    LEFT,
    NOTE,
    REWRITE,
    UNCITED,
    channel,
    fragility,
    settings,
)
from bnvg.store import relative
from bnvg.text.citations import Citation, check, find_citations
from bnvg.text.documents import UnreadableDocument, is_text, passages
from bnvg.text.rewrites import plan
from bnvg.text.uncited import uncited_numbers


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    workshop = settings(parent.config).workshop_text
    if workshop and is_text(file_path) and workshop.resolve() in file_path.resolve().parents:
        return TextFile.from_parent(parent, path=file_path)
    return None


class TextFile(pytest.File):
    """A document of the workshop's text: one test per citation of the log."""

    def collect(self) -> Iterable[pytest.Item]:
        shown = relative(self.path, self.config.rootpath)
        try:
            found = passages(self.path)
        except UnreadableDocument as error:
            raise self.CollectError(str(error)) from None
        uncited = self.config.stash.setdefault(UNCITED, {})
        uncited[shown] = []
        seen: dict[str, int] = {}
        for passage in found:
            uncited[shown].extend(uncited_numbers(shown, passage.source, passage.cell))
            for citation in find_citations(shown, passage.source, passage.cell):
                name = f"line {citation.md_line}"
                if citation.cell is not None:
                    name = f"cell {citation.cell}, {name}"
                seen[name] = seen.get(name, 0) + 1
                n = seen[name]
                yield CitationItem.from_parent(
                    self, name=name + (f" ({n})" if n > 1 else ""), citation=citation
                )


class CitationError(Exception):
    """A citation the log no longer supports."""


class CitationItem(pytest.Item):
    """Checks one citation against the log this session verified."""

    def __init__(self, *, citation: Citation, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.citation = citation
        channel(self).append((CITATION, True))
        channel(self).append((CITED, list(citation.lines)))

    def runtest(self) -> None:
        from bnvg.plugin.session import CONTROLLER

        controller = self.config.stash.get(CONTROLLER, None)
        if controller is None:
            raise CitationError("citations need the whole log: run --workshop without -n")
        log = controller.assemble()
        context = {
            n: [log.lines[m] for m in context_of(n)] for n in self.citation.lines if n in log.lines
        }
        citation, table = self.citation, fragility(self.config)
        problems: list[str] = []  # under an update: the quotes the new values no longer bear out
        if settings(self.config).update:
            planned = plan(citation, controller.moved, log.lines, table)
            citation, problems = planned.citation, planned.problems
            for rewrite in planned.rewrites:
                channel(self).append((REWRITE, rewrite.to_json()))
            for left in planned.left:
                channel(self).append((LEFT, left.to_json()))
        verdict = check(citation, log.lines, context, table, log.n_lines)
        where = self.citation.where
        for drift in verdict.drift:
            channel(self).append((DRIFT, f"{where} {drift}"))
        for note in verdict.notes:
            channel(self).append((NOTE, f"{where} {note}"))
        if problems or verdict.problems:
            raise CitationError("\n".join(problems + verdict.problems))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, CitationError):
            return (
                f"{self.citation.where}: {excinfo.value}\n  the sentence: {self.citation.sentence}"
            )
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        cited = ", ".join(str(n) for n in self.citation.lines)
        plural = "s" if len(self.citation.lines) > 1 else ""
        return (
            self.path,
            self.citation.md_line - 1,
            f"{self.citation.where}, citing results.log line{plural} {cited}",
        )
