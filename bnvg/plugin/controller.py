"""The session's controller: it gathers every claim's evidence and writes the session's files.

It runs in one process only (the only process, or xdist's controller) and learns everything
from the test reports. At the end of the session it writes results.log, the claims report
(--claims-report) and the session record (--record), keeps the numbers snapshots tidy, and
says in the terminal summary what it wrote, what it trained and which numbers drifted.

Numbers snapshots are tidied only by a full run (nothing narrowed by -k, -m or a node id, and
every claim passed): a full `--snapshot-update` deletes the files no claim reads any more,
and a full normal run fails naming them. An update in which a claim failed deletes nothing at
all, syrupy's files included: a failing claim did not use its snapshot, and must not lose it.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from bnvg.evidence.record import ClaimResult, Record
from bnvg.evidence.tables import Table
from bnvg.evidence.verdicts import NEW
from bnvg.experiment import platform
from bnvg.files import atomic_write, relative
from bnvg.log.readings import Reading
from bnvg.plugin import claims_report, results_log
from bnvg.plugin.collection import is_citation, narrowed
from bnvg.plugin.options import SETTINGS, UPDATE_COMMAND, Settings, is_controller, settings
from bnvg.plugin.outcomes import ClaimOutcome, owned_keys, sentence_of
from bnvg.plugin.platform_facts import process_facts
from bnvg.plugin.runs import RUN_EVENTS, RUN_EVENTS_OUTPUT
from bnvg.plugin.standing import recorded_platform

PLATFORM_OUTPUT = "bnvg_platform"  # the platform an xdist worker computed on
STANDING_OUTPUT = "bnvg_standing"  # where that platform stands with the evidence


class Controller:
    """Collects every claim's outcome and writes the session's files (controller only)."""

    def __init__(self, config: pytest.Config, s: Settings) -> None:
        self.config = config
        self.settings = s
        self.claims: dict[str, ClaimOutcome] = {}
        self.platform: dict[str, str] = {}
        self.standing: dict[str, str] = {}
        self.summary: list[str] = []
        self.log: results_log.LogAssembly | None = None
        self.unused_numbers: list[str] = []

    # -- collecting --------------------------------------------------------------------------
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Called on the controller for xdist workers' reports too."""
        self.claims.setdefault(report.nodeid, ClaimOutcome()).add(report)
        if report.failed and self.settings.update:
            # The failing claim never used its snapshot; syrupy would delete it as unused.
            self.config.option.no_cleanup = True

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        """Deselected claims are "not run" in the claims report and the record."""
        for item in items:
            if not is_citation(item):
                self.claims.setdefault(
                    item.nodeid, ClaimOutcome(owns=owned_keys(item), sentence=sentence_of(item))
                )

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """An xdist worker finished: add the runs it trained and the platform it used."""
        output = getattr(node, "workeroutput", {})
        self.config.stash[RUN_EVENTS].extend(tuple(e) for e in output.get(RUN_EVENTS_OUTPUT, []))
        self.platform = self.platform or dict(output.get(PLATFORM_OUTPUT, {}))
        self.standing = self.standing or dict(output.get(STANDING_OUTPUT, {}))

    def _runs(self, event: str) -> list[tuple[str, Any]]:
        """(name, detail) of every run with `event` this session, in any process."""
        events: list[tuple[str, str, Any]] = self.config.stash[RUN_EVENTS]
        return [(name, detail) for what, name, detail in events if what == event]

    @property
    def trained(self) -> list[str]:
        """The runs trained this session, by this process and every xdist worker."""
        return [name for name, _ in self._runs("trained")]

    @property
    def claim_outcomes(self) -> dict[str, ClaimOutcome]:
        return {k: v for k, v in self.claims.items() if not v.citation}

    def assemble(self) -> results_log.LogAssembly:
        """The log as this session has verified it so far."""
        return results_log.assemble(self.claim_outcomes)

    # -- writing -----------------------------------------------------------------------------
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        s, root = self.settings, self.config.rootpath
        claims = self.claim_outcomes
        if not self.platform and any(c.ran for c in claims.values()):
            self.platform = platform.current(s.torch_threads, process_facts(self.config))
            if not s.update:
                self.standing = _standing_of(self.config)
        if any(c.owns and c.ran for c in claims.values()):
            self.log = self.assemble()
            n_claims = sum(1 for c in claims.values() if c.passed and c.lines)
            self.summary.append(results_log.write(s.results_log, self.log, n_claims, root))
        full = (
            not narrowed(self.config)
            and any(c.ran for c in claims.values())
            and not any(c.failed for c in self.claims.values())
            and session.exitstatus != pytest.ExitCode.INTERRUPTED
        )
        if full:
            self._tidy_numbers(session)
        if full and s.update and self.log is not None and self.log.complete:
            # A full update re-records every number: record the platform that computed them.
            environment = json.dumps(self.platform, indent=2, sort_keys=True) + "\n"
            atomic_write(s.places.environment, environment)
        if s.claims_report:
            invocation = self.config.invocation_params.args
            text = claims_report.render(claims, self.log, s, root, self.platform, invocation)
            atomic_write(s.claims_report, text)
            self.summary.append(f"wrote the claims report {relative(s.claims_report, root)}")
        if s.record:
            self._record(session).save(s.record)

    def _tidy_numbers(self, session: pytest.Session) -> None:
        places = self.settings.places
        used = {f for c in self.claims.values() for f in c.numbers_files}
        stored = {relative(p, places.root) for p in places.numbers.rglob("*.csv")}
        self.unused_numbers = sorted(stored - used)
        if not self.unused_numbers:
            return
        n = len(self.unused_numbers)
        files = f"{n} numbers snapshot{'s' if n > 1 else ''}"
        if self.settings.update:
            for name in self.unused_numbers:
                (places.root / name).unlink()
            self.summary.append(
                f"deleted {files} that no claim reads: " + ", ".join(self.unused_numbers)
            )
        else:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
            self.summary.append(
                f"no claim reads {files} any more: "
                + ", ".join(self.unused_numbers)
                + f". Delete them with `{UPDATE_COMMAND}`"
            )

    def _record(self, session: pytest.Session) -> Record:
        claims = self.claim_outcomes
        readings: dict[str, Reading] = {}
        tables: dict[str, Table] = {}
        for c in claims.values():
            readings.update(c.readings)
            tables.update(c.tables)
        s = self.settings
        return Record(
            exitstatus=int(session.exitstatus),
            claims={nodeid: _result(c) for nodeid, c in claims.items()},
            citations={nodeid: _result(c) for nodeid, c in self.claims.items() if c.citation},
            readings=readings,
            tables=tables,
            trained=tuple(self.trained),
            reused=tuple(dict.fromkeys(name for name, _ in self._runs("reused"))),
            damaged=tuple(dict.fromkeys(name for name, _ in self._runs("damaged"))),
            figures_reused=tuple(dict.fromkeys(n for n, _ in self._runs("figure reused"))),
            results_reused=tuple(dict.fromkeys(n for n, _ in self._runs("result reused"))),
            platform=self.platform,
            standing=self.standing,
            options={
                "torch threads": s.torch_threads,
                "sampler seed": s.sampler_seed,
                "init seed": s.init_seed,
                "update": s.update,
                "strict": s.strict,
                "native kernels": s.native_kernels,
                "kernels chosen by": dict(s.kernels),
            },
            log={
                "path": str(s.results_log),
                "summary": self.summary[0] if self.summary else "",
                "complete": bool(self.log and self.log.complete),
            },
        )

    # -- saying what happened ----------------------------------------------------------------
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        write = terminalreporter.write_line
        if self.summary:
            terminalreporter.write_sep("-", "results.log")
            for line in self.summary:
                write(line)
        trained = self.trained
        if trained:
            write(f"trained {len(trained)} networks this session: " + "; ".join(trained))
        for name, reason in self._runs("damaged"):
            write(f"the cached run {name!r} was damaged ({reason}): trained again")
        for name, reason in self._runs("figure damaged"):
            write(f"the cached drawing of {name} was damaged ({reason}): drawn again")
        reused: dict[str, list[str]] = {}
        for name, detail in self._runs("reused"):  # each xdist worker loads what it needs
            where = platform.describe(detail["platform"])
            names = reused.setdefault(f"trained {detail['trained at']} with {where}", [])
            if name not in names:
                names.append(name)
        for when, names in reused.items():
            networks = "network" if len(names) == 1 else "networks"
            write(
                f"reused {len(names)} {networks} from pytest's cache ({when}): "
                + "; ".join(names)
                + ". --recompute trains them again"
            )
        for name, reason in self._runs("result damaged"):
            write(f"the cached result {name!r} was damaged ({reason}): computed again")
        results = dict.fromkeys(name for name, _ in self._runs("result reused"))
        if results:
            # "init gradient ratio (depth=8, norm=none, act=sigmoid)" and its kind: said once.
            kinds = Counter(name.split(" (")[0] for name in results)
            said = "; ".join(kind if n == 1 else f"{n} x {kind}" for kind, n in kinds.items())
            write(
                f"reused {len(results)} results computed earlier by the same code on this "
                f"platform, from pytest's cache: {said}. --recompute computes them again"
            )
        figures = dict.fromkeys(name for name, _ in self._runs("figure reused"))
        if figures:
            write(
                f"reused {len(figures)} figures drawn earlier from the same numbers by the same "
                "code (copied from pytest's cache; --recompute draws them again)"
            )
        self._say_platform(terminalreporter)
        notes = list(dict.fromkeys(n for c in self.claims.values() for n in c.notes))
        if notes:
            terminalreporter.write_sep("-", "how the cited lessons hold over other seeds")
            for line in notes:
                write(line)
            write("Other seeds are another experiment: these say how general a lesson is, not")
            write("what the cited line prints (snapshots/evidence/robustness.md has every claim).")

    def _say_platform(self, terminalreporter: pytest.TerminalReporter) -> None:
        """What drifted, and on which platform: new to the evidence, or held by it."""
        write = terminalreporter.write_line
        drift = list(dict.fromkeys(d for c in self.claims.values() for d in c.drift))
        kind = self.standing.get("kind")
        if not drift and kind != NEW:
            return
        recorded = recorded_platform(self.settings)
        if kind == NEW:
            terminalreporter.write_sep("-", "this platform is new to the evidence")
            write(
                "Every claim's statement was asserted on this run; the numbers that moved are "
                "drift, not failure:"
            )
        else:
            terminalreporter.write_sep("-", "numbers that drifted")
        for line in drift:
            write(f"  {line}")
        if not drift:
            write("  none: every number is the reference's")
        said = platform.describe(recorded) if recorded else "(unknown: no environment.json)"
        write(f"snapshots recorded with: {said}")
        write(f"this run:                {platform.describe(self.platform)}")
        if kind == NEW:
            # Another torch release is added by its own command, which records only the
            # reference kernels: its numbers then say what that release moves, nothing else.
            other_torch = recorded and recorded.get("torch") != self.platform.get("torch")
            command = (
                "python -m bnvg.sweep --release" if other_torch else "python -m bnvg.sweep --here"
            )
            write(
                "To add this platform to the evidence (so its numbers are then compared "
                f"exactly): {command}"
            )
        write("--strict-numbers fails on any number that is not the reference's.")


