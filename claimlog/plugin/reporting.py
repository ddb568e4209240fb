"""The reports an author reads instead of the terminal, in a session that writes one
(`claimlog.plugin.reports` registers `Reports`).

- **The claims report** (`--claims-report PATH`): section by section in the log's order, each
  claim's sentence, its verdict, and every reading it quotes by name, with the value computed
  here, the snapshot's and the published log's, and the evidence's two answers, apart: what
  the platforms print (robust, or fragile with its prints) and how general its claim's bound
  is over each seed axis (k of N); the figure a claim draws under it; and what the feature
  plugins add (the text's citations). It reads as plain text too.
- **pytest-html**, when installed (`--html=report.html --self-contained-html`): a "claim"
  column with each claim's sentence, and in each claim's row (pytest-html's own extras) its
  readings table and its figure, embedded.
"""

from __future__ import annotations

import base64
import html
import os
import shlex
from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from claimlog.declaration import seed_variant_name
from claimlog.evidence.fragility import Fragility, listed
from claimlog.evidence.record import ClaimOutcome
from claimlog.log.lines import PLOT, Log
from claimlog.log.readings import Reading
from claimlog.plugin.options import Settings, owned_keys
from claimlog.plugin.outcomes import DRIFT, READINGS, STORED, payloads
from claimlog.plugin.session import ClaimSession
from claimlog.store import atomic_write, relative

if TYPE_CHECKING:
    from claimlog.plugin.controller import Controller

# -- the claims report ----------------------------------------------------------------------
STATUSES = ("verified", "drifted", "failed", "skipped", "not run")


def _section_of(claim: ClaimOutcome, module_first: int | None, log: Log) -> str:
    """The log section a claim belongs to: that of the first line it owns, or else that of
    the first line its module's claims own (a figure's claim beside the claims of its lines),
    in the workshop's own headings; "other claims" for a module that owns no line."""
    if claim.owns:
        return log.section_of(_position(claim, log))
    return log.section_of(module_first) if module_first is not None else "other claims"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _stored_printed(reading: Reading, stored: Mapping[str, float]) -> str:
    """The reading as its snapshot stores it, printed; "" where it has none."""
    if reading.name not in stored:
        return ""
    return reading.with_value(reading.value_from_float(stored[reading.name])).printed


def _travels(
    name: str, fragility: Fragility, seeds: Mapping[str, tuple[str, str, str]]
) -> tuple[str, str]:
    """(on platforms: robust, or fragile with its prints; over seeds: how often the claim's
    bound held on each seed axis)."""
    evidence = fragility.reading(name)
    if evidence is None:
        return "not in the sweep", ""
    platforms = evidence.platform_verdict
    if evidence.moved_in_print:
        platforms += ": " + ", ".join(sorted(set(evidence.prints_by_platform().values())))
    over = ", ".join(f"{r.k} of {r.n} {what}" for what, r in evidence.generality(seeds))
    return platforms, f"{evidence.bound}: {over}" if over else ""


