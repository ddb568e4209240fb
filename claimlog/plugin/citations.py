"""The workshop's text in a session that checks it (`claimlog.plugin.text` registers it):
`WorkshopText`, the feature's plugin object and state, and the pytest items it collects.

Its state is on the config's stash (`WORKSHOP_TEXT`): the folder, the numbers of the prose
that cite no line, and what the session did to the text.

The text is Markdown and MyST (`.md`), Quarto (`.qmd`) and Jupyter notebooks (`.ipynb`, their
Markdown cells; `claimlog.text.documents`). Each item checks its citation against the log this
session verified (`claimlog.text.citations`), so citations run after every claim, in the same
process. An item is named by where its citation stands: `module.md::line 12`, and in a
notebook `module.ipynb::cell 3, line 2`.

Under `--snapshot-update`, an item first plans what the update does to its citation
(`claimlog.text.rewrites`): the quotes whose numbers moved are rewritten, and checked as
rewritten, and a quote the new value no longer bears out fails its citation; the plugin
writes the rewrites into the documents after the last item, inside the update's transaction.
A normal run never writes the text.

A notebook's code cells are items too, `module.ipynb::cell 3, outputs`: each checks that the
cell's stored outputs still show what the notebook, executed afresh, shows now
(`claimlog.text.outputs`). An update has no such items: once the record is written, the
plugin refreshes the outputs that moved, inside the same transaction.

Collecting a document also lists the numbers of its prose that cite no line
(`claimlog.text.citations`), for the summary and the claims report.

A document that cannot be read (not UTF-8, a notebook nbformat rejects, a link to nothing) and
a link the text does not follow (a loop, a link out of the folder) is one failed item,
`module.ipynb::read`, saying why in one line: not a collection error, which would stop pytest
before any claim ran. The claims and every other document still run, and nothing of it is
read, recursed into or written.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from claimlog.evidence.verdicts import NEW
from claimlog.log.readings import Reading
from claimlog.plugin.controller import Controller, controller_of
from claimlog.plugin.outcomes import CITATION, CITED, DRIFT, LEFT, NOTE, REWRITE, channel
from claimlog.plugin.session import ClaimSession, session_of
from claimlog.store import relative
from claimlog.text import outputs
from claimlog.text.checks import Coverage, check, check_published, coverage
from claimlog.text.citations import Citation, Uncited, find_citations, uncited_numbers
from claimlog.text.documents import (
    UnreadableDocument,
    is_text,
    passages,
    text_files,
    why_not_followed,
)
from claimlog.text.prose import NOTHING_CITED
from claimlog.text.rewrites import (
    Left,
    Rewrite,
    describe_rewrites,
    describe_uncited,
    plan,
    rewrite_documents,
)


class WorkshopText:
    """The workshop's text in one session: what its documents cite and quote, and what the
    session did to them (`text`, the summary's lines; an update's rewrites are the
    controller's `rewritten`, which the summary and the claims report both show)."""

    def __init__(self, session: ClaimSession, folder: Path) -> None:
        self.session = session
        self.config = session.config
        self.folder = folder
        self.uncited: dict[str, list[Uncited]] = {}  # the numbers that cite no line, by document
        self.text: list[str] = []  # what this session did to the text, for the summary
        self.cited: Coverage | None = None  # which lines the text cites, once the log is known

    # -- collecting ---------------------------------------------------------------------------
    def pytest_collect_file(
        self, file_path: Path, parent: pytest.Collector
    ) -> pytest.Collector | None:
        """A document of the text is a `TextFile` (a second name of one, through a link, is not)."""
        folder = _within(file_path, parent.config)
        if folder is None or not is_text(file_path):
            return None
        if file_path.is_symlink() and why_not_followed(file_path, folder) is None:
            # A second name of a document of the text, which is collected by its own: read
            # twice, its quotes would be checked twice and rewritten twice.
            return None
        return TextFile.from_parent(parent, path=file_path)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collect_directory(
        self, path: Path, parent: pytest.Collector
    ) -> pytest.Collector | None:
        """A folder of the text is a `TextFolder`; a link to a folder that the text does not
        follow (a loop, or out of the folder) is a `TextFile` that fails, never recursed into:
        pytest would follow a loop about forty levels down, collecting the text again at each."""
        folder = _within(path, parent.config)
        if folder is None:
            return None
        if why_not_followed(path, folder) is not None:
            return TextFile.from_parent(parent, path=path)
        return TextFolder.from_parent(parent, path=path)

    # -- the core's hooks ---------------------------------------------------------------------
    def pytest_claimlog_update_documents(self, session: ClaimSession) -> list[Path]:
        return text_files(self.folder)

    def pytest_claimlog_finish(self, controller: Controller, session: pytest.Session) -> None:
        """Under an update, rewrite the quotes of the text whose numbers moved, before the
        update commits (`claimlog.text.rewrites`), and refresh the notebooks' outputs; say
        what was rewritten, what was left and which numbers cite no line."""
        controller.rewritten = []
        self.cited = self._coverage(controller)
        claims = controller.claims.values()
        rewrites = [Rewrite.from_json(r) for c in claims for r in c.rewrites]
        left = [Left.from_json(one) for c in claims for one in c.left]
        update, written = self.session.settings.update, False
        rolls_back = controller.rolls_back(session)  # nothing is written that would roll back
        if update and rewrites and not rolls_back:
            rewrite_documents(rewrites, self.config.rootpath)
            written = True
        controller.rewritten = describe_rewrites(rewrites, left, written)
        if update and not rolls_back:
            controller.rewritten += self._refresh_outputs(session)
        uncited = describe_uncited(self.uncited)
        # An update that does not complete says what it would write with what failed, in
        # one place (`claimlog.plugin.summary`), and here only what cites no line.
        self.text = uncited if update and rolls_back else controller.rewritten + uncited

    def _refresh_outputs(self, session: pytest.Session) -> list[str]:
        """Under an update, once the record is written and the quotes rewritten: execute each
        notebook of the text and give the cells that now show otherwise their fresh outputs,
        inside the update's transaction (`claimlog.text.outputs`). A notebook that does not
        run is left as it was, named with its error, and fails the session."""
        notebooks = [p for p in text_files(self.folder) if p.suffix == ".ipynb"]
        done = outputs.refresh_notebooks(notebooks, self.config.rootpath, write=True)
        if done.not_executed:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        return done.describe(done=True)

    def _coverage(self, controller: Controller) -> Coverage | None:
        """The lines the text cites, those it never cites, and cited lines no passing claim
        verified (None without citations that ran, or without a log)."""
        citations = [c for c in controller.claims.values() if c.citation and c.ran]
        if not citations or controller.log is None:
            return None
        log = self.session.log
        claim_lines = [log.line_number(key) for key in log.claimed_keys()]
        cited = [n for c in citations for n in c.cited]
        return coverage(cited, controller.log.lines, claim_lines)

    def pytest_claimlog_summary(self, controller: Controller) -> list[tuple[str, list[str]]]:
        found = self.cited.describe() if self.cited else []
        return [("the workshop's text", self.text), ("what the text cites", found)]

    def pytest_claimlog_report(self, controller: Controller) -> list[str]:
        out: list[str] = []
        if self.cited is not None:
            out += [
                "",
                "## What the text cites",
                "",
                *(f"- {line}" for line in self.cited.describe()),
            ]
        if controller.rewritten:
            out += ["", "## What the update did to the text", "", "```", *controller.rewritten]
            out += ["```"]
        return out + _uncited(self.uncited)


WORKSHOP_TEXT = pytest.StashKey[WorkshopText]()


def text_of(config: pytest.Config) -> WorkshopText:
    """The session's `WorkshopText`: registered before anything of the text is collected."""
    return config.stash[WORKSHOP_TEXT]


def _uncited(uncited: dict[str, list[Uncited]]) -> list[str]:
    """Per document, the numbers its prose quotes without citing any line."""
    out = [
        "",
        "## Numbers that cite no line",
        "",
        "Numbers of the prose in a sentence that cites no line of the log: nobody checks them. "
        f"Cite the line, or mark the sentence with `{NOTHING_CITED}` (it renders as nothing) "
        "if it cites nothing on purpose.",
    ]
    for path, found in uncited.items():
        # Bold, not a heading: a report's third-level headings are its claims.
        out += ["", f"**{path}**: {len(found)}" if found else f"**{path}**: none"]
        out += [f"- `{u.where}` {u.number}: {_cell(u.sentence)}" for u in found]
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def text_folder(config: pytest.Config) -> Path:
    """The folder of the workshop's text (--workshop), absolute as pytest names the paths it
    collects. Its links are not resolved: where each leads is judged on its own."""
    return Path(os.path.abspath(config.invocation_params.dir / text_of(config).folder))


def _within(path: Path, config: pytest.Config) -> Path | None:
    """The text's folder, if `path` lies in it as pytest walks it (links not followed)."""
    folder = text_folder(config)
    return folder if path == folder or folder in path.parents else None


class TextFolder(pytest.Directory):
    """A folder of the workshop's text, collected as pytest's own `Dir` collects a folder (each
    entry in name order, through the same hooks), and also each link to nothing that is named
    as a document: `Dir` passes over what is neither a file nor a folder, and a document the
    text lost would otherwise check nothing, without a word."""

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        ihook, session = self.ihook, self.session
        for path in sorted(self.path.iterdir()):
            given = session.isinitpath(path, with_parents=path.is_dir())
            if not given and ihook.pytest_ignore_collect(collection_path=path, config=self.config):
                continue
            if path.is_dir():
                folder = ihook.pytest_collect_directory(path=path, parent=self)
                if folder is not None:
                    yield folder
            elif path.is_file():
                yield from ihook.pytest_collect_file(file_path=path, parent=self)
            elif path.is_symlink() and is_text(path):  # a link to nothing, or to itself
                yield TextFile.from_parent(self, path=path)


class TextFile(pytest.File):
    """A document of the workshop's text: one test per citation of the log."""

    def collect(self) -> Iterable[pytest.Item]:
        try:
            found = passages(self.path, within=text_folder(self.config))
        except UnreadableDocument as error:
            yield UnreadableItem.from_parent(self, name="read", reason=error.reason)
            return
        shown = relative(self.path, self.config.rootpath)
        session = session_of(self.config)
        uncited = text_of(self.config).uncited
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
        if self.path.suffix == ".ipynb" and not session.settings.update:
            # What the notebook shows, checked cell by cell (an update refreshes it instead).
            import nbformat

            for number, _ in outputs.code_cells(nbformat.read(self.path, as_version=4)):
                yield OutputsItem.from_parent(self, name=f"cell {number}, outputs", cell=number)


class UnreadableItem(pytest.Item):
    """A document of the text that cannot be read, or a link the text does not follow: it
    fails alone, saying why in one line (the reason is the author's to act on; a traceback
    would only show where bnvg noticed)."""

    def __init__(self, *, reason: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.reason = reason
        channel(self).append((CITATION, True))  # the text's, so no claim of the log

    @property
    def shown(self) -> str:
        """The document by the name it has in the text, relative to the rootdir: a link's own
        name, not its target's (only the folder that holds it is resolved)."""
        return str(Path(relative(self.path.parent, self.config.rootpath)) / self.path.name)

    def runtest(self) -> None:
        raise UnreadableDocument(self.path, self.reason)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, UnreadableDocument):
            return f"{self.shown}: {self.reason}"
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.shown}, not read"


