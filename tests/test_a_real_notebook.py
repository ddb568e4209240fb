"""A workshop over a real notebook's printed numbers (workshops/bigrams/): the published log
first class.

The notebook is Andrej Karpathy's makemore_part1_bigrams.ipynb; its stored outputs came from
its author's own run, on another machine and torch. The workshop computes what it computes, in
its own code, and its published log (snapshots/evidence/published.log) holds only what those
outputs print, with "?" where they print nothing. In a scratch copy of its folder, as its
author works:

- a normal `pytest` shows each published number beside this run's, at the precision its author
  printed it, and lists where they differ;
- the text cites published numbers as published ("(published line 8)"): such a citation is
  checked against the published log, and a wrong one fails;
- a malformed published log stops the session before anything is computed, naming the line
  and what it should hold.
"""

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import SHARED, missing, workshop_copy

ROOT = Path(__file__).resolve().parent.parent
WORKSHOP = ROOT / "workshops" / "bigrams"
NAMES = SHARED / "data" / "names" / "names.txt"


@pytest.fixture
def bigrams(tmp_path):
    """A scratch copy of the workshop's folder, reading the names in place, and a runner of
    pytest in it: (exit code, output)."""
    if not NAMES.is_file():
        missing(f"the names dataset is not at {NAMES}")
    copy, env = workshop_copy(WORKSHOP, tmp_path, BIGRAMS_NAMES=str(NAMES))

    def run(*args):
        done = subprocess.run(
            [sys.executable, "-m", "pytest", *args],
            cwd=copy,
            env=env,
            capture_output=True,
            text=True,
        )
        return done.returncode, done.stdout + done.stderr

    run.path = copy
    return run


def _section(said, title):
    """The lines of the summary section `title`, up to the next one."""
    lines = said.splitlines()
    start = next(i for i, line in enumerate(lines) if f" {title} " in line and line.startswith("-"))
    rest = lines[start + 1 :]
    end = next((i for i, line in enumerate(rest) if re.match(r"^-{3,} .* -{3,}$", line)), len(rest))
    return rest[:end]


@pytest.mark.slow
def test_a_normal_run_shows_each_published_number_beside_this_runs(bigrams):
    code, said = bigrams()
    assert code == 0, said[-3000:]
    shown = _section(said, "against the notebook's stored outputs")
    # Eight numbers printed by the notebook, four numbers of the log it never printed ("?").
    assert re.fullmatch(
        r"\d of the 8 published numbers this run computed read as their author printed them; "
        r"the published log leaves 4 of the log's numbers unprinted",
        shown[0],
    ), shown
    # The counts reproduce; the stored average NLL came from another table of counts than the
    # notebook's code computes, and is shown at the 15 decimals its author printed.
    assert not any("line 4," in line or "line 5," in line for line in shown), shown
    nll = next(line for line in shown if "average negative log likelihood" in line)
    assert re.fullmatch(
        r"  line 8, counted, average negative log likelihood: published 2\.476470470428467, "
        r"here 2\.\d{15} \(results\.log: 2\.\d{4}\)",
        nll,
    ), nll


@pytest.mark.slow
def test_a_citation_of_a_published_number_is_checked_against_the_published_log(bigrams):
    text = bigrams.path / "text" / "bigrams.md"
    source = text.read_text()
    assert "printed\n2.476470470428467 (published line 8)" in source  # the text cites it
    code, said = bigrams()
    assert code == 0, said[-3000:]
    # Quoted as the notebook never printed it: this machine's value, or more figures than
    # its author printed.
    for wrong, why in (
        ("2.4544", "quotes 2.4544, which the published log does not print"),
        ("2.4764704704284670", "quotes 2.4764704704284670, which the published log does not"),
    ):
        text.write_text(
            source.replace("printed\n2.476470470428467 (published", f"printed\n{wrong} (published")
        )
        code, said = bigrams()
        assert code == 1, said[-3000:]
        assert why in said, said[-3000:]
    # A line the notebook never printed cannot be cited as printed.
    text.write_text(source.replace("(published line 10)", "(published line 9)"))
    code, said = bigrams()
    assert code == 1 and "published line 9" in said, said[-3000:]


def test_a_malformed_published_log_is_refused_before_anything_is_computed(bigrams):
    published = bigrams.path / "snapshots" / "evidence" / "published.log"
    lines = published.read_text().splitlines()
    lines[7] = "  log likelihood: -564996.8125"  # not the layout's wording
    published.write_text("\n".join(lines) + "\n")
    started = time.perf_counter()
    code, said = bigrams("--recompute")
    seconds = time.perf_counter() - started
    assert code == pytest.ExitCode.USAGE_ERROR, said[-3000:]
    assert seconds < 10, f"refused after {seconds:.1f} s"
    assert "published.log:8 does not read as the log line 'counted'" in said
    assert "expected 'log likelihood = <log likelihood>, average nll = " in said
    assert not (bigrams.path / "obtained" / "results.log").exists()  # nothing ran
    # One line short: every line keeps its number, so the file must say "?" instead.
    published.write_text("\n".join(lines[:-1]) + "\n")
    code, said = bigrams()
    assert code == pytest.ExitCode.USAGE_ERROR
    assert "has 9 lines; the layout of results.log has 10" in said
    assert "write ? on a line its author did not print" in said


@pytest.mark.slow
def test_a_failed_claims_numbers_that_print_as_recorded_are_still_quoted_right(bigrams):
    """The claim of lines 5 and 6 fails on its last assert, about which pair is the most
    common, not on any number: the text's quotes of those lines still hold. A quote the
    standing numbers do not bear out fails as a citation of a line this run did not verify,
    never as a wrong quote of a number the claim did not verify."""
    claims = bigrams.path / "claims" / "test_bigrams.py"
    claims.write_text(claims.read_text().replace('counting.top == "n."', 'counting.top == "a."'))
    code, said = bigrams()
    assert code == 1, said[-3000:]
    assert re.search(r"\b1 failed\b", said), said[-3000:]
    assert "FAILED claims/test_bigrams.py::test_every_name_gives_one_bigram" in said
    text = bigrams.path / "text" / "bigrams.md"
    text.write_text(text.read_text().replace("228146\nin all", "228147\nin all"))
    code, said = bigrams()
    assert re.search(r"\b2 failed\b", said), said[-3000:]
    assert "text/bigrams.md:5: cites line 5, which this run did not verify" in said, said[-3000:]
    assert "quotes 228147" not in said
