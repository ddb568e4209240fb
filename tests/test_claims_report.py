"""Drift on a platform new to the evidence, --strict-numbers, and the claims report, on a small
suite (its snapshots record another platform than this one, so every run of it is on a new
platform)."""

import json

import pytest

from claimlog.platform import Platform

CLAIMS = '''
import pytest

from claimlog.log.readings import below
from bnvg.log.layout import log as bnvg_log

LOG = bnvg_log()  # the workshop's log, as claimlog reads it

LOSS = {loss}


@pytest.mark.log_lines("S6 batch norm")
def test_batch_norm_loss(quoted):
    """Batch norm's final loss is small."""
    line = LOG.line_named("S6 batch norm").fill(final_loss=LOSS, final_acc=100.0, first=100)
    quoted.lines(line, holds={{"final train loss": below(0.05)}})


@pytest.mark.log_lines("S1 split")
def test_split(quoted):
    """The split is 800 / 200."""
    quoted.lines(LOG.line_named("S1 split").fill(train=800, test=200))


@pytest.mark.log_lines("S1 samples")
def test_broken():
    """A claim that does not hold."""
    assert 1 == 2


def test_unselected():
    """A claim left out by -k."""
'''

LOSS_ENTRY = {
    "line": 66,
    "kind": "loss",
    "label": "final train loss",
    "spec": ".4f",
    "position": 0,
    "reference": {"value": 0.0053, "printed": "0.0053"},
    "platforms": {"b": {"value": 0.0079, "printed": "0.0079"}},
    "seeds": {},
    "bound": ["<", 0.05],
    "band": [0.002, 0.012],
}


@pytest.fixture
def suite(pytester, own_evidence, workshop_ini):
    """Snapshots recorded with a loss of 0.0053; the sweep says that number is fragile."""
    pytester.makeini(workshop_ini)
    pytester.makepyfile(test_claims=CLAIMS.format(loss="0.0053"))
    pytester.runpytest("--snapshot-update", "-k", "loss or split").assert_outcomes(passed=2)
    # Recorded on two torch threads: a reference other than this run's one thread, whose
    # torch is this one (a run without environment.json would stop before any claim).
    other = {**Platform.here(1).identity(), "threads": "2"}
    (pytester.path / "snapshots" / "environment.json").write_text(json.dumps(other))
    own_evidence(pytester.path, {"readings": {"S6 batch norm, final train loss": LOSS_ENTRY}})

    def run(loss, *args):
        pytester.makepyfile(test_claims=CLAIMS.format(loss=loss))
        return pytester.runpytest("-p", "no:randomly", "-k", "not unselected", *args)

    return run


def test_on_a_new_platform_a_fragile_number_that_moved_passes_and_is_listed_as_drift(suite):
    result = suite("0.0079")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*this platform is new to the evidence*",
            "Every claim's statement was asserted on this run*",
            "  S6 batch norm, final train loss: snapshot 0.0053, here 0.0079 (log line 66, fragile)",
            "the reference: *",
            "this run: *",
            "To add this platform to the evidence*python -m bnvg.sweep --here",
        ]
    )


def test_strict_numbers_turns_drift_into_failure(suite):
    result = suite("0.0079", "--strict-numbers")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*S6 batch norm, final train loss: snapshot 0.0053, here 0.0079*",
            # Issue 62: no update is advised where the run is not the reference.
            "This run is not on the reference platform: its numbers are not the record's to "
            "replace (an update here would make them the reference)",
        ]
    )
    assert "--snapshot-update -k" not in result.stdout.str()


def test_on_a_new_platform_a_statement_that_breaks_fails_naming_it(suite):
    result = suite("0.0600")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        ["*S6 batch norm, final train loss: 0.0600, but the claim says below 0.05 (log line 66)"]
    )


def test_a_number_that_moved_and_broke_its_statement_is_listed_as_moved_never_as_none(suite):
    """Issue 62: the summary's lists and headings agree. The loss moved and its claim failed
    on it: it is among the numbers that moved, and the platform's section says that the one
    that moved failed, not that every number is the reference's."""
    result = suite("0.0600")
    result.stdout.fnmatch_lines(
        [
            "*- 1 quoted number moved -*",
            "  line 66, S6 batch norm, final train loss: 0.0053 -> 0.0600 (fragile)",
            "*this platform is new to the evidence*",
            "Every claim's statement was asserted on this run; a number that moved while its "
            "statement holds is drift, not failure:",
            "  none: the 1 that moved (above) failed, none drifted",
        ]
    )
    assert "every number is the reference's" not in result.stdout.str()


def test_the_log_shows_the_value_computed_here_even_when_it_drifted(suite, pytester):
    suite("0.0079")
    log = (pytester.path / "obtained" / "results.log").read_text().splitlines()
    assert "final train loss = 0.0079" in log[65]


def test_the_claims_report_goes_section_by_section_naming_every_reading(suite, pytester):
    suite("0.0079", "--claims-report", "report.md").assert_outcomes(passed=2, failed=1)
    report = (pytester.path / "report.md").read_text()
    assert "- 4 claims: 1 verified, 1 drifted, 1 failed, 1 not run" in report
    assert "- run: `pytest -p no:randomly -k 'not unselected' --claims-report report.md" in report
    assert "- platform: python " in report
    assert report.index("## [S1] two-moons dataset") < report.index("## [S6] training runs")
    assert "### `test_batch_norm_loss`: drifted" in report
    assert "> Batch norm's final loss is small." in report
    assert (
        "| S6 batch norm, final train loss | 0.0079 | 0.0053 |  | fragile: 0.0053, 0.0079 | "
        in report
    )
    assert "| S1 split, training points | 800 | 800 |  | not in the sweep |  |" in report
    assert "### `test_broken`: failed" in report and "### `test_unselected`: not run" in report
    # Settings (chosen, not measured) are not shown as readings of a claim.
    assert "target accuracy" not in report


def test_with_pytest_html_each_claims_row_carries_its_sentence_and_readings(
    suite, pytester, html_rows
):
    suite("0.0079", "--html=report.html", "--self-contained-html").assert_outcomes(
        passed=2, failed=1
    )
    rows = html_rows(pytester.path / "report.html")
    loss = rows["test_claims.py::test_batch_norm_loss"]
    assert "Batch norm&#x27;s final loss is small." in loss["sentence"]
    [table] = [e["content"] for e in loss["extras"] if e["format_type"] == "html"]
    assert (
        "<td>S6 batch norm, final train loss</td><td>0.0079</td><td>0.0053</td><td>fragile</td>"
        in table
    )
    assert "drift: S6 batch norm, final train loss: snapshot 0.0053, here 0.0079" in table


def test_without_an_html_report_the_plugin_adds_nothing(suite, pytester):
    result = suite("0.0053")
    result.assert_outcomes(passed=2, failed=1)
    assert not pytester.parseconfig().pluginmanager.has_plugin("claimlog-html")
