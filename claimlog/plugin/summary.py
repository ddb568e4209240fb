"""What the terminal says of a claims session: the header line before the first test, and the
summary after the last (what was written, trained or reused, what moved, where this run
computed and what drifted, whether the sweep's evidence is stale).
"""

from __future__ import annotations

import os
import shlex
from collections import Counter

import pytest

from claimlog.declaration import seed_variant_name
from claimlog.evidence.fragility import EMPTY
from claimlog.evidence.verdicts import HELD, NEW, REFERENCE
from claimlog.kernels import differing, family, reference_kernels
from claimlog.machine import THREADS
from claimlog.platform import REFERENCE_DEFAULT, USER, Platform
from claimlog.plugin.controller import Controller
from claimlog.plugin.options import Settings, narrowed
from claimlog.plugin.session import ClaimSession
from claimlog.store import APART, COMPUTED, DAMAGED, REUSED


def apart(session: ClaimSession) -> str:
    """What sets this platform apart from the reference, for people: the names that
    differ ("torch 2.14.1+cpu, not 2.13.0+cpu"), then the workshop's kernels whose bits
    differ ("2 of its 74 kernels give other bits here than on the reference:
    aten.addmm.default on float32 [300, 32], float32 [32, 32], ...")."""
    reference = session.here.reference()
    if reference is None:
        return "no reference is recorded"
    ours, theirs = session.here.platform.identity(), reference.identity()
    said = [
        f"{name} {ours.get(name, 'not named')}, not {theirs.get(name, 'not named')}"
        for name in dict.fromkeys([*theirs, *ours])
        if name != "fingerprint" and ours.get(name) != theirs.get(name)
    ]
    kernels = reference_kernels(session.settings.places.environment)
    bits = session.here.kernel_bits
    moved = differing(bits, kernels)
    if moved:
        shown = "; ".join(moved[:2]) + (f"; and {len(moved) - 2} more" if len(moved) > 2 else "")
        give = "gives" if len(moved) == 1 else "give"
        named = sorted({family(k) or "" for k in kernels if bits.get(k) != kernels[k]} - {""})
        what = f" ({' and '.join(named)} among them)" if named else ""
        said.append(
            f"{len(moved)} of its {len(kernels)} kernels {give} other bits here than on "
            f"the reference{what}: {shown}"
        )
    return ", ".join(said) or "the same names and bits as the reference"


def header_line(session: ClaimSession) -> str:
    """ "bnvg: the reference platform (...); the evidence is fresh; a full run (...)"."""
    s, sweep = session.settings, session.workshop.sweep_command
    evidence = session.evidence
    here, kind = session.here.platform, evidence.standing.kind
    if s.update:
        where = f"an update on {here.describe()}: the snapshots will hold its numbers"
    elif kind == REFERENCE:
        where = (
            f"the reference platform ({here.describe()}): every number compared with the "
            "snapshots, bit for bit"
        )
    elif kind == HELD:
        where = (
            f"a platform the evidence holds ({here.id}): every number compared with its "
            "own fragment, bit for bit"
        )
    else:
        where = (
            f"a platform new to the evidence ({here.describe()}; {apart(session)}): the "
            "claims' sentences decide, and a number that moved is drift while the "
            "evidence says the code is the record's"
        )
    seeds = seed_variant_name(s.seeds)
    if seeds is not None:
        where += f"; at {seeds}, another experiment than the workshop's"
    stale = evidence.stale_claims()
    if not evidence.active:
        said = "the evidence is not read (-p no:claimlog.evidence)"
    elif stale:
        n = len(evidence.committed_fragility().stale_readings(evidence.keys))
        said = (
            f"the evidence of {len(stale)} claim{'s' if len(stale) != 1 else ''} ({n} "
            "readings) is stale" + ("" if s.update else f": {sweep} computes only them")
            # An update says in a line of its own whether it computes it first.
        )
    elif evidence.committed_fragility() is EMPTY:
        said = f"no evidence yet ({sweep})"
    else:
        said = "the evidence is fresh"
    run = (
        "a narrowed run (its log never replaces a complete one)"
        if narrowed(session.config)
        else "a full run"
    )
    return f"{session.workshop.name}: {where}; {said}; {run}"