def _result(claim: ClaimOutcome) -> ClaimResult:
    return ClaimResult(
        claim.outcome, claim.owns, tuple(claim.readings), tuple(claim.drift), claim.sentence
    )


def _standing_of(config: pytest.Config) -> dict[str, str]:
    from bnvg.plugin.standing import standing

    found = standing(config)
    return {"kind": found.kind, "platform": found.platform, "reference": found.reference}


CONTROLLER = pytest.StashKey[Controller]()


def pytest_configure(config: pytest.Config) -> None:
    if is_controller(config):
        controller = Controller(config, config.stash[SETTINGS])
        config.stash[CONTROLLER] = controller
        config.pluginmanager.register(controller, "bnvg-controller")


def pytest_sessionfinish(session: pytest.Session) -> None:
    """An xdist worker ships the platform it computed on (the controller imports no torch)."""
    config = session.config
    if hasattr(config, "workerinput"):
        s = settings(config)
        output = config.workeroutput  # type: ignore[attr-defined]
        output[PLATFORM_OUTPUT] = platform.current(s.torch_threads, process_facts(config))
        if not s.update:
            output[STANDING_OUTPUT] = _standing_of(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    controller = config.stash.get(CONTROLLER, None)
    if controller is not None:
        del config.stash[CONTROLLER]
        config.pluginmanager.unregister(controller)
