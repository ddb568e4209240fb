"""The pytest plugin of bnvg, loaded by the root conftest.py.

It writes captures/results.log from the claims that passed (see `bnvg.results_log` for the
rules that keep every line at the number the text cites), checks the claims' numbers
against their snapshots (`bnvg.quoting`), checks the workshop's citations of the log
(`--workshop`, `bnvg.citation_items`) and writes the claims report (`--claims-report`,
`bnvg.claims_report`). This module holds only the options, the fixtures and the hooks.

It also pins torch to one intra-op thread (--torch-threads) in every process that computes:
the thread count changes training results, and the log must not depend on the machine.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bnvg import layout as log_layout
from bnvg.citation_items import CitationItem, MarkdownFile
from bnvg.quoting import Quoted
from bnvg.results_log import (
    OWNS,
    SENTENCE,
    TRAINED_OUTPUT,
    WRITER,
    ResultsLog,
    ResultsLogWriter,
    owned_keys,
    sentence_of,
)
from bnvg.settings import diagrams_path, is_xdist_controller, results_log_path, snapshot_dir


@pytest.fixture
def quoted(request: pytest.FixtureRequest, results_log: ResultsLog) -> Quoted:
    """Verifies a claim's log lines against its snapshot and writes them to the log."""
    return Quoted(request, results_log)


@pytest.fixture
def results_log(request: pytest.FixtureRequest) -> ResultsLog:
    """Hands a claim's verified lines to captures/results.log."""
    return ResultsLog(request.node)


# -- hooks ------------------------------------------------------------------------------------

TRAINED = pytest.StashKey[list[str]]()  # names of the runs this process trained


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
