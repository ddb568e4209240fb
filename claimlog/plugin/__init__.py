"""The pytest plugin of claimlog, found by pytest through its `pytest11` entry point.

The entry point adds one ini option, the declaration (`claimlog.declaration`), and nothing
else happens in a folder whose configuration declares no workshop. Where one is declared,
before the first conftest is read, it sets the reference kernels (`claimlog.platform`: numpy
reads its part when it is imported, which the plugin's own modules do next, and the options
decide torch's part again before torch is imported), makes the session's one state, a
`ClaimSession` on the config (`claimlog.plugin.session`), and registers the plugin object
that holds every hook (`Claims`, as pytest registers its own features only where they are
used), the fixtures and the workshop's own plugins. The modules of the plugin:

- `options`: the command line and the markers, read once into the session's `Settings`;
- `session`: the `ClaimSession`: the workshop, the settings, the platform this process
  computes on, pytest's cache, the evidence (where the platform stands: reference, held,
  new), the update;
- `recording`: the kernels the computations call, recorded by a full update;
- `outcomes`: the channel a claim's reports carry to the controller, and what the controller
  learns of each claim; the log the passing claims verify;
- `quoting`: `quoted`, a claim's readings and lines checked against the two snapshot
  libraries (pytest-regressions' numbers, syrupy's text), then handed to the log;
- `fixtures`: what every workshop's claims read: `quoted`, `figure`, `runs`, `computed`,
  the evidence;
- `controller`: on the controller (the only process, or xdist's), what every claim did; it
  writes the session's outputs (results.log, the record, the reference identity) and its
  summary;
- `hookspecs`: what the core asks of its feature plugins, which it never imports.

The features are plugins of their own, each with its entry point, `-p no:`-able:
- `claimlog.text`: `text` (--workshop DIR) and `citations`, one test per citation of the log
  in the text (Markdown, Quarto, notebooks) and the quotes an update rewrites;
- `claimlog.reports`: `reports` (--claims-report PATH) and `reporting`, the claims report and
  pytest-html's extras;
- `claimlog.evidence`: `evidence` and `standing`, the sweep's evidence a session reads (each
  claim's key, the sweep's table, where the platform stands with it), in place of the
  core's `Evidence`, which knows none;
- `claimlog.update`: `update`, the record's update as one transaction, the reference and the
  claims' keys it records; without it `--snapshot-update` is refused;
- `claimlog.sweep`: the update's sweep of the stale evidence (`claimlog.sweep.plugin`).
"""

from __future__ import annotations

import atexit
import importlib
import os
import sys
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest

from claimlog.declaration import INI_NAME, load
from claimlog.plugin import hookspecs

if TYPE_CHECKING:
    from claimlog.plugin.controller import Controller
    from claimlog.plugin.session import ClaimSession

FIXTURES = "claimlog.plugin.fixtures"  # the fixtures every workshop's claims read

# Said in one line each, once pytest's capture of conftest loading is over (pytest_configure).
CAME_FIRST = {
    "torch": (
        "claimlog: torch was imported before claimlog could set the reference kernels (by a "
        "plugin or conftest loaded first, or PYTHONSTARTUP): it may compute with its own, as "
        "the platform's fingerprint will show; set ATEN_CPU_CAPABILITY=avx2 "
        "MKL_CBWR=COMPATIBLE ONEDNN_MAX_CPU_ISA=AVX2 before Python starts to compute the "
        "reference's\n"
    ),
    "numpy": (
        "claimlog: numpy was imported before claimlog could cap its vectors at AVX2 (by a "
        "plugin loaded first: pytest-randomly imports it, `-p no:randomly` keeps it out): it "
        "computes with its own, and the platform says so\n"
    ),
}


# -- what pytest finds through the entry point: the declaration, and nothing else -------------
def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        INI_NAME,
        "the workshop this folder's claims belong to, as 'package.module:NAME' (a "
        "claimlog.Declaration); without it claimlog does nothing",
        default="",
    )


