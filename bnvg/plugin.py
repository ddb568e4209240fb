"""The pytest plugin: writes captures/results.log from the claims that passed.

Each claim declares the log lines it owns with `@pytest.mark.log_lines("S2 max slope", ...)`
and fills them through the `results_log` fixture once it has verified them. The text rides on
the test report (`user_properties`), so under pytest-xdist it travels to the controller, the
only process that writes. At the end of the session the plugin lays the lines out as the
workshop script does (`bnvg.layout`), so every line keeps the number the text cites:

- a line whose claim passed holds the verified text;
- a line whose claim failed, or that no claim filled, holds a `[not verified: ...]` marker;
- a run that left lines unfilled (-k, -m, -x, an interrupt) never replaces a complete log;
- the file is replaced atomically, so an interrupted write leaves the previous log whole.

The plugin also pins torch to one intra-op thread in every process: the thread count changes
training results, and the log must not depend on the machine.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
from syrupy.exceptions import SnapshotDoesNotExist

from bnvg import claims_report, environment
from bnvg import layout as log_layout
from bnvg.citations import Citation, find_citations, unmatched
from bnvg.fragility import Fragility, tokens
from bnvg.fragility import load as load_fragility
from bnvg.numbers import Difference, accept_drift, compare, parse_amber_dict

DRIFT = "bnvg drift"  # user_properties name: one drifted number, described
SENTENCE = "bnvg sentence"  # user_properties name: what the claim verifies (its docstring)
STORED = "bnvg stored"  # user_properties name: the claim's snapshot lines
OWNS = "bnvg log owns"  # user_properties name: the keys a claim owns (set at setup)
LINE = "bnvg log line"  # user_properties name: one verified (key, text)
NOT_VERIFIED = "[not verified"


@dataclass
class ClaimOutcome:
    """What the controller learned about one claim from its reports."""

    owns: tuple[str, ...] = ()
    lines: dict[str, str] = field(default_factory=dict)
    failed: bool = False
    passed: bool = False
    skipped: bool = False
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
        self.drift: dict[str, None] = {}  # descriptions of drifted numbers, in report order
        self.complete = False  # whether this session verified every line of the log
        self.report_summary: str | None = None

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
            self.report_summary = f"wrote the claims report {_relative(path, config.rootpath)}"
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
                self.drift[str(value)] = None
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
        elif report.skipped:
            claim.skipped = True

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        """Deselected claims are listed as "not run" in the claims report."""
        for item in items:
            if not isinstance(item, CitationItem):
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
        shown = _relative(self.path, rootdir)
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


def atomic_write(path: Path, text: str) -> None:
    """Write `text` to `path` so that readers see the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


# -- the claim-facing fixture -----------------------------------------------------------------


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


UPDATE_COMMAND = "pytest claims/ --snapshot-update"


class Quoted:
    """Checks a claim's log lines against its snapshot, number by number, then hands them to
    the log. Robust numbers must match exactly; fragile ones may drift within their band
    (reported in the summary), unless --strict-numbers."""

    def __init__(self, request: pytest.FixtureRequest, results_log: ResultsLog) -> None:
        self._item = request.node
        self._snapshot = request.getfixturevalue("snapshot")
        self._results_log = results_log
        config = request.config
        self._strict = bool(config.getoption("bnvg_strict_numbers"))
        self._update = bool(getattr(config.option, "update_snapshots", False))
        self._fragility = fragility_of(config)

    def lines(self, lines: Mapping[str, str]) -> None:
        """Verify `lines` (log line key -> text) against the snapshot and write them."""
        __tracebackhide__ = True
        computed = dict(lines)
        accepted = computed
        drift: list[Difference] = []
        failures: list[Difference] = []
        if not self._update:
            stored_text = self._stored()
            stored = parse_amber_dict(stored_text) if stored_text is not None else None
            if stored is not None:
                self._item.user_properties.append((STORED, stored))
                line_of = {k: log_layout.line_number(k) for k in computed}
                for d in compare(stored, computed, line_of, self._fragility):
                    (drift if d.is_drift and not self._strict else failures).append(d)
                accepted = accept_drift(computed, drift)
        matched = self._snapshot == accepted  # syrupy records the comparison either way
        if not matched:
            if failures:
                raise AssertionError(self._message(failures))
            assert self._snapshot == accepted  # syrupy explains (e.g. no snapshot yet)
        for d in drift:
            self._item.user_properties.append((DRIFT, d.describe()))
        self._results_log.write_all(computed.items())

    def _stored(self) -> str | None:
        s = self._snapshot
        try:
            data = s.session.recall_snapshot(s.extension, s.test_location, s.index)
        except SnapshotDoesNotExist:
            return None
        return str(data)

    def _message(self, failures: list[Difference]) -> str:
        numbers = "\n".join(f"  {d.describe()}" for d in failures)
        return (
            f"{self._item.nodeid}: the numbers differ from the snapshot\n{numbers}\n"
            f"If the new values are right, accept them: {UPDATE_COMMAND} -k "
            f"'{self._item.name}' (then update the text that quotes them)"
        )


