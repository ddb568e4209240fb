"""The claims' check of their numbers against their snapshot (the `quoted` fixture)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from syrupy.exceptions import SnapshotDoesNotExist

from bnvg import layout as log_layout
from bnvg.numbers import Difference, accept_drift, compare, parse_amber_dict
from bnvg.results_log import DRIFT, STORED, ResultsLog
from bnvg.settings import fragility_of

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
        # The stored value, read the way syrupy's own assertion reads it (its session's
        # recall), so that drift can be judged before syrupy compares.
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