# Not tryfirst: pytest's own `pythonpath` ini option is applied first, so a workshop that is
# not installed can be imported from its folder. Before the first conftest all the same.
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Where the configuration declares a workshop: the reference kernels, the session, and
    the plugin that does the work (`Claims`), registered as pytest registers its own
    features, only when they are used. Elsewhere claimlog adds one ini option and no hook."""
    spec = str(early_config.getini(INI_NAME))
    if not spec:
        return
    from claimlog.machine import NUMPY_FOLDER
    from claimlog.platform import NUMPY_VARIABLE, TORCH_VARIABLES, applied
    from claimlog.plugin.options import early_store

    reads = {"torch": TORCH_VARIABLES, "numpy": (NUMPY_VARIABLE,)}
    _, changed = applied(store=early_store(early_config, NUMPY_FOLDER))
    # torch and numpy read their variables as they are imported: one imported already
    # computes with its own choice (the platform says what), not the reference's.
    imported_first = [
        module
        for module, variables in reads.items()
        if module in sys.modules and any(n in changed for n in variables)
    ]
    try:
        workshop = load(spec, str(early_config.inipath))
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None
    from claimlog.plugin.session import SESSION, ClaimSession

    session = early_config.stash[SESSION] = ClaimSession(early_config, workshop)
    manager = early_config.pluginmanager
    manager.add_hookspecs(hookspecs)  # what the core asks of its feature plugins
    manager.register(Claims(session, imported_first), CLAIMS_PLUGIN)
    # The engine's fixtures are registered as imported (pytest would warn that an imported
    # module cannot be rewritten for its asserts, which they need not).
    if not manager.is_registered(module := importlib.import_module(FIXTURES)):
        manager.register(module, FIXTURES)
    for name in workshop.plugins:  # the workshop's, as a conftest's pytest_plugins would
        manager.import_plugin(name)


CLAIMS_PLUGIN = "claimlog.claims"  # the name `Claims` is registered under
EVIDENCE_OFF = "reads the sweep's evidence, which this session does not (-p no:claimlog.evidence)"


class Claims:
    """claimlog's hooks, on a session whose configuration declares a workshop: each a few
    lines, handing the work to the module that does it. Registered by
    `pytest_load_initial_conftests` only there, so none asks whether a workshop is declared."""

    def __init__(self, session: ClaimSession, imported_first: list[str]) -> None:
        self.session = session
        self.config = session.config
        self.imported_first = imported_first

    def _controller(self) -> Controller | None:
        """The session's controller (the only process's, or xdist's controller's)."""
        from claimlog.plugin.controller import controller_of

        return controller_of(self.config)

    # -- starting -----------------------------------------------------------------------------
    def pytest_addoption(self, parser: pytest.Parser) -> None:
        """The workshop's options, its seed axes among them: pytest calls a plugin's
        `pytest_addoption` as it registers, before the command line is parsed."""
        from claimlog.plugin.options import add_options

        add_options(parser, self.session.workshop)

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        for module in self.imported_first:  # said once pytest's capture of conftests is over
            sys.stderr.write(CAME_FIRST[module])
        from claimlog.plugin.controller import CONTROLLER, Controller
        from claimlog.plugin.options import add_markers, is_controller

        add_markers(config, self.session.log)
        self.session.configure()
        if is_controller(config):
            config.stash[CONTROLLER] = Controller(self.session)

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        """Before the first test: what the session found before it began (an update
        interrupted, undone), and where this run stands (`summary.header_line`)."""
        from claimlog.plugin.options import runs_claims

        session = self.session
        if not session.configured:
            return []
        lines = [session.recovered] if session.recovered else []
        if runs_claims(config):
            from claimlog.plugin.summary import header_line

            lines.append(header_line(session))
        return lines

    @pytest.hookimpl(tryfirst=True, optionalhook=True)
    def pytest_xdist_auto_num_workers(self, config: pytest.Config) -> int | None:
        return auto_num_workers(config)

    # -- collecting ---------------------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """Citations run last, because they read the log the claims before them verified; a
        claim that owns an unknown line, or a line two claims own, stops the session. A claim
        marked `evidence` reads the sweep's tables: without them it is skipped, saying why."""
        from claimlog.plugin.options import check_owners, is_citation

        items.sort(key=is_citation)
        check_owners(items, self.session.log)
        if not self.session.evidence.active:
            unread = pytest.mark.skip(reason=EVIDENCE_OFF)
            for item in items:
                if item.get_closest_marker("evidence") is not None:
                    item.add_marker(unread)

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        controller = self._controller()
        if controller is not None:
            controller.deselected(items)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        from claimlog.plugin.fixtures import note_needed_runs

        note_needed_runs(session)

    # -- running ------------------------------------------------------------------------------
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """A claim tells the controller the lines it owns and its sentence, before it runs."""
        from claimlog.plugin.options import is_citation, owned_keys, sentence_of
        from claimlog.plugin.outcomes import OWNS, SENTENCE, channel

        keys = owned_keys(item)
        if keys:
            channel(item).append((OWNS, keys))
        if not is_citation(item):
            sentence = sentence_of(item)
            channel(item).append((SENTENCE, sentence))
            item.user_properties.append(("sentence", sentence))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, Any]:
        """A claim that read a moved history but never quoted still fails, naming it."""
        result = yield
        from claimlog.plugin.numbers import raise_pending

        raise_pending(item)
        return result

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """Each report carries, as `report.claimlog`, what the claim put on its channel since
        the previous phase's report: every payload crosses to the controller once."""
        report = yield
        from claimlog.plugin.outcomes import SENT, channel

        sent = item.stash.get(SENT, 0)
        payloads = channel(item)
        report.claimlog = payloads[sent:]  # type: ignore[attr-defined]
        item.stash[SENT] = len(payloads)
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Every report reaches the controller, xdist workers' too."""
        controller = self._controller()
        if controller is not None:
            controller.add_report(report)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """An xdist worker finished: the controller adds the runs it trained and its
        platform."""
        controller = self._controller()
        if controller is not None:
            controller.worker_done(node)

    # -- finishing ----------------------------------------------------------------------------
    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """On the controller, after every other plugin wrote its files (syrupy's included):
        the session's files are written (the update, `claimlog.plugin.update`, then puts them
        into place or rolls them back). An xdist worker ships what it found (the controller
        imports no torch)."""
        claims = self.session
        if not claims.configured:
            return
        controller = self._controller()
        if controller is not None:
            controller.finish(session)
        if hasattr(session.config, "workerinput"):
            from claimlog.plugin.session import worker_output

            session.config.workeroutput.update(worker_output(claims))  # type: ignore[attr-defined]

    @pytest.hookimpl(tryfirst=True)  # before syrupy's report, which follows in its own section
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        controller = self._controller()
        if controller is not None:
            from claimlog.plugin.summary import summarize

            summarize(controller, terminalreporter)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        from claimlog.plugin.controller import CONTROLLER

        if CONTROLLER in config.stash:
            del config.stash[CONTROLLER]
        if hasattr(config, "workerinput"):
            atexit.register(_end_without_teardown)


def auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto` runs a full suite on every core, but a narrowed selection of claims in this
    one process: `-k`, `-m`, a test file or a node id needs a few claims, and starting
    workers (each importing torch) would cost more than it saves (the text's citations, which
    read the whole log, ask for one process too: `claimlog.plugin.text`); and when pytest's
    cache holds every trained
    run, the claims leave nothing worth a second process (other tests beside them, such as
    the project's own, still use every core). PYTEST_XDIST_AUTO_NUM_WORKERS still decides."""
    from claimlog.plugin.options import narrowed, only_claims, runs_claims
    from claimlog.plugin.session import SESSION, every_run_kept

    session = config.stash.get(SESSION, None)
    if session is None or os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    if narrowed(config) and runs_claims(config):
        return 0
    if only_claims(config) and every_run_kept(session):
        return 0
    return None


def _end_without_teardown() -> None:
    """How an xdist worker's process ends once its session has finished and shipped its
    reports and output: without the interpreter's teardown, which frees torch's, dynamo's and
    matplotlib's modules one object at a time (about a second), while the controller waits
    for every worker to end before it writes the log. The session's files are closed by now;
    its outcome travels in its reports, never in the worker's exit status."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
