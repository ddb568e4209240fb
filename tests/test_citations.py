"""Citations of the log in Markdown: parsing, matching at the precision written, and the
--workshop check itself on small claim suites and Markdown files written for each test."""

import json
import textwrap

import pytest

from bnvg.citations import find_citations, matches, unmatched

LOG = ["header"] * 110
LOG[39] = "  gradient ratio, layer 1 vs output: 3.32e-04  (3015x smaller)"
LOG[13] = "  max sigmoid slope     = 0.250000  at z = -0.0000"
LOG[15] = "  BCE loss at p = 0.5   = 0.693147   (ln 2 = 0.693147)"


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("It is 3015x smaller (line 40).", (40,)),
        ("See lines 25 and 29.", (25, 29)),
        ("The table is lines 35-38.", (35, 36, 37, 38)),
        ("The table is lines 35\u201338.", (35, 36, 37, 38)),
        ("As results.log:40 shows.", (40,)),
        ("Lines 25, 29 and 40 agree.", (25, 29, 40)),
    ],
)
def test_every_citation_form_is_found(text, lines):
    [c] = find_citations("m.md", text)
    assert c.lines == lines


def test_a_citation_takes_the_numbers_nearest_to_it_in_its_sentence():
    md = "The slope is at most 0.25 (results.log:14), and chance scores ln 2 = 0.693 (line 16)."
    first, second = find_citations("m.md", md)
    assert (first.quoted, second.quoted) == (("0.25",), ("2", "0.693"))
    assert unmatched(first, LOG) == ([], []) and unmatched(second, LOG) == ([], [])


def test_names_are_not_quoted_numbers_and_code_blocks_are_not_prose():
    md = "The layer-1 gradient of S4 is 3015x smaller (line 40).\n\n```\nline 99\n```\n"
    [c] = find_citations("m.md", md)
    assert c.quoted == ("3015",) and c.md_line == 1


@pytest.mark.parametrize(
    ("quoted", "printed", "ok"),
    [
        ("0.25", "0.250000", True),
        ("0.693", "0.693147", True),
        ("0.69", "0.693147", True),
        ("0.7", "0.693147", True),
        ("0.694", "0.693147", False),
        ("3015", "3015", True),
        ("4.97e-07", "4.97e-07", True),
        ("5.0e-07", "4.97e-07", True),
        ("71.5", "69.5", False),
        ("+0.880797", "+0.880797", True),
    ],
)
def test_a_quote_matches_at_the_precision_it_is_written(quoted, printed, ok):
    assert matches(quoted, printed) is ok


def test_a_wrong_number_or_a_missing_line_is_reported():
    [c] = find_citations("m.md", "It is 3016x smaller (line 40).")
    assert unmatched(c, LOG)[1] == ["3016"]
    c2 = find_citations("m.md", "See line 200.")[0]
    assert unmatched(c2, LOG) == ([200], [])


# -- the --workshop option, end to end on small suites -----------------------------------------

CLAIMS = """
import pytest

@pytest.mark.log_lines("S1 split")
def test_split(results_log):
    results_log.write("S1 split", "  split: 800 train / 200 test")

@pytest.mark.log_lines("S1 feature std")
def test_std(results_log):
    results_log.write("S1 feature std", "  input feature std: x1 = 0.890, x2 = 0.511")
"""


@pytest.fixture
def workshop(pytester):
    pytester.makeconftest('pytest_plugins = ["bnvg.plugin"]\n')
    pytester.makepyfile(test_claims=CLAIMS)
    (pytester.path / "text").mkdir()

    def write(markdown):
        (pytester.path / "text" / "module1.md").write_text(textwrap.dedent(markdown))
        return pytester.runpytest("-p", "no:randomly", "--workshop", "text")

    return write


def test_a_module_citing_the_log_correctly_passes(workshop):
    result = workshop("""
        # Module 1

        We train on 800 points and test on 200 (line 9).
        The inputs vary by 0.89 and 0.51 (line 10).
        """)
    result.assert_outcomes(passed=4)


def test_a_changed_number_fails_exactly_that_citation_with_file_and_line(workshop):
    result = workshop("""
        We train on 800 points and test on 200 (line 9).
        The inputs vary by 0.89 and 0.52 (line 10).
        """)
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            "text/module1.md:3: quotes 0.52, which no cited line says: line 10 says 'input feature std: x1 = 0.890, x2 = 0.511'",
            "FAILED text/module1.md::line 3 - *",
        ]
    )


def test_citing_the_wrong_line_fails_that_citation(workshop):
    result = workshop("We train on 800 points and test on 200 (line 10).\n")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*module1.md:1: quotes 800, which no cited line says*"])


def test_a_fragile_number_within_its_band_drifts_instead_of_failing(workshop, pytester):
    snapshots = pytester.path / "snapshots"
    snapshots.mkdir()
    band = {"fragile": True, "band": [0.85, 0.95], "rounding": {"a": "0.890", "b": "0.910"}}
    table = {
        "lines": {
            "S1 feature std": {
                "tokens": [{"fragile": False}, band, {"fragile": False}, {"fragile": False}]
            }
        }
    }
    (snapshots / "fragility.json").write_text(json.dumps(table))
    result = workshop("The first input varies by 0.91 (line 10).\n")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "*numbers that drifted*",
            "*module1.md:1 quotes 0.91; log line 10 says 0.890 (band 0.85 to 0.95, platform-dependent)",
        ]
    )
