"""captures/results.log, assembled from the claims that passed (the plugin's writer).

Each claim declares the log lines it owns with `@pytest.mark.log_lines("S2 max slope", ...)`
and fills them through the `quoted` fixture once it has verified them (`quoted` compares
their numbers with the snapshot first; `results_log` writes a line unchecked). The text rides on
the test report (`user_properties`), so under pytest-xdist it travels to the controller, the
only process that writes. At the end of the session the plugin lays the lines out as the
workshop script does (`bnvg.layout`), so every line keeps the number the text cites:

- a line whose claim passed holds the verified text;
- a line whose claim failed, or that no claim filled, holds a `[not verified: ...]` marker;
- a run that left lines unfilled (-k, -m, -x, an interrupt) never replaces a complete log;
- the file is replaced atomically, so an interrupted write leaves the previous log whole.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest

from bnvg import claims_report, environment
from bnvg import layout as log_layout
from bnvg.atomic import atomic_write, relative
from bnvg.settings import diagrams_path, fragility_of

DRIFT = "bnvg drift"  # user_properties name: one drifted number, described
SENTENCE = "bnvg sentence"  # user_properties name: what the claim verifies (its docstring)
STORED = "bnvg stored"  # user_properties name: the claim's snapshot lines
OWNS = "bnvg log owns"  # user_properties name: the keys a claim owns (set at setup)
LINE = "bnvg log line"  # user_properties name: one verified (key, text)
NOT_VERIFIED = "[not verified"
TRAINED_OUTPUT = "bnvg_trained"  # the same list, shipped from an xdist worker


@dataclass
class ClaimOutcome:
    """What the controller learned about one claim from its reports."""

    owns: tuple[str, ...] = ()
    lines: dict[str, str] = field(default_factory=dict)
    failed: bool = False
    passed: bool = False
    ran: bool = False  # False for a claim only known as deselected
    sentence: str = ""  # the first paragraph of the claim's docstring
    stored: dict[str, str] = field(default_factory=dict)  # its snapshot's lines
    drift: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        if self.failed:
            return "failed"
        if self.passed:
            return "drifted" if self.drift else "verified"
        return "not run"


@dataclass
class LogAssembly:
    """The lines of one session's log and how complete they are."""

    text: str
    verified: int
    failed: int
    missing: int

    @property
    def complete(self) -> bool:
        return self.failed == 0 and self.missing == 0