FRAGILITY = pytest.StashKey[Fragility]()


def fragility_of(config: pytest.Config) -> Fragility:
    if FRAGILITY not in config.stash:
        config.stash[FRAGILITY] = load_fragility(snapshot_dir(config))
    return config.stash[FRAGILITY]


@pytest.fixture
def quoted(request: pytest.FixtureRequest, results_log: ResultsLog) -> Quoted:
    """Verifies a claim's log lines against its snapshot and writes them to the log."""
    return Quoted(request, results_log)


def owned_keys(item: pytest.Item) -> tuple[str, ...]:
    return tuple(key for mark in item.iter_markers("log_lines") for key in mark.args)


@pytest.fixture
def results_log(request: pytest.FixtureRequest) -> ResultsLog:
    """Hands a claim's verified lines to captures/results.log."""
    return ResultsLog(request.node)


# -- hooks ------------------------------------------------------------------------------------

WRITER = pytest.StashKey[ResultsLogWriter]()
TRAINED = pytest.StashKey[list[str]]()  # names of the runs this process trained
TRAINED_OUTPUT = "bnvg_trained"  # the same list, shipped from an xdist worker


def training_ledger(config: pytest.Config) -> list[str]:
    """The list every training run of this process is recorded in (see `RunCache.on_train`)."""
    return config.stash[TRAINED]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("bnvg", "bnvg: the executable workshop")
    group.addoption(
        "--results-log",
        dest="bnvg_results_log",
        metavar="PATH",
        default=None,
        help="where to write the log assembled from the passing claims "
        "(default: captures/results.log under the rootdir)",
    )
    group.addoption(
        "--workshop",
        dest="bnvg_workshop",
        metavar="DIR",
        default=None,
        help="also check every citation of the log in the Markdown files under DIR "
        "(one test per citation; runs in one process, after the claims)",
    )
    group.addoption(
        "--claims-report",
        dest="bnvg_claims_report",
        metavar="PATH",
        default=None,
        help="write a Markdown report: one row per claim (sentence, values here and in the "
        "snapshot, robust or fragile, status, log lines), then the diagrams",
    )
    group.addoption(
        "--strict-numbers",
        dest="bnvg_strict_numbers",
        action="store_true",
        help="fail on any number that differs from its snapshot, fragile or not "
        "(for the reference machine)",
    )
    group.addoption(
        "--torch-threads",
        dest="bnvg_torch_threads",
        type=int,
        default=1,
        metavar="N",
        help="torch intra-op threads in every process that computes (default 1; "
        "the reference numbers need 1: only the sweep sets another)",
    )
    group.addoption(
        "--sampler-seed",
        dest="bnvg_sampler_seed",
        type=int,
        default=None,
        metavar="K",
        help="seed of the minibatch sampler alone (default: the workshop's seed; for the sweep)",
    )
    group.addoption(
        "--diagrams",
        dest="bnvg_diagrams",
        metavar="DIR",
        default=None,
        help="where the claims draw the workshop's figures (default: diagrams/ under the rootdir)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "log_lines(*keys): the results.log lines this claim owns (see bnvg.layout.slot_keys())",
    )
    # One intra-op thread in every process that computes: the thread count changes the
    # training-end numbers. An xdist controller computes nothing, and skips importing torch.
    threads = config.getoption("bnvg_torch_threads")
    if threads < 1:
        raise pytest.UsageError(f"--torch-threads must be at least 1, got {threads}")
    if not is_xdist_controller(config):
        import torch

        torch.set_num_threads(threads)
    workshop = config.getoption("bnvg_workshop")
    if workshop:
        if not Path(workshop).is_dir():
            raise pytest.UsageError(f"--workshop {workshop}: no such folder")
        if workshop not in config.args:
            config.args.append(workshop)  # so its Markdown files are collected
    config.stash[TRAINED] = []
    if not hasattr(config, "workerinput"):
        writer = ResultsLogWriter(
            results_log_path(config), config.stash[TRAINED], snapshot_dir(config), threads
        )
        config.stash[WRITER] = writer
        config.pluginmanager.register(writer, "bnvg-results-log")