# -- saying what happened ----------------------------------------------------------------
def summarize(c: Controller, terminalreporter: pytest.TerminalReporter) -> None:
    """The terminal summary: what the session wrote, reused and found."""
    write = terminalreporter.write_line
    recovered = c.session.recovered  # said in the header too, which -q leaves out
    _section(terminalreporter, "before this session began", [recovered] if recovered else [])
    _section(terminalreporter, "results.log", c.summary)
    _section(terminalreporter, "what this run computed, against the record", c.obtained)
    runs = c.events_of(COMPUTED, "run")
    if runs:
        together = sum(1 for e in runs if e.detail and e.detail.get("together"))
        how = f", {together} of them together with others of their shape" if together else ""
        trained = "; ".join(e.name for e in runs)
        write(f"trained {len(runs)} networks this session{how}: {trained}")
    for e in c.events_of(APART, "run"):
        write(
            f"trained {e.name} one at a time: together they gave other bits on this platform "
            "than one at a time (the workshop's canary said so)"
        )
    for kind, again in (("run", "trained"), ("result", "computed"), ("figure", "drawn")):
        for e in c.events_of(DAMAGED, kind):
            write(f"the cached {kind} {e.name!r} was damaged ({e.detail}): {again} again")
    reused: dict[str, list[str]] = {}
    for e in c.events_of(REUSED, "run"):  # each xdist worker loads what it needs
        where = Platform.from_json(e.detail["platform"]).describe()
        names = reused.setdefault(f"trained {e.detail['trained at']} with {where}", [])
        if e.name not in names:
            names.append(e.name)
    for when, names in reused.items():
        networks = "network" if len(names) == 1 else "networks"
        write(
            f"reused {len(names)} {networks} from pytest's cache ({when}): "
            + "; ".join(names)
            + ". --recompute trains them again"
        )
    results = c.names_of(REUSED, "result")
    if results:
        # "init gradient ratio (depth=8, norm=none, act=sigmoid)" and its kind: said once.
        kinds = Counter(name.split(" (")[0] for name in results)
        said = "; ".join(kind if n == 1 else f"{n} x {kind}" for kind, n in kinds.items())
        write(
            f"reused {len(results)} results computed earlier by the same code on this "
            f"platform, from pytest's cache: {said}. --recompute computes them again"
        )
    figures = c.names_of(REUSED, "figure")
    if figures:
        write(
            f"reused {len(figures)} figures drawn earlier from the same numbers by the same "
            "code (copied from pytest's cache; --recompute draws them again)"
        )
    recorded = c.names_of(REUSED, "kernels")
    if recorded:
        what = "computation" if len(recorded) == 1 else "computations"
        write(
            f"reused the kernels of {len(recorded)} {what}, recorded by an earlier update of "
            "the same code on this platform (--recompute records them again)"
        )
    _say_moved(c, terminalreporter)
    _section(terminalreporter, f"against {c.session.workshop.published}", against_published(c))
    for sections in c.config.hook.pytest_claimlog_summary(controller=c):  # the features'
        for title, lines in sections:
            _section(terminalreporter, title, lines)
    _section(terminalreporter, "figures whose titles hold only in part", _titles(c))
    _say_platform(c, terminalreporter)
    notes = list(dict.fromkeys(n for c in c.claims.values() for n in c.notes))
    if notes:
        notes += [
            "Other seeds are another experiment: these say how general a lesson is, not",
            "what the cited line prints (snapshots/evidence/robustness.md has every claim).",
        ]
    _section(terminalreporter, "how the cited lessons hold over other seeds", notes)
    _say_update(c, terminalreporter)
    _section(terminalreporter, "claimlog's features turned off", features_off(c.config))


# claimlog's features that are plugins of their own, by the name `-p no:NAME` turns each off.
FEATURES = {
    "claimlog.text": "the workshop's text: --workshop, its citations and notebooks",
    "claimlog.reports": "the reports: --claims-report, pytest-html's claim column",
    "claimlog.evidence": "the sweep's evidence: its tables, the platforms it holds, the claims' "
    "keys (claims marked `evidence` are skipped)",
    "claimlog.update": "the record's update: --snapshot-update is refused",
    "claimlog.sweep": "the update's sweep of the stale evidence",
}


def features_off(config: pytest.Config) -> list[str]:
    """The features this session runs without (`-p no:claimlog.text`), each with what it
    would have done."""
    return [
        f"-p no:{name}: {what}"
        for name, what in FEATURES.items()
        if config.pluginmanager.is_blocked(name)
    ]