class ResultsLogWriter:
    """Collects verified lines from reports (controller only) and writes the log once."""

    def __init__(
        self, path: Path, trained: list[str], snapshot_dir: Path, torch_threads: int = 1
    ) -> None:
        self.path = path
        self.claims: dict[str, ClaimOutcome] = {}
        self.summary: str | None = None
        self.trained = trained  # this process's training ledger; workers' are added to it
        self.snapshot_dir = snapshot_dir
        self.torch_threads = torch_threads  # what the computing processes use
        self.complete = False  # whether this session verified every line of the log
        self.report_summary: str | None = None

    @property
    def drift(self) -> list[str]:
        """Every drifted number of the session (claims' and citations'), in report order."""
        return [d for claim in self.claims.values() for d in claim.drift]

    # -- hooks (the writer is registered as a plugin on the controller) ---------------------
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Called on the controller for xdist workers' reports too."""
        self.add_report(report)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.finish(session.config.rootpath)
        config = session.config
        report_path = config.getoption("bnvg_claims_report")
        if report_path:
            path = Path(report_path)
            text = claims_report.render(
                {k: v for k, v in self.claims.items() if ".md::" not in k},
                fragility_of(config),
                log_layout.line_number,
                diagrams_path(config),
                path,
                self.summary or "",
            )
            atomic_write(path, text)
            self.report_summary = f"wrote the claims report {relative(path, config.rootpath)}"
        if getattr(config.option, "update_snapshots", False) and self.complete:
            # A full update re-records every number: record the environment that computed them.
            environment.save(
                self.snapshot_dir, environment.current(config.getoption("bnvg_torch_threads"))
            )

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """An xdist worker finished: add the runs it trained to the session's ledger."""
        self.trained.extend(getattr(node, "workeroutput", {}).get(TRAINED_OUTPUT, []))

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.summary:
            terminalreporter.write_sep("-", "results.log")
            terminalreporter.write_line(self.summary)
        if self.report_summary:
            terminalreporter.write_line(self.report_summary)
        if self.trained:
            terminalreporter.write_line(
                f"trained {len(self.trained)} networks this session: " + "; ".join(self.trained)
            )
        if self.drift:
            terminalreporter.write_sep(
                "-", "numbers that drifted (platform-dependent, within band)"
            )
            for line in self.drift:
                terminalreporter.write_line(line)
            stored = environment.load(self.snapshot_dir)
            terminalreporter.write_line(f"snapshots recorded with: {environment.describe(stored)}")
            here = environment.current(self.torch_threads)
            terminalreporter.write_line(f"this run:                {environment.describe(here)}")
            terminalreporter.write_line(
                "The log shows the values computed here. --strict-numbers turns drift into failure."
            )

    # -- collecting ------------------------------------------------------------------------
    def add_report(self, report: pytest.TestReport) -> None:
        claim = self.claims.setdefault(report.nodeid, ClaimOutcome())
        claim.ran = True
        for name, value in report.user_properties:
            if name == DRIFT:
                if str(value) not in claim.drift:
                    claim.drift.append(str(value))
            elif name == SENTENCE:
                claim.sentence = str(value)
            elif name == STORED:
                claim.stored = dict(cast("dict[str, str]", value))
            elif name == OWNS:
                claim.owns = tuple(cast("Iterable[str]", value))
            elif name == LINE:
                key, text = cast("tuple[str, str]", value)
                claim.lines[key] = text
        if report.failed:
            claim.failed = True
        elif report.when == "call" and report.passed:
            claim.passed = True

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        """Deselected claims are listed as "not run" in the claims report."""
        for item in items:
            if isinstance(item, pytest.Function):  # a claim, not a citation
                self.claims.setdefault(
                    item.nodeid, ClaimOutcome(owns=owned_keys(item), sentence=sentence_of(item))
                )

    # -- assembling ------------------------------------------------------------------------
    def assemble(self) -> LogAssembly:
        verified: dict[str, str] = {}
        failed_by: dict[str, str] = {}
        for nodeid, claim in self.claims.items():
            if claim.failed:
                failed_by.update((key, nodeid) for key in claim.owns)
            elif claim.passed:
                verified.update(claim.lines)
        out: list[str] = []
        counts = {"verified": 0, "failed": 0, "missing": 0}
        for line in log_layout.layout():
            if isinstance(line, str):
                out.append(line)
            elif line.key in verified:
                out.append(verified[line.key])
                counts["verified"] += 1
            elif line.key in failed_by:
                out.append(f"  {NOT_VERIFIED}: {line.key} -- {failed_by[line.key]} failed]")
                counts["failed"] += 1
            else:
                out.append(f"  {NOT_VERIFIED}: {line.key} -- no claim ran]")
                counts["missing"] += 1
        return LogAssembly(text="".join(f"{line}\n" for line in out), **counts)

    def existing_is_complete(self) -> bool:
        try:
            text = self.path.read_text()
        except (OSError, UnicodeDecodeError):
            return False
        return NOT_VERIFIED not in text and len(text.splitlines()) == len(log_layout.layout())

    # -- writing ---------------------------------------------------------------------------
    def finish(self, rootdir: Path) -> None:
        if not any(claim.owns and claim.ran for claim in self.claims.values()):
            return  # no claim ran (or these are not claims): leave the log alone, say nothing
        log = self.assemble()
        self.complete = log.complete
        shown = relative(self.path, rootdir)
        n_claims = sum(1 for c in self.claims.values() if c.passed and c.lines)
        if log.missing and self.existing_is_complete():
            self.summary = (
                f"kept {shown}: this run filled {log.verified} of "
                f"{log.verified + log.failed + log.missing} claim lines, and a partial log "
                "never replaces a complete one (run `pytest claims/` to rewrite it)"
            )
            return
        atomic_write(self.path, log.text)
        state = (
            "complete"
            if log.complete
            else (f"incomplete: {log.failed} lines failed, {log.missing} not run")
        )
        self.summary = (
            f"wrote {shown}: {log.verified} verified lines from {n_claims} passing claims ({state})"
        )


WRITER = pytest.StashKey[ResultsLogWriter]()


def owned_keys(item: pytest.Item) -> tuple[str, ...]:
    return tuple(key for mark in item.iter_markers("log_lines") for key in mark.args)


def sentence_of(item: pytest.Item) -> str:
    doc = getattr(getattr(item, "function", None), "__doc__", None) or ""
    return " ".join(doc.strip().split("\n\n")[0].split())


# -- the claim-facing fixture --------------------------------------------------------------


class ResultsLog:
    """What a claim uses to hand its verified lines to the log."""

    def __init__(self, item: pytest.Item) -> None:
        self._item = item
        self._owns = owned_keys(item)

    def write(self, key: str, text: str) -> None:
        """Fill the log line `key` (declared in this claim's `log_lines` mark) with `text`."""
        __tracebackhide__ = True
        if key not in self._owns:
            raise pytest.UsageError(
                f"{self._item.nodeid} writes log line {key!r} but its log_lines mark "
                f"declares only {list(self._owns)}"
            )
        self._item.user_properties.append((LINE, (key, text)))

    def write_all(self, lines: Iterable[tuple[str, str]]) -> None:
        for key, text in lines:
            self.write(key, text)