def is_xdist_controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput") and getattr(config.option, "dist", "no") != "no"


def snapshot_dir(config: pytest.Config) -> Path:
    return config.rootpath / "snapshots"


def results_log_path(config: pytest.Config) -> Path:
    option = config.getoption("bnvg_results_log")
    return Path(option) if option else config.rootpath / "captures" / "results.log"


def diagrams_path(config: pytest.Config) -> Path:
    option = config.getoption("bnvg_diagrams")
    return Path(option) if option else config.rootpath / "diagrams"


@pytest.fixture(scope="session")
def diagrams_dir(pytestconfig: pytest.Config) -> Path:
    """The folder the claims draw their figures into."""
    path = diagrams_path(pytestconfig)
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Refuse a suite in which a log line has no valid name or two owners; run citations
    last, because they read the log the claims before them verified."""
    items.sort(key=lambda item: isinstance(item, CitationItem))
    valid = set(log_layout.slot_keys())
    owner: dict[str, str] = {}
    for item in items:
        for key in owned_keys(item):
            if key not in valid:
                raise pytest.UsageError(
                    f"{item.nodeid} owns log line {key!r}, which results.log does not have; "
                    "valid names are listed by bnvg.layout.slot_keys()"
                )
            if key in owner:
                first, second = sorted([owner[key], item.nodeid])
                raise pytest.UsageError(f"log line {key!r} is owned by both {first} and {second}")
            owner[key] = item.nodeid


# -- citations of the log in the workshop's Markdown (--workshop DIR) ---------------------------


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    workshop = parent.config.getoption("bnvg_workshop")
    if (
        workshop
        and file_path.suffix == ".md"
        and Path(workshop).resolve() in file_path.resolve().parents
    ):
        return MarkdownFile.from_parent(parent, path=file_path)
    return None


class MarkdownFile(pytest.File):
    """A Markdown module of the workshop: one test per citation of the log."""

    def collect(self) -> Iterable[pytest.Item]:
        seen: dict[int, int] = {}
        shown = _relative(self.path, self.config.rootpath)
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


def sentence_of(item: pytest.Item) -> str:
    doc = getattr(getattr(item, "function", None), "__doc__", None) or ""
    return " ".join(doc.strip().split("\n\n")[0].split())


def pytest_runtest_setup(item: pytest.Item) -> None:
    keys = owned_keys(item)
    if keys:
        item.user_properties.append((OWNS, keys))
    if not isinstance(item, CitationItem):
        item.user_properties.append((SENTENCE, sentence_of(item)))


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if hasattr(config, "workerinput"):
        trained: list[str] = config.stash[TRAINED]
        config.workeroutput[TRAINED_OUTPUT] = trained  # type: ignore[attr-defined]


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto` (the default in pyproject.toml) runs a full suite on every core, but a
    narrowed selection in this one process: `-k`, `-m`, a test file or a node id needs a
    few claims, and starting workers (each importing torch) would cost more than it saves.
    PYTEST_XDIST_AUTO_NUM_WORKERS still decides when set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    narrowed = (
        config.getoption("bnvg_workshop")  # citations read the whole log: one process
        or config.option.keyword
        or config.option.markexpr
        or any("::" in arg or Path(arg).is_file() for arg in config.args)
    )
    return 0 if narrowed else None


def pytest_unconfigure(config: pytest.Config) -> None:
    writer = config.stash.get(WRITER, None)
    if writer is not None:
        del config.stash[WRITER]
        config.pluginmanager.unregister(writer)
