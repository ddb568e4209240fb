"""Drift of fragile numbers, --strict-numbers, and the claims report, on a small suite."""

import json

import pytest

CLAIMS = '''
import pytest

VALUE = "{value}"


@pytest.mark.log_lines("S6 batch norm")
def test_batch_norm_loss(quoted):
    """Batch norm's final loss is small."""
    quoted.lines({{"S6 batch norm": f"  final train loss = {{VALUE}}"}})


@pytest.mark.log_lines("S1 split")
def test_split(quoted):
    """The split is 800 / 200."""
    quoted.lines({{"S1 split": "  split: 800 train / 200 test"}})


@pytest.mark.log_lines("S1 samples")
def test_broken():
    """A claim that does not hold."""
    assert 1 == 2


def test_unselected():
    """A claim left out by -k."""
'''


@pytest.fixture
def suite(pytester):
    """Snapshots recorded with VALUE 0.0053; the sweep says that number is fragile."""
    pytester.makeconftest('pytest_plugins = ["bnvg.plugin"]\n')
    pytester.makepyfile(test_claims=CLAIMS.format(value="0.0053"))
    pytester.runpytest("--snapshot-update", "-k", "loss or split").assert_outcomes(passed=2)
    token = {"fragile": True, "band": [0.002, 0.012], "rounding": {"a": "0.0053", "b": "0.0079"}}
    (pytester.path / "snapshots").mkdir()
    (pytester.path / "snapshots" / "fragility.json").write_text(
        json.dumps({"lines": {"S6 batch norm": {"tokens": [token]}}})
    )

    def run(value, *args):
        pytester.makepyfile(test_claims=CLAIMS.format(value=value))
        return pytester.runpytest("-p", "no:randomly", "-k", "not unselected", *args)

    return run


def test_a_fragile_number_within_its_band_passes_and_is_listed_as_drift(suite):
    result = suite("0.0079")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*numbers that drifted (platform-dependent, within band)*",
            "S6 batch norm, final train loss: snapshot 0.0053, here 0.0079 (log line 66, band 0.002 to 0.012, platform-dependent)",
            "snapshots recorded with: *",
            "this run: *",
        ]
    )


def test_strict_numbers_turns_drift_into_failure(suite):
    result = suite("0.0079", "--strict-numbers")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*S6 batch norm, final train loss: snapshot 0.0053, here 0.0079*"])


def test_a_fragile_number_outside_its_band_fails(suite):
    result = suite("0.0500")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        ["*snapshot 0.0053, here 0.0500 (log line 66, band 0.002 to 0.012*"]
    )


def test_the_log_shows_the_value_computed_here_even_when_it_drifted(suite, pytester):
    suite("0.0079")
    log = (pytester.path / "captures" / "results.log").read_text().splitlines()
    assert log[65] == "  final train loss = 0.0079"


def test_the_claims_report_has_one_row_per_claim_with_every_status(suite, pytester):
    suite("0.0079", "--claims-report", "report.md").assert_outcomes(passed=2, failed=1)
    report = (pytester.path / "report.md").read_text()
    rows = {
        line.split("`")[1].split("::")[1]: line
        for line in report.splitlines()
        if line.startswith("| `")
    }
    assert set(rows) == {"test_batch_norm_loss", "test_split", "test_broken", "test_unselected"}
    assert (
        "| 0.0079 | 0.0053 | fragile | drifted: S6 batch norm, final train loss"
        in rows["test_batch_norm_loss"]
    )
    assert "| 800, 200 | same | robust | verified | 9 |" in rows["test_split"]
    assert "| failed | 8 |" in rows["test_broken"]
    assert "| not run |" in rows["test_unselected"]
    assert "Batch norm's final loss is small." in rows["test_batch_norm_loss"]
    assert "4 claims: 1 verified, 1 drifted, 1 failed, 1 not run." in report
