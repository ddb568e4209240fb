"""pytest-html, when it is installed: each claim's sentence, readings and figure in its row.

    pytest claims/ --html=report.html --self-contained-html

adds a "claim" column with the sentence each claim verifies, and to each claim's row (through
pytest-html's own extras, no forked template) a table of its readings by name (here, in the
snapshot, robust / fragile / unstable) and the figure it drew, embedded. Without pytest-html
this module registers nothing.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Generator, Mapping
from typing import Any, cast

import pytest

from bnvg.log.readings import Reading
from bnvg.plugin.options import fragility, settings
from bnvg.plugin.outcomes import DRIFT, READINGS, SENTENCE, STORED, owned_keys


def _property(report: pytest.TestReport, name: str) -> Any:
    return next((value for key, value in report.user_properties if key == name), None)


class HtmlExtras:
    """The hooks that feed pytest-html (registered only when pytest-html is active)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, Any, None]:
        outcome = yield
        report: pytest.TestReport = outcome.get_result()
        if report.when != "call":
            return
        from pytest_html import extras

        added = []
        readings = _property(report, READINGS)
        if readings:
            added.append(extras.html(self._readings_table(report, readings)))
        for key in owned_keys(item):
            if key.startswith("plot "):
                png = settings(self.config).diagrams / key.removeprefix("plot ")
                if png.exists():
                    content = base64.b64encode(png.read_bytes()).decode("ascii")
                    added.append(extras.png(content, name=png.name))
        report.extras = [*getattr(report, "extras", []), *added]  # type: ignore[attr-defined]

    def _readings_table(self, report: pytest.TestReport, readings: list[Any]) -> str:
        stored = cast("Mapping[str, float]", _property(report, STORED) or {})
        table = fragility(self.config)
        rows = []
        for data in readings:
            r = Reading.from_json(data)
            if r.kind.name == "setting":
                continue
            evidence = table.reading(r.name)
            snapshot = (
                r.with_value(r.value_from_float(stored[r.name])).printed if r.name in stored else ""
            )
            rows.append(
                "<tr>"
                + "".join(
                    f"<td>{html.escape(cell)}</td>"
                    for cell in (
                        r.name,
                        r.printed,
                        snapshot,
                        evidence.status if evidence else "not in the sweep",
                        str(r.bound) if r.bound else "",
                    )
                )
                + "</tr>"
            )
        drift = [str(v) for k, v in report.user_properties if k == DRIFT]
        return (
            '<table class="bnvg-readings"><tr><th>reading</th><th>here</th><th>snapshot</th>'
            "<th>travels</th><th>the claim says</th></tr>"
            + "".join(rows)
            + "</table>"
            + "".join(f"<p>drift: {html.escape(d)}</p>" for d in drift)
        )

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_header(self, cells: list[str]) -> None:
        cells.insert(2, '<th class="bnvg-claim">claim</th>')

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_row(self, report: pytest.TestReport, cells: list[str]) -> None:
        sentence = _property(report, SENTENCE) or ""
        cells.insert(2, f'<td class="bnvg-claim">{html.escape(str(sentence))}</td>')


def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("html") and config.getoption("htmlpath", None):
        config.pluginmanager.register(HtmlExtras(config), "bnvg-html")
