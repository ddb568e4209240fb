"""--workshop DIR: one pytest item per citation of the log in the workshop's Markdown.

Each item checks its citation against the log this session verified (`bnvg.evidence.citations`),
so citations run after every claim, in the same process.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from bnvg.evidence.citations import Citation, check, find_citations
from bnvg.log.layout import context_of
from bnvg.plugin.options import CITATION, CITED, DRIFT, NOTE, channel, fragility, settings
from bnvg.store import relative


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    workshop = settings(parent.config).workshop_text
    if workshop and file_path.suffix == ".md" and workshop.resolve() in file_path.resolve().parents:
        return MarkdownFile.from_parent(parent, path=file_path)
    return None


class MarkdownFile(pytest.File):
    """A Markdown module of the workshop: one test per citation of the log."""

    def collect(self) -> Iterable[pytest.Item]:
        seen: dict[int, int] = {}
        shown = relative(self.path, self.config.rootpath)
        for citation in find_citations(shown, self.path.read_text()):
            seen[citation.md_line] = seen.get(citation.md_line, 0) + 1
            n = seen[citation.md_line]
            name = f"line {citation.md_line}" + (f" ({n})" if n > 1 else "")
            yield CitationItem.from_parent(self, name=name, citation=citation)


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
        verdict = check(self.citation, log.lines, context, fragility(self.config), log.n_lines)
        where = f"{self.citation.path}:{self.citation.md_line}"
        for drift in verdict.drift:
            channel(self).append((DRIFT, f"{where} {drift}"))
        for note in verdict.notes:
            channel(self).append((NOTE, f"{where} {note}"))
        if verdict.problems:
            raise CitationError("\n".join(verdict.problems))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, CitationError):
            return (
                f"{self.citation.path}:{self.citation.md_line}: {excinfo.value}\n"
                f"  the sentence: {self.citation.sentence}"
            )
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        cited = ", ".join(str(n) for n in self.citation.lines)
        where = f"{self.citation.path}:{self.citation.md_line}"
        plural = "s" if len(self.citation.lines) > 1 else ""
        return (
            self.path,
            self.citation.md_line - 1,
            f"{where}, citing results.log line{plural} {cited}",
        )
