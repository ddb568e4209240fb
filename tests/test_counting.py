"""Every run counts: a claim's readings are recorded however it ends, and the numbers handed
to pytest-regressions are the ones this run computed, so its own check can fail."""

import json

from claimlog.platform import Platform

CLAIM = '''
import os
import pytest

from claimlog.log.readings import exactly
from bnvg.log.layout import log as bnvg_log

LOG = bnvg_log()  # the workshop's log, as claimlog reads it


@pytest.mark.log_lines("S1 split")
def test_split(quoted):
    """The split is 800 / 200, and something no printed number says."""
    train = int(os.environ.get("SPLIT_TRAIN", "800"))
    quoted.lines(LOG.line_named("S1 split").fill(train=train, test=200), holds={"test points": exactly(200)})
    assert os.environ.get("BREAK_AFTER_QUOTING") is None, "a statement beyond the printed numbers"
'''


def suite(pytester, monkeypatch, workshop_ini):
    pytester.makeini(workshop_ini)
    pytester.makepyfile(test_claims=CLAIM)
    # Recorded on this platform: it is the reference for this suite, compared exactly.
    environment = pytester.path / "snapshots" / "environment.json"
    environment.parent.mkdir(parents=True)
    environment.write_text(json.dumps(Platform.here(1).identity()))
    pytester.runpytest("-p", "no:randomly", "--snapshot-update").assert_outcomes(passed=1)
    return pytester


def test_a_claim_that_fails_after_quoting_still_records_its_readings(
    pytester, monkeypatch, workshop_ini
):
    suite(pytester, monkeypatch, workshop_ini)
    monkeypatch.setenv("BREAK_AFTER_QUOTING", "1")
    result = pytester.runpytest("-p", "no:randomly", "--record", "record.json")
    result.assert_outcomes(failed=1)
    record = json.loads((pytester.path / "record.json").read_text())
    [claim] = record["claims"].values()
    assert claim["outcome"] == "failed"
    assert record["readings"]["S1 split, training points"]["value"] == 800


def test_pytest_regressions_itself_fails_when_handed_a_changed_number(
    pytester, monkeypatch, workshop_ini
):
    """Its file says 800; the run computes 801. bnvg's own check, by name, speaks first; under
    --strict-numbers the pytest-regressions check behind it is handed 801, not the stored
    800, and fails too."""
    suite(pytester, monkeypatch, workshop_ini)
    monkeypatch.setenv("SPLIT_TRAIN", "801")
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*S1 split, training points: snapshot 800, here 801*"])
    # Skip bnvg's check: what reaches pytest-regressions must be this run's number.
    from claimlog.plugin import quoting

    monkeypatch.setattr(quoting, "compare_readings", lambda *args, **kwargs: [])
    # The patch reaches in-process runs; --strict-numbers hands the numbers to pytest-regressions.
    result = pytester.runpytest_inprocess("-p", "no:randomly", "--strict-numbers")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*Values are not sufficiently close*"])
