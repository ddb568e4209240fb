"""The --workshop check: one pytest item per citation of the log in the workshop's Markdown."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from bnvg import layout as log_layout
from bnvg.atomic import relative
from bnvg.citations import Citation, find_citations, unmatched
from bnvg.fragility import tokens
from bnvg.results_log import DRIFT, WRITER
from bnvg.settings import fragility_of


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

    def runtest(self) -> None:
        writer = self.config.stash.get(WRITER, None)
        if writer is None:
            raise CitationError("citations need the whole log: run --workshop without -n")
        log_lines = writer.assemble().text.splitlines()
        missing, absent = unmatched(self.citation, log_lines)
        problems = [f"cites line {n}, but results.log has {len(log_lines)} lines" for n in missing]
        for quoted in absent:
            drift = self._drift(quoted, log_lines)
            if drift:
                self.user_properties.append((DRIFT, drift))
                continue
            cited = "; ".join(
                f"line {n} says {log_lines[n - 1].strip()!r}"
                for n in self.citation.lines
                if 1 <= n <= len(log_lines)
            )
            problems.append(f"quotes {quoted}, which no cited line says: {cited}")
        if problems:
            raise CitationError("\n".join(problems))

    def _drift(self, quoted: str, log_lines: list[str]) -> str | None:
        """A description if `quoted` is a fragile number of a cited line, within its band."""
        fragility = fragility_of(self.config)
        for n in self.citation.lines:
            key = log_layout.key_at(n)
            if key is None or not 1 <= n <= len(log_lines):
                continue
            for i, printed in enumerate(tokens(log_lines[n - 1])):
                band = fragility.band(key, i)
                if band is not None and float(quoted) in band:
                    return (
                        f"{self.citation.path}:{self.citation.md_line} quotes {quoted}; "
                        f"log line {n} says {printed} ({band}, platform-dependent)"
                    )
        return None

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, CitationError):
            return (
                f"{self.citation.path}:{self.citation.md_line}: {excinfo.value}\n"
                f"  the sentence: {self.citation.sentence}"
            )
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.citation.md_line - 1, f"citation of results.log {self.name}"