def against_published(c: Controller) -> list[str]:
    """What this run computed against the published log, at the precision its author
    printed each number: how many read as printed, and every one that does not ("line 9,
    loss: published 2.07, here 2.09"). Nothing where the workshop has no published log or
    the run computed none of its numbers."""
    published = c.session.published
    log = c.session.log
    computed = {r.name: r for claim in c.claim_outcomes.values() for r in claim.readings.values()}
    for line in log.fixed_lines().values():
        computed.update((r.name, r) for r in line.readings)
    pairs = [(computed[name], said) for name, said in published.items() if name in computed]
    if not pairs:
        return []
    differ = [
        (here, said)
        for here, said in pairs
        if here.value != said.value and said.quantity.print(here.value) != said.printed
    ]
    layout = sum(1 for line in log.lines if line.key for _ in line.template.quantities())
    unprinted = layout - len(published)
    lines = [
        f"{len(pairs) - len(differ)} of the {len(pairs)} published numbers this run computed "
        "read as their author printed them"
        + (
            f"; the published log leaves {unprinted} of the log's numbers unprinted"
            if unprinted
            else ""
        )
    ]
    if differ:
        lines.append("where they differ, at the precision the published log prints:")
        for here, said in sorted(differ, key=lambda p: log.line_number(p[0].key)):
            shown = said.quantity.print(here.value)
            full = f" (results.log: {here.printed})" if here.printed != shown else ""
            lines.append(
                f"  line {log.line_number(here.key)}, {here.name}: published {said.printed}, "
                f"here {shown}{full}"
            )
    return lines


def _say_update(c: Controller, terminalreporter: pytest.TerminalReporter) -> None:
    """An update that did not complete, in one place: that it wrote nothing, everything it
    judged that failed (each claim and citation, with why), and what it would write once
    they pass: the quotes it would rewrite, those it would leave on purpose."""
    if c.completed is not False:
        return
    lines = [
        "nothing of it was written: the record (captures/, diagrams/, snapshots/, the "
        "evidence) and the text are as committed"
    ]
    failed = c.failed()
    if failed:
        n = len(failed)
        lines.append(
            f"{n} of what it judged failed: fix {'it' if n == 1 else 'each'} (the sentence, "
            "the text or the recipe), then run the same command again:"
        )
        lines += [f"  {why}" for why in failed]
    for refused in c.session.recording.refused:
        lines.append(f"  {refused}")
    if not failed and not c.session.recording.refused:
        lines.append("the session stopped before its end (above): run the same command again")
    if c.rewritten:
        lines.append("what it would write once everything passes:")
        lines += [f"  {line}" for line in c.rewritten]
    _section(terminalreporter, "the update did not complete", lines)


def _section(terminalreporter: pytest.TerminalReporter, title: str, lines: list[str]) -> None:
    """A section of the summary under its title, or nothing where it has no line."""
    if lines:
        terminalreporter.write_sep("-", title)
        for line in lines:
            terminalreporter.write_line(line)


def _titles(c: Controller) -> list[str]:
    """Each figure's title that holds only in part: which part, and how often it holds."""
    lines = []
    for t in (t for c in c.claim_outcomes.values() for t in c.titles if t["sometimes"]):
        lines += [f"{t['figure']}: {t['title']!r}", *(f"  holds: {p}" for p in t["holds"])]
        lines += [f"  only sometimes: {p} ({how})" for p, how in t["sometimes"].items()]
    return lines


def _say_moved(c: Controller, terminalreporter: pytest.TerminalReporter) -> None:
    """What a reader of the log will see change: every reading printed otherwise than
    its snapshot, by log line, old -> new (an update records them; a run fails or
    drifts on them, as its platform says)."""
    moved = c.moved
    if moved:
        n = len(moved)
        said = [_moved_heading(c), *(f"  {m.describe()}" for m in moved)]
        _section(terminalreporter, f"{n} quoted number{'s' if n > 1 else ''} moved", said)


def _moved_heading(c: Controller) -> str:
    """What the numbers that moved are: the new record, another seed's, or this run's."""
    s = c.settings
    seeds = seed_variant_name(s.seeds)
    if s.update and c.completed is False:
        return "computed by this update, and not recorded: it did not complete (below)"
    if s.update:
        if c.rewritten is not None:
            return "recorded in the snapshots now: the text's quotes of them are rewritten below"
        return (
            "recorded in the snapshots now: the text must quote the new values "
            "(--workshop DIR rewrites its quotes)"
        )
    if seeds:
        return (
            f"computed at {seeds}, another experiment than the snapshots' (the workshop's "
            "own seeds): judged above against the evidence of that seed:"
        )
    return (
        "computed here, not as the snapshots print them (judged above as failures or drift, "
        "by where this run computed):"
    )