class CitationError(Exception):
    """A citation the log no longer supports."""


class CitationItem(pytest.Item):
    """Checks one citation against the log this session verified."""

    def __init__(self, *, citation: Citation, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.citation = citation
        channel(self).append((CITATION, True))
        if not citation.published:  # the published log's lines are no lines of results.log
            channel(self).append((CITED, list(citation.lines)))

    def runtest(self) -> None:
        session = session_of(self.config)
        controller = controller_of(self.config)
        if controller is None:
            raise CitationError("citations need the whole log: run --workshop without -n")
        log = controller.assemble()
        if self.citation.published:  # what the original author printed: the file says it
            by_line: dict[int, list[Reading]] = {}
            for reading in session.published.values():
                by_line.setdefault(session.log.line_number(reading.key), []).append(reading)
            wrong = check_published(self.citation, by_line, log.n_lines)
            if wrong:
                raise CitationError("\n".join(wrong))
            return
        context = {
            n: [log.lines[m] for m in session.log.context_of(n)]
            for n in self.citation.lines
            if n in log.lines
        }
        citation, table = self.citation, session.evidence.fragility()
        problems: list[str] = []  # under an update: the quotes the new values no longer bear out
        if session.settings.update:
            planned = plan(citation, controller.moved, log.lines, table)
            citation, problems = planned.citation, planned.problems
            for rewrite in planned.rewrites:
                channel(self).append((REWRITE, rewrite.to_json()))
            for left in planned.left:
                channel(self).append((LEFT, left.to_json()))
        found = session.evidence.standing
        elsewhere = found.kind == NEW and not found.strict
        seeds = session.workshop.seeds
        verdict = check(citation, log.lines, context, table, log.n_lines, elsewhere, seeds)
        where = self.citation.where
        for drift in verdict.drift:
            channel(self).append((DRIFT, f"{where} {drift}"))
        for note in verdict.notes:
            channel(self).append((NOTE, f"{where} {note}"))
        for number in verdict.uncited:  # listed with the prose's other uncited numbers
            uncited = Uncited(
                citation.path, citation.cell, citation.md_line, number, citation.sentence
            )
            text_of(self.config).uncited.setdefault(citation.path, []).append(uncited)
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


# -- a notebook's stored outputs ------------------------------------------------------------
# On a notebook's TextFile: what differs in it from a fresh execution, or why it did not run.
COMPARED = pytest.StashKey["outputs.Compared | outputs.ExecutionFailed"]()


class OutputsError(Exception):
    """A code cell whose stored outputs show what it no longer shows."""


class OutputsItem(pytest.Item):
    """Checks one code cell's stored outputs against the notebook executed afresh, as nbval
    does (`claimlog.text.outputs`). The notebook runs, and is compared, once, for its first
    cell's item; it reads the record, so the stored outputs must show what the record says
    now. Under an update there is no such item: the controller refreshes the outputs once
    the record is written."""

    def __init__(self, *, cell: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cell = cell

    def _compared(self) -> outputs.Compared | outputs.ExecutionFailed:
        notebook = self.parent
        assert notebook is not None
        if COMPARED not in notebook.stash:
            try:
                notebook.stash[COMPARED] = outputs.compared(self.path)
            except outputs.ExecutionFailed as error:
                notebook.stash[COMPARED] = error
        return notebook.stash[COMPARED]

    def runtest(self) -> None:
        found = self._compared()
        if isinstance(found, outputs.ExecutionFailed):
            raise OutputsError(f"the notebook did not run to its end: {found}")
        for difference in found.differences:
            if difference.cell == self.cell:
                raise OutputsError(difference.describe())

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, OutputsError):
            shown = relative(self.path, self.config.rootpath)
            return f"{shown}, cell {self.cell}: {excinfo.value}"
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        shown = relative(self.path, self.config.rootpath)
        return self.path, 0, f"{shown}, cell {self.cell}: its stored outputs, executed afresh"
