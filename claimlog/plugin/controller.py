"""The session's controller: what every claim did, the session's outputs, and its summary.

It runs in one process only (the only process, or xdist's controller) and learns everything
from the test reports (`ClaimOutcome`). At the end of the session it writes

- **results.log**, laid out as the workshop declares it (its `Log`), so every
  line keeps the number the text cites: a line whose claim passed holds the verified text; a
  line whose claim failed, or that no claim filled, a `[not verified: ...]` marker; a run that
  left lines unfilled (-k, -m, -x, an interrupt) never replaces a complete log; the file is
  replaced atomically;
- the claims report (--claims-report) and the session record (--record);
- on a full `--snapshot-update`, the reference identity (`snapshots/environment.json`), and
  the numbers snapshots no claim reads any more are deleted (a full normal run fails naming
  them); an update in which a claim failed records nothing at all: the record holds only
  what every claim verified, and the whole update rolls back; an update that leaves the
  identity missing or damaged says so, since a normal run refuses to start without it;

and says in the terminal summary what it wrote, what it trained or reused, where this run
computed and what drifted, and whether the sweep's evidence is stale.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from claimlog.declaration import seed_variant_name
from claimlog.evidence.record import ClaimOutcome, Record
from claimlog.evidence.verdicts import Moved, moved_in_the_recipe
from claimlog.log.lines import PublishedLogError
from claimlog.places import differing_figures, differing_lines, extra_figures
from claimlog.platform import Platform
from claimlog.plugin.options import (
    UPDATE,
    UPDATE_COMMAND,
    Settings,
    is_citation,
    narrowed,
    owned_keys,
    sentence_of,
)
from claimlog.plugin.outcomes import NOT_VERIFIED, LogAssembly, assemble_log, take
from claimlog.plugin.session import (
    ClaimSession,
    take_worker_output,
)
from claimlog.store import COMPUTED, REUSED, Event, atomic_write, relative


def is_complete_log(path: Path, n_lines: int) -> bool:
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError):
        return False
    return NOT_VERIFIED not in text and len(text.splitlines()) == n_lines


def write_log(path: Path, log: LogAssembly, n_claims: int, rootdir: Path) -> str:
    """Write the log unless a partial run would replace a complete one; say what happened."""
    shown = relative(path, rootdir)
    if log.missing and is_complete_log(path, log.n_lines):
        return (
            f"kept {shown}: this run filled {log.verified} of "
            f"{log.verified + log.failed + log.missing} claim lines, and a partial log "
            "never replaces a complete one (run `pytest claims/` to rewrite it)"
        )
    atomic_write(path, log.text)
    state = (
        "complete"
        if log.complete
        else f"incomplete: {log.failed} lines failed, {log.missing} not run"
    )
    return f"wrote {shown}: {log.verified} verified lines from {n_claims} passing claims ({state})"


# -- what a normal run computed, against the record ------------------------------------------
def clear_obtained(s: Settings, drawn: Sequence[str]) -> None:
    """The obtained folder holds what this run computed and nothing an earlier run left: its
    log is written anew (a narrowed run's is partial), and a figure this run did not draw is
    removed. Only a session that ran claims touches it (`pytest tests/` leaves it alone)."""
    places = s.places
    if s.results_log == places.obtained_results_log:
        s.results_log.unlink(missing_ok=True)
    if s.diagrams == places.obtained_diagrams and s.diagrams.is_dir():
        for png in s.diagrams.glob("*.png"):
            if png.name not in drawn:
                png.unlink(missing_ok=True)


def against_the_record(s: Settings, drawn: Sequence[str], root: Path) -> list[str]:
    """How the log and figures a normal run wrote compare with the committed ones, for
    people: identical, or the lines and figures that differ and where to look."""
    places = s.places
    log, committed_log = relative(s.results_log, root), relative(places.results_log, root)
    figures, committed_figures = relative(s.diagrams, root), relative(places.diagrams, root)
    out = [
        f"{log} and {figures}/ hold what this run computed; the record ({committed_log}, "
        f"{committed_figures}/, snapshots/) changes only under a completed `{UPDATE_COMMAND}`"
    ]
    try:
        here, there = s.results_log.read_text(), places.results_log.read_text()
    except OSError:
        here, there = "", None
    if there is None:
        out.append(f"{committed_log} is not committed: nothing to compare {log} with")
    elif here == there:
        out.append(f"{log} is byte-identical to {committed_log}")
    else:
        # A narrowed run leaves the lines no claim of it ran as markers: not a difference.
        ours = enumerate(here.splitlines(), start=1)
        markers = {n for n, line in ours if line.endswith("-- no claim ran]")}
        lines = [n for n in differing_lines(here, there) if n not in markers]
        unrun = (
            f"; the {len(markers)} lines no claim of this run wrote are left out" if markers else ""
        )
        if not lines:
            out.append(f"{log} says what {committed_log} says on every line it verified{unrun}")
        else:
            shown = ", ".join(map(str, lines[:12])) + (", ..." if len(lines) > 12 else "")
            out.append(
                f"{log} differs from {committed_log} at {len(lines)} "
                f"line{'s' if len(lines) > 1 else ''}: {shown} (diff {committed_log} {log})" + unrun
            )
    if not drawn:
        return out
    # As `python -m claimlog.runner` compares them, narrowed to the figures this run drew.
    moved = {*differing_figures(s.diagrams, places), *extra_figures(s.diagrams, places)}
    differ = sorted(moved & set(drawn))
    if not differ:
        n = len(set(drawn))
        out.append(
            f"{n} figure{'s' if n > 1 else ''} drawn, each byte-identical to {committed_figures}/"
        )
    else:
        out.append(
            f"{len(differ)} of {len(set(drawn))} figures differ from {committed_figures}/ "
            f"(this run's are in {figures}/): " + ", ".join(differ)
        )
    return out


# -- the controller -------------------------------------------------------------------------
class Controller:
    """Collects every claim's outcome and writes the session's files (controller only)."""

    def __init__(self, session: ClaimSession) -> None:
        self.session = session
        self.config = session.config
        self.settings = session.settings
        self.claims: dict[str, ClaimOutcome] = {}
        self.platform: Platform | None = None
        self.standing: dict[str, str] = {}
        self.summary: list[str] = []
        self.log: LogAssembly | None = None
        self.unused_numbers: list[str] = []
        self.obtained: list[str] = []  # how this run's log and figures compare with the record
        # What an update did (or, not completing, would do) to files beside the record: the
        # text's quotes it rewrote and left (`claimlog.plugin.text`); None where no feature
        # follows the numbers into documents.
        self.rewritten: list[str] | None = None
        self.completed: bool | None = None  # under an update: whether it was written, at its end
        self._recipe: list[Moved] | None = None  # the recipe's own readings that moved
        # Other seeds than the workshop's (--sampler-seed 3): every claim is of another experiment.
        self.another_experiment = seed_variant_name(self.settings.seeds) is not None

    # -- collecting --------------------------------------------------------------------------
    def add_report(self, report: pytest.TestReport) -> None:
        """Every test report, xdist workers' too."""
        take(self.claims.setdefault(report.nodeid, self._outcome()), report)
        if report.failed and self.settings.update:
            # The failing claim never used its snapshot; syrupy would delete it as unused.
            self.config.option.no_cleanup = True

    def deselected(self, items: list[pytest.Item]) -> None:
        """Deselected claims are "not run" in the claims report and the record."""
        for item in items:
            if not is_citation(item):
                self.claims.setdefault(
                    item.nodeid, self._outcome(owns=owned_keys(item), sentence=sentence_of(item))
                )

    def _outcome(self, **known: Any) -> ClaimOutcome:
        """A claim's outcome, before its reports: of another experiment in a seed session."""
        return ClaimOutcome(another_experiment=self.another_experiment, **known)

    def worker_done(self, node: Any) -> None:
        """An xdist worker finished: add the runs it trained and the platform it used."""
        output = getattr(node, "workeroutput", {})
        platform, standing = take_worker_output(self.session, output)
        self.platform = self.platform or platform
        self.standing = self.standing or dict(standing)

    def events_of(self, what: str, kind: str) -> list[Event]:
        """Every `what` ("computed", "reused", "damaged") of a `kind` this session, in any
        process (the session holds what its workers did)."""
        return [e for e in self.session.cache.events if e.what == what and e.kind == kind]

    def names_of(self, what: str, kind: str) -> list[str]:
        """Their names, each once (every xdist worker loads what it needs)."""
        return list(dict.fromkeys(e.name for e in self.events_of(what, kind)))

    @property
    def claim_outcomes(self) -> dict[str, ClaimOutcome]:
        return {k: v for k, v in self.claims.items() if not v.citation}

    def failed(self) -> list[str]:
        """Everything this session judged that failed, claims and the text's citations
        alike, each with why in one line (a citation's names where it stands)."""
        return [
            v.why if v.citation else f"{k}: {v.why}"
            for k, v in sorted(self.claims.items())
            if v.failed
        ]

    def rolls_back(self, session: pytest.Session) -> bool:
        """Whether this session's update, if it is one, is rolled back at its end: anything
        it judged failed (a claim, a citation of the text, a notebook that would not run, the
        evidence it could not compute), it was interrupted, or a computation was refused as
        not deterministic. An update is all or nothing."""
        unfinished = session.exitstatus != pytest.ExitCode.OK
        return unfinished or bool(self.failed()) or bool(self.session.recording.refused)

    def full(self, session: pytest.Session) -> bool:
        """Whether this session ran every claim to its end, and every one passed: only then
        does it tidy the numbers snapshots, and an update record the reference."""
        claims = self.claim_outcomes
        return (
            not narrowed(self.config)
            and any(c.ran for c in claims.values())
            and not any(c.failed for c in self.claims.values())
            and session.exitstatus != pytest.ExitCode.INTERRUPTED
        )

    def assemble(self) -> LogAssembly:
        """The log as this session has verified it so far."""
        return assemble_log(self.claim_outcomes, self.session.log)

    # -- writing -----------------------------------------------------------------------------
    def finish(self, session: pytest.Session) -> None:
        """Write the session's files, once every claim has reported."""
        s, root = self.settings, self.config.rootpath
        claims = self.claim_outcomes
        if self.platform is None and any(c.ran for c in claims.values()):
            self.platform = self.session.here.platform
            if not s.update:
                self.standing = self.session.evidence.standing_json()
        if any(c.owns and c.ran for c in claims.values()):
            self.log = self.assemble()
            n_claims = sum(1 for c in claims.values() if c.passed and c.lines)
            obtained = not s.update and seed_variant_name(s.seeds) is None
            if obtained:
                clear_obtained(s, self._drawn())
            if s.update and self.rolls_back(session):  # the log would go with the rest
                self.summary.append(f"did not write {relative(s.results_log, root)} (below)")
            else:
                self.summary.append(write_log(s.results_log, self.log, n_claims, root))
            if obtained:
                self.obtained = against_the_record(s, self._drawn(), root)
            seeds = seed_variant_name(s.seeds)
            if seeds is not None:
                self.summary.append(
                    f"{seeds} is another experiment than the workshop's: its log and figures "
                    f"are in {relative(s.results_log.parent, root)} and "
                    f"{relative(s.diagrams, root)}, never in captures/ or diagrams/"
                )
        if self.full(session):
            self._tidy_numbers(session)
        # The features that follow the log (the workshop's text, then the reports, which
        # say what it found), inside the update's transaction.
        self.config.hook.pytest_claimlog_finish(controller=self, session=session)
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
        """What this session did, for `--record` (the runner's and the sweep's jobs')."""
        from claimlog.evidence.keys import code_of

        claims, s = self.claim_outcomes, self.settings
        return Record(
            exitstatus=int(session.exitstatus),
            claims=claims,
            citations={nodeid: c for nodeid, c in self.claims.items() if c.citation},
            readings={name: r for c in claims.values() for name, r in c.readings.items()},
            tables={name: t for c in claims.values() for name, t in c.tables.items()},
            events=tuple(self.session.cache.events),
            platform=self.platform.to_json() if self.platform else {},
            standing=self.standing,
            options={
                "torch threads": s.torch_threads,
                **{f"{axis} seed": seed for axis, seed in s.seeds.items()},
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
            keys=dict(self.session.evidence.keys),
            code=code_of(self.session.workshop),
        )

    def _drawn(self) -> list[str]:
        """The figures this session drew, or copied from pytest's cache, into its folder (in
        any process): a claim that failed before drawing drew nothing."""
        return [*self.names_of(COMPUTED, "figure"), *self.names_of(REUSED, "figure")]

    @property
    def moved(self) -> list[Moved]:
        """Every reading that prints otherwise than its snapshot, in log order; and every
        reading of a line the recipe fills (a section's steps) that prints otherwise than
        the record's log (`moved_in_the_recipe`)."""
        found = {m.reading.name: m for c in self.claim_outcomes.values() for m in c.moved.values()}
        for m in self._recipe_moved():
            found.setdefault(m.reading.name, m)
        return sorted(found.values(), key=lambda m: (m.line, m.reading.name))

    def _recipe_moved(self) -> list[Moved]:
        if self._recipe is None:
            self._recipe = []
            record = self.settings.places.results_log
            update = self.config.pluginmanager.get_plugin(UPDATE)
            if update is not None:  # the record as it was before this update began
                record = update.before(record)
            if self.claim_outcomes and record.is_file():
                try:
                    recorded = self.session.cache.read_log(record)
                except PublishedLogError:
                    return []  # another layout: its lines are not these lines
                fixed = self.session.log.fixed_lines()
                self._recipe = moved_in_the_recipe(recorded, fixed)
        return self._recipe


CONTROLLER = pytest.StashKey[Controller]()  # on the controller's config only


def controller_of(config: pytest.Config) -> Controller | None:
    """The session's controller: None in an xdist worker, or before the session configured."""
    return config.stash.get(CONTROLLER, None)