def _say_platform(c: Controller, terminalreporter: pytest.TerminalReporter) -> None:
    """Where this run computed, what it was compared with, and what drifted."""
    write = terminalreporter.write_line
    _say_stale_evidence(c, terminalreporter)
    kind = c.standing.get("kind")
    quoted = any(c.owns and c.ran for c in c.claim_outcomes.values())
    if c.platform is None or kind is None or not quoted:
        return  # no claim computed, or an update: compared with nothing
    drift = list(dict.fromkeys(d for c in c.claims.values() for d in c.drift))
    seeds = seed_variant_name(c.settings.seeds)
    recorded = c.session.here.reference()
    examined = list(dict.fromkeys(e for c in c.claims.values() for e in c.examined))
    if kind == REFERENCE and examined:
        # Its fingerprint is the reference's, but a number moved, and hearing its computations
        # here found what sets this machine apart: it is another platform, judged as one.
        terminalreporter.write_sep("-", "this platform is not the reference after all")
        write(f"this run: {c.platform.describe()} ({c.platform.id})")
        write(
            "its kernels, as the record names them, give the reference's bits here, but "
            "numbers moved; heard here to their last kernel, its computations show why:"
        )
        for said in examined:
            write(f"  {said}")
        write(
            "so it computes as another platform does: the numbers that moved are drift, not "
            "failure, and every claim's statement was asserted on what it computed here:"
        )
        for line in drift:
            write(f"  {line}")
        write(
            "Record the reference again where it computes (pytest claims/ --snapshot-update "
            "there) to hear these kernels in its record."
        )
        write(environment_set(c.settings))
        return
    if kind == REFERENCE:
        terminalreporter.write_sep("-", "the reference platform")
        write(f"this run computed on the reference: {c.platform.describe()}")
        write(f"every number was compared with the snapshots, bit for bit ({c.platform.id})")
    elif kind == HELD:
        terminalreporter.write_sep("-", "a platform the evidence holds")
        write(f"this run: {c.platform.describe()} ({c.platform.id})")
        write(
            f"every number of its fragment{f' at {seeds}' if seeds else ''} was compared "
            "with this run's, bit for bit; what the fragment lacks, as on a new platform"
        )
    else:
        terminalreporter.write_sep("-", "this platform is new to the evidence")
        write(
            "Every claim's statement was asserted on this run; a number that moved while its "
            "statement holds is drift, not failure:"
        )
        for line in drift:
            write(f"  {line}")
        if not drift and c.moved:  # they moved, and each failed: the list above says why
            write(f"  none: the {len(c.moved)} that moved (above) failed, none drifted")
        elif not drift:
            write("  none: every number is the reference's")
        said = recorded.describe() if recorded else "(unknown: no environment.json)"
        write(f"the reference:  {said}")
        write(f"this run:       {c.platform.describe()}")
        write(f"what sets it apart: {apart(c.session)}")
        # Another torch release is added by its own command, which records only the
        # reference kernels: its numbers then say what that release moves, nothing else.
        other_torch = recorded is not None and recorded.torch != c.platform.torch
        command = f"{c.session.workshop.sweep_command} {'--release' if other_torch else '--here'}"
        write(
            "To add this platform to the evidence (so its numbers are then compared "
            f"exactly): {command}"
        )
        write("--strict-numbers fails on any number that is not the reference's.")
    if kind != NEW and drift:
        write(
            f"what the fragment does not hold, {seeds} computes otherwise than the snapshots "
            "(of the workshop's own seeds) print it: another experiment's numbers, not drift:"
            if seeds
            else "numbers that drifted:"
        )
        for line in drift:
            write(f"  {line}")
    write(environment_set(c.settings))


def environment_set(s: Settings) -> str:
    """What claimlog set in the environment of this session's processes (`ClaimSession.
    configure`, the one place it does), and what it left as the user had set it."""

    def assigned(name: str) -> str:  # as a shell takes it back
        return f"{name}={shlex.quote(os.environ.get(name, ''))}"

    ours = [assigned(n) for n, who in s.kernels.items() if who == REFERENCE_DEFAULT]
    ours.append(f"{THREADS}={s.torch_threads}")
    yours = [assigned(n) for n, who in s.kernels.items() if who == USER]
    said = f"claimlog set, for this run and the processes it starts: {' '.join(ours)}"
    return said + (f" (yours, left as set: {' '.join(yours)})" if yours else "")


def _say_stale_evidence(c: Controller, terminalreporter: pytest.TerminalReporter) -> None:
    """The claims whose evidence is of another key than this checkout's: what is not read,
    and the one command that computes only that again."""
    evidence = c.session.evidence
    stale = evidence.stale_claims()
    if not stale:
        return
    table = evidence.committed_fragility()
    readings = table.stale_readings(evidence.keys)
    write = terminalreporter.write_line
    terminalreporter.write_sep("-", "the evidence is stale")
    n = len(stale)
    write(
        f"The evidence of {n} claim{'s' if n != 1 else ''} was computed from other code "
        "than this checkout's (the claim, or what it computes, changed since the sweep); "
        f"{'their' if n != 1 else 'its'} {len(readings)} readings are judged without it:"
    )
    for claim in stale:
        owned = sum(1 for r in readings if table.readings[r].claim == claim)
        write(f"  {claim} ({owned} readings)")
    write("Every other claim keeps its evidence, on every platform and seed.")
    write(f"Compute only these again: {c.session.workshop.sweep_command}")