def render_claims_report(path: Path, controller: Controller, features: Sequence[str]) -> str:
    """The report of the claims `controller` collected, to be written at `path` (its figures
    are linked from there): its log, the platform it computed on, and the quoted numbers
    printed otherwise than their snapshots (`Controller.moved`), in log order. The evidence is
    the sweep's table without the readings of the stale claims (whose evidence is of another
    key than this checkout's); `features`: what the feature plugins add, in Markdown (with
    --workshop: what the text cites, what an update did to it, the numbers of its prose that
    cite no line)."""
    session, claims, log = controller.session, controller.claim_outcomes, controller.log
    settings, root, workshop = session.settings, session.config.rootpath, session.workshop
    fragility, stale = session.evidence.fragility(), session.evidence.stale_claims()
    layout, moved, platform = session.log, controller.moved, controller.platform
    counts = {s: sum(1 for c in claims.values() if c.status == s) for s in STATUSES}
    # Each count includes the reference (seed 0 on the reference platform).
    counted = [f"{len(fragility.on_axis('platform')) + 1} platforms"] + [
        f"{len(fragility.on_axis(axis)) + 1} {many}"
        for axis, (_, _, many) in workshop.seeds.items()
    ]
    over = listed(counted)
    seed_words = listed([many for _, _, many in workshop.seeds.values()]) or "seeds"
    out = [
        "# Claims report",
        "",
        f"- run: `pytest {shlex.join(session.config.invocation_params.args)}`",
        f"- platform: {platform.describe() if platform else '(nothing computed)'}",
        f"- {len(claims)} claims: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n),
        "- results.log: "
        + (
            f"{log.verified} lines verified, {log.failed} failed, {log.missing} not run"
            if log
            else "not written"
        ),
        f"- the sweep's table: {len(fragility.readings)} readings over {over} "
        f"(`{relative(settings.places.fragility_md, root)}`)"
        if fragility.readings
        else f"- the sweep's table: none yet (`{workshop.sweep_command}`)",
        *(
            [
                f"- stale evidence: {len(stale)} claim{'s' if len(stale) != 1 else ''} changed "
                "since the sweep, their readings judged without it "
                f"(`{workshop.sweep_command}` "
                "computes only them): " + ", ".join(f"`{c.split('::')[-1]}`" for c in stale)
            ]
            if stale
            else []
        ),
        "",
        "Each reading: its value here, in the snapshot and in the published log; and the "
        "evidence's two answers, apart. On platforms: robust (every platform prints it alike) "
        "or fragile (with what they print); only this decides a verdict. Over seeds: in how "
        f"many {seed_words} its claim's bound held, which says how general the sentence is.",
    ]
    if moved:
        out += [
            "",
            "## What moved",
            "",
            "Every quoted number printed otherwise than its snapshot, by log line:",
            "",
            *(f"- {_cell(m.describe())}" for m in moved),
        ]
    out += features
    first_of_module: dict[str, int] = {}
    for nodeid, claim in claims.items():
        if claim.owns:
            module = nodeid.split("::", 1)[0]
            first = min(_position(claim, layout), first_of_module.get(module, 10**9))
            first_of_module[module] = first
    by_section: dict[str, list[str]] = {}
    for nodeid in sorted(claims, key=lambda n: (_position(claims[n], layout), n)):
        module_first = first_of_module.get(nodeid.split("::", 1)[0])
        section = _section_of(claims[nodeid], module_first, layout)
        by_section.setdefault(section, []).append(nodeid)
    order = [text for _, text in sorted(layout.section_headings().items())]
    for section in sorted(by_section, key=lambda t: order.index(t) if t in order else -1):
        nodeids = by_section[section]
        out += ["", f"## {section}"]
        for nodeid in nodeids:
            out += _claim(nodeid, claims[nodeid], session, path)
    return "\n".join(out) + "\n"


def _position(claim: ClaimOutcome, log: Log) -> int:
    return min((log.line_number(k) for k in claim.owns), default=10_000)


def _claim(nodeid: str, claim: ClaimOutcome, session: ClaimSession, report: Path) -> list[str]:
    settings, seeds, published = session.settings, session.workshop.seeds, session.published
    fragility = session.evidence.fragility()
    lines = claim.owns and ", ".join(str(session.log.line_number(k)) for k in claim.owns)
    out = [
        "",
        f"### `{nodeid.split('::', 1)[-1]}`: {claim.status}",
        "",
        f"> {claim.sentence}" if claim.sentence else "> (no docstring)",
        "",
        f"`{nodeid}`" + (f", log lines {lines}" if lines else ""),
    ]
    out += [f"- {_moved_word(settings)}: {d}" for d in claim.drift]
    quoted = {**claim.readings, **claim.bounded}
    readings = [r for r in quoted.values() if r.kind.name != "setting"]
    if readings:
        out += [
            "",
            "| reading | here | snapshot | published | on platforms | over seeds |",
            "|---|---:|---:|---:|---|---|",
        ]
        for r in readings:
            status, over = _travels(r.name, fragility, seeds)
            pub = published[r.name].printed if r.name in published else ""
            out.append(
                f"| {_cell(r.name)} | {r.printed} | {_stored_printed(r, claim.stored)} | {pub} "
                f"| {status} | {over} |"
            )
    for png, committed in _figures(claim.owns, settings):
        link = os.path.relpath(png, report.parent)
        if committed is not None:
            # Before and after, side by side, as pytest-mpl shows a figure that moved.
            before = os.path.relpath(committed, report.parent)
            out += [
                "",
                f"{png.name} differs from the committed figure:",
                "",
                "| committed | this run |",
                "|---|---|",
                f"| ![committed {png.name}]({before}) | ![{png.name}]({link}) |",
            ]
        else:
            out += ["", f"![{png.name}]({link})"]
    return out


def _figures(keys: Iterable[str], s: Settings) -> Iterator[tuple[Path, Path | None]]:
    """Each figure a claim draws (its `PLOT` lines), with the committed one where this run
    drew another (both exist and their bytes differ), else None."""
    for png in (s.diagrams / key.removeprefix(PLOT) for key in keys if key.startswith(PLOT)):
        committed = s.places.diagrams / png.name
        differs = committed != png and committed.is_file() and png.is_file()
        yield png, committed if differs and committed.read_bytes() != png.read_bytes() else None


# -- pytest-html ----------------------------------------------------------------------------
def _side_by_side(committed: Path, obtained: Path) -> str:
    """Two figures in one row, the committed one and this run's, embedded."""

    def image(path: Path, title: str) -> str:
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        return (
            f"<td><p>{html.escape(title)}</p>"
            f'<img src="data:image/png;base64,{data}" alt="{html.escape(title)}" width="100%"></td>'
        )

    return (
        '<table class="claimlog-figure-moved"><tr>'
        + image(committed, f"committed: {committed.name}")
        + image(obtained, f"this run: {obtained.name}")
        + "</tr></table>"
    )


def _property(report: pytest.TestReport, name: str) -> Any:
    return next((value for key, value in payloads(report) if key == name), None)


def html_extras(
    item: pytest.Item, report: pytest.TestReport, s: Settings, table: Fragility
) -> None:
    """pytest-html's extras of a claim's row: its readings table and its figure, embedded
    (beside the committed one where it moved)."""
    from pytest_html import extras

    added = []
    readings = _property(report, READINGS)
    if readings:
        added.append(extras.html(_readings_table(report, readings, table, _moved_word(s))))
    for png, committed in _figures(owned_keys(item), s):
        if committed is not None:
            added.append(extras.html(_side_by_side(committed, png)))
        elif png.exists():
            content = base64.b64encode(png.read_bytes()).decode("ascii")
            added.append(extras.png(content, name=png.name))
    report.extras = [*getattr(report, "extras", []), *added]  # type: ignore[attr-defined]


def _moved_word(settings: Settings) -> str:
    """What a claim's numbers that moved from the snapshots are called: drift, or, in a seed
    session, another experiment's (`ClaimOutcome.another_experiment`)."""
    return "another experiment's number" if seed_variant_name(settings.seeds) else "drift"


def _readings_table(
    report: pytest.TestReport, readings: list[Any], table: Fragility, moved: str
) -> str:
    stored = cast("Mapping[str, float]", _property(report, STORED) or {})
    rows = []
    for data in readings:
        r = Reading.from_json(data)
        if r.kind.name == "setting":
            continue
        evidence = table.reading(r.name)
        snapshot = _stored_printed(r, stored)
        rows.append(
            "<tr>"
            + "".join(
                f"<td>{html.escape(cell)}</td>"
                for cell in (
                    r.name,
                    r.printed,
                    snapshot,
                    evidence.platform_verdict if evidence else "not in the sweep",
                    str(r.bound) if r.bound else "",
                )
            )
            + "</tr>"
        )
    drift = [str(v) for k, v in payloads(report) if k == DRIFT]
    return (
        '<table class="claimlog-readings"><tr><th>reading</th><th>here</th><th>snapshot</th>'
        "<th>on platforms</th><th>the claim says</th></tr>"
        + "".join(rows)
        + "</table>"
        + "".join(f"<p>{moved}: {html.escape(d)}</p>" for d in drift)
    )


CLAIM_HEADER = '<th class="claimlog-claim">claim</th>'  # pytest-html's column of sentences


def claim_cell(report: pytest.TestReport) -> str:
    sentence = dict(report.user_properties).get("sentence", "")
    return f'<td class="claimlog-claim">{html.escape(str(sentence))}</td>'


# -- the plugin -------------------------------------------------------------------------------
class Reports:
    """The reports of one session: the claims report at `path` (None: none), pytest-html's
    column and extras where pytest-html writes a report (`html`)."""

    def __init__(self, session: ClaimSession, path: Path | None, html: bool) -> None:
        self.session = session
        self.path = path
        self.html = html

    @pytest.hookimpl(trylast=True)  # after the features whose sections it shows
    def pytest_claimlog_finish(self, controller: Controller, session: pytest.Session) -> None:
        if self.path is None:
            return
        sections = self.session.config.hook.pytest_claimlog_report(controller=controller)
        features = [line for found in sections for line in found]
        atomic_write(self.path, render_claims_report(self.path, controller, features))
        root = self.session.config.rootpath
        controller.summary.append(f"wrote the claims report {relative(self.path, root)}")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """A call's report carries the claim's readings and figure for pytest-html (outside
        the core's wrapper, which puts the claim's payloads on the report)."""
        report = yield
        if self.html and report.when == "call":
            html_extras(item, report, self.session.settings, self.session.evidence.fragility())
        return report

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_header(self, cells: list[str]) -> None:
        cells.insert(2, CLAIM_HEADER)

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_row(self, report: pytest.TestReport, cells: list[str]) -> None:
        cells.insert(2, claim_cell(report))
