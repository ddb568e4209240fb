"""The results.log plugin, exercised on small claim suites written for each test (pytester)."""

import json
import os
import textwrap

import pytest

from bnvg.log.layout import log as bnvg_log
from claimlog.machine import THREADS
from claimlog.platform import SET_BY_CLAIMLOG
from claimlog.plugin.outcomes import NOT_VERIFIED
from claimlog.store import atomic_write

LOG = bnvg_log()  # the workshop's log, as claimlog reads it

N_LINES = len(LOG.lines)


def slot_keys():
    return LOG.claimed_keys()


def claim(name, keys, body="pass"):
    """Source of one claim owning `keys`, writing "<key> verified" for each after `body`."""
    marks = ", ".join(repr(k) for k in keys)
    writes = "\n".join(f"    results_log.write(LogLine({k!r}, '  {k} verified', ()))" for k in keys)
    return (
        textwrap.dedent(f"""
        @pytest.mark.log_lines({marks})
        def test_{name}(results_log):
            {body}
        """)
        + writes
        + "\n"
    )


HEADER = "import pytest\nfrom claimlog.log.lines import LogLine\n"


@pytest.fixture
def suite(pytester, workshop_ini):
    """Write a claims module from (name, keys[, body]) tuples; returns the log's path (a
    normal run writes obtained/, never the committed captures/)."""

    def write(*claims):
        pytester.makeini(workshop_ini)
        source = HEADER + "".join(claim(*c) for c in claims)
        pytester.makepyfile(test_claims=source)
        return pytester.path / "obtained" / "results.log"

    return write


def all_claims():
    return [(f"c{i}", [key]) for i, key in enumerate(slot_keys())]


def test_a_passing_claim_fills_its_line_at_the_cited_line_number(suite, pytester):
    log = suite(("split", ["S1 split"]))
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=1)
    lines = log.read_text().splitlines()
    assert len(lines) == N_LINES
    assert lines[LOG.line_number("S1 split") - 1] == "  S1 split verified"
    assert lines[6] == "[S1] two-moons dataset"  # fixed text stays where the script puts it
    assert (
        lines[LOG.line_number("S1 samples") - 1] == f"  {NOT_VERIFIED}: S1 samples -- no claim ran]"
    )


def test_a_failing_claim_writes_none_of_its_numbers_and_marks_its_lines(suite, pytester):
    log = suite(
        ("ok", ["S1 split"]),
        ("eval_bug", ["S9 eval mode", "S9 gamma"], "assert 0.695 == 0.715"),
    )
    pytester.runpytest().assert_outcomes(passed=1, failed=1)
    lines = log.read_text().splitlines()
    assert len(lines) == N_LINES
    failed = f"  {NOT_VERIFIED}: S9 eval mode -- test_claims.py::test_eval_bug failed]"
    assert lines[LOG.line_number("S9 eval mode") - 1] == failed
    assert "S9 gamma verified" not in log.read_text()
    assert lines[LOG.line_number("S1 split") - 1] == "  S1 split verified"


def test_a_claim_failing_after_it_wrote_its_lines_still_writes_none_of_them(pytester, workshop_ini):
    pytester.makeini(workshop_ini)
    pytester.makepyfile(
        test_claims="""
        import pytest
        from claimlog.log.lines import LogLine
        @pytest.mark.log_lines("S1 split")
        def test_late_failure(results_log):
            results_log.write(LogLine("S1 split", "  split: 800 train / 200 test", ()))
            assert False, "the check after the write failed"
        """
    )
    pytester.runpytest().assert_outcomes(failed=1)
    assert "800 train" not in (pytester.path / "obtained" / "results.log").read_text()
    assert not (pytester.path / "captures").exists()


def test_a_complete_run_writes_every_line_and_says_so(suite, pytester):
    log = suite(*all_claims())
    result = pytester.runpytest()
    result.assert_outcomes(passed=len(slot_keys()))
    assert NOT_VERIFIED not in log.read_text()
    result.stdout.fnmatch_lines(
        [
            "*- results.log -*",
            f"wrote obtained/results.log: {len(slot_keys())} verified lines from "
            f"{len(slot_keys())} passing claims (complete)",
        ]
    )


@pytest.mark.parametrize("narrowing", [["-k", "c1 or c2"], ["-x"]])
def test_a_partial_run_never_replaces_a_complete_log(suite, pytester, narrowing):
    claims = all_claims()
    claims[3] = ("c3", claims[3][1], "assert False")  # makes -x stop early
    suite(*claims)
    log = pytester.path / "captures" / "results.log"  # as an update, or --results-log, writes
    complete = "\n".join(f"line {i}" for i in range(1, N_LINES + 1)) + "\n"
    log.parent.mkdir()
    log.write_text(complete)
    result = pytester.runpytest(f"--results-log={log}", *narrowing)
    assert log.read_text() == complete
    result.stdout.fnmatch_lines(
        [
            "kept captures/results.log: this run filled * a partial log never replaces a complete one*"
        ]
    )


def test_a_run_that_ran_no_claim_leaves_the_log_alone(suite, pytester):
    suite(("split", ["S1 split"]))
    log = pytester.path / "captures" / "results.log"  # as an update, or --results-log, writes
    log.parent.mkdir()
    log.write_text("whatever was there\n")
    result = pytester.runpytest(f"--results-log={log}", "-m", "nothing")
    assert log.read_text() == "whatever was there\n"
    assert "results.log" not in result.stdout.str()


def test_a_partial_run_may_replace_an_incomplete_log(suite, pytester):
    log = suite(("split", ["S1 split"]), ("other", ["S1 samples"]))
    pytester.runpytest("-k", "other")
    pytester.runpytest("-k", "split")
    assert "S1 split verified" in log.read_text()


def test_an_interrupted_write_leaves_the_previous_log_whole(tmp_path, monkeypatch):
    log = tmp_path / "results.log"
    log.write_text("the last good log\n")

    def interrupted(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic_write(log, "half a new log")
    assert log.read_text() == "the last good log\n"
    assert [p.name for p in tmp_path.iterdir()] == ["results.log"]  # no temporary file left


@pytest.mark.slow
def test_xdist_workers_ship_their_lines_and_only_the_controller_writes(suite, pytester):
    log = suite(*all_claims())
    pytester.runpytest("-p", "xdist", "-n", "2").assert_outcomes(passed=len(slot_keys()))
    parallel = log.read_bytes()
    log.unlink()
    pytester.runpytest("-p", "no:xdist").assert_outcomes(passed=len(slot_keys()))
    assert log.read_bytes() == parallel


def test_writing_a_line_the_claim_does_not_own_is_an_error(pytester, workshop_ini):
    pytester.makeini(workshop_ini)
    pytester.makepyfile(
        test_claims="""
        import pytest
        from claimlog.log.lines import LogLine
        @pytest.mark.log_lines("S1 split")
        def test_sneaky(results_log):
            results_log.write(LogLine("S1 samples", "  samples: 3", ()))
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    expected = "writes log line 'S1 samples' but its log_lines mark declares only ['S1 split']"
    assert expected in result.stdout.str()


def test_a_line_with_two_owners_stops_the_run_before_anything_runs(suite, pytester):
    suite(("a", ["S1 split"]), ("b", ["S1 split"]))
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*log line 'S1 split' is owned by both test_claims.py::test_a and test_claims.py::test_b*"]
    )


def test_an_unknown_line_name_is_refused_with_where_to_find_the_valid_ones(suite, pytester):
    suite(("a", ["S1 splitt"]))
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*owns log line 'S1 splitt', which results.log does not have; valid names are listed by bnvg.log.layout.claimed_keys()*"
        ]
    )


def test_the_log_path_is_an_option(suite, pytester, tmp_path):
    suite(("split", ["S1 split"]))
    target = tmp_path / "elsewhere" / "log.txt"
    pytester.runpytest(f"--results-log={target}")
    assert "S1 split verified" in target.read_text()
    assert not (pytester.path / "captures").exists()


@pytest.mark.slow
def test_a_narrowed_selection_runs_in_one_process_and_a_full_one_on_workers(suite, pytester):
    suite(("split", ["S1 split"]), ("other", ["S1 samples"]))
    narrowed = pytester.runpytest("-p", "xdist", "-n", "auto", "-k", "split")
    assert "created:" not in narrowed.stdout.str()  # no workers were started
    full = pytester.runpytest("-p", "xdist", "-n", "auto")
    full.stdout.fnmatch_lines(["*created: * workers*"])


@pytest.mark.parametrize(
    ("option", "said"),
    [
        (["--torch-threads", "0"], "--torch-threads must be at least 1, got 0"),
        (["--workshop", "no/such/folder"], "--workshop no/such/folder: no such folder"),
        (["--force-regen"], "--force-regen would update the stored numbers but not the text"),
        (["--regen-all"], "use `pytest claims/ --snapshot-update`, which updates both"),
        (["--results-log", "/proc/x/results.log"], "--results-log: cannot write into /proc/x"),
        (["--diagrams", "/proc/x"], "--diagrams: cannot write into /proc/x"),
        (["--record", "/proc/x/record.json"], "--record: cannot write into /proc/x"),
    ],
)
def test_a_bad_option_is_refused_with_what_is_wrong(suite, pytester, option, said):
    suite(("split", ["S1 split"]))
    result = pytester.runpytest(*option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert said in result.stderr.str()


def test_a_snapshot_update_under_another_seed_is_refused_in_a_checkout(suite, pytester):
    """Another seed is another experiment: its numbers are the sweep's evidence, never the
    workshop's snapshots (the sweep updates scratch copies, which are no checkout)."""
    suite(("split", ["S1 split"]))
    (pytester.path / ".git").mkdir()
    result = pytester.runpytest("--snapshot-update", "--init-seed", "3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--snapshot-update with --init-seed would store another experiment's numbers" in (
        result.stderr.str()
    )


def test_only_a_run_of_the_claims_alone_counts_as_one_a_warm_cache_runs_in_one_process(pytester):
    """With every network in pytest's cache, `-n auto` runs `pytest claims/` in one process;
    `pytest claims/ tests/` still gets a worker per core for the project's own tests."""
    from claimlog.plugin.options import only_claims

    (pytester.path / "claims").mkdir()
    (pytester.path / "tests").mkdir()
    assert only_claims(pytester.parseconfig("claims"))
    assert only_claims(pytester.parseconfig("claims/test_x.py::test_y"))
    assert not only_claims(pytester.parseconfig("claims", "tests"))
    assert not only_claims(pytester.parseconfig("tests"))


def test_a_selection_of_the_projects_own_tests_still_gets_a_worker_per_core(pytester, workshop_ini):
    """`-k`/`-m` narrow the claims to a few networks, which one process trains fastest; the
    project's tier `pytest tests/ -m "not slow"` is hundreds of tests, spread over every
    core like any full run (None: xdist's own count)."""
    from claimlog.plugin import auto_num_workers

    (pytester.path / "claims").mkdir()
    (pytester.path / "tests").mkdir()
    pytester.makeini(workshop_ini)

    def workers(*args):
        return auto_num_workers(pytester.parseconfig(*args))

    assert workers("claims", "-k", "eval_bug") == 0
    assert workers("claims", "tests", "-m", "not slow") == 0
    assert workers("tests", "-m", "not slow") is None
    assert workers("tests", "-k", "sweep") is None


def test_a_figures_title_is_asserted_as_stated_and_a_part_that_holds_sometimes_is_named(
    pytester, workshop_ini
):
    pytester.makeini(workshop_ini)
    pytester.makepyfile(
        test_titles=textwrap.dedent("""
        def test_title_holds(figure):
            figure.title(
                "bars.png",
                "Every fix works",
                holds={"batch norm reaches 90%": True},
                sometimes={"layer norm reaches 90%": "51.5% here; at least 90 in 16 of 33"},
            )

        def test_title_broken(figure):
            figure.title("bars.png", "Every fix works", holds={"ReLU reaches 90%": False})
        """)
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_title_broken: the title of bars.png, 'Every fix works', does not hold here: "
            "ReLU reaches 90%",
            "*figures whose titles hold only in part*",
            "bars.png: 'Every fix works'",
            "  holds: batch norm reaches 90%",
            "  only sometimes: layer norm reaches 90% (51.5% here; at least 90 in 16 of 33)",
        ]
    )


def test_a_folder_that_declares_no_workshop_gets_no_claimlog(pytester):
    """claimlog is installed for every pytest in its environment (an entry point), and stays
    out of the way where no workshop is declared: no options, no header, nothing written."""
    pytester.makepyfile(test_other="def test_one():\n    assert True\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    assert not [line for line in result.outlines if line.startswith("bnvg: ")]
    # What claimlog would have written; __pycache__ is Python's (where it keeps bytecode).
    written = {p.name for p in pytester.path.iterdir()} - {"__pycache__"}
    assert sorted(written) == ["test_other.py", "tox.ini"]
    assert "--results-log" not in pytester.runpytest_inprocess("--help").stdout.str()


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("bnvg.workshop", "write it as 'package.module:NAME'"),
        ("bnvg.nowhere:DECLARATION", "No module named 'bnvg.nowhere'"),
        ("bnvg.workshop:PACKAGE", "is a PosixPath, not a Declaration"),
    ],
)
def test_a_declaration_that_names_no_workshop_stops_the_session_saying_why(pytester, spec, said):
    pytester.makeini(f"[pytest]\nclaimlog_declaration = {spec}\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"claimlog_declaration = {spec!r}" in result.stderr.str()
    assert said in result.stderr.str()


def test_the_text_is_a_plugin_of_its_own_that_p_no_turns_off(suite, pytester):
    """Issue 60: `-p no:claimlog.text` leaves the claims as they were, and `--workshop`
    unknown; with the plugin, the text's citations are items after the claims."""
    suite(("split", ["S1 split"]))
    (pytester.path / "text").mkdir()
    line = LOG.line_number("S1 split")
    (pytester.path / "text" / "m.md").write_text(f"The split is on line {line}.\n")
    checked = pytester.runpytest("-p", "no:randomly", "--workshop", "text", "-v")
    checked.assert_outcomes(passed=2)
    checked.stdout.fnmatch_lines(["text/m.md::line 1 PASSED*"])
    off = pytester.runpytest("-p", "no:randomly", "-p", "no:claimlog.text", "--workshop", "text")
    assert off.ret == pytest.ExitCode.USAGE_ERROR
    off.stderr.fnmatch_lines(["*unrecognized arguments: --workshop*"])
    off = pytester.runpytest("-p", "no:randomly", "-p", "no:claimlog.text")
    off.assert_outcomes(passed=1)
    assert "- the workshop's text -" not in off.stdout.str()  # no section of it
    off.stdout.fnmatch_lines(["-p no:claimlog.text: the workshop's text: *"])


def test_the_reports_are_a_plugin_of_their_own_and_the_summary_names_what_is_off(suite, pytester):
    """Issue 60: `-p no:claimlog.reports` leaves the claims as they were and
    `--claims-report` unknown; the summary says which of claimlog's features are off."""
    suite(("split", ["S1 split"]))
    written = pytester.runpytest("-p", "no:randomly", "--claims-report", "r.md")
    written.assert_outcomes(passed=1)
    assert (pytester.path / "r.md").read_text().startswith("# Claims report")
    assert "features turned off" not in written.stdout.str()
    args = ("-p", "no:randomly", "-p", "no:claimlog.reports")
    off = pytester.runpytest(*args, "--claims-report", "r2.md")
    assert off.ret == pytest.ExitCode.USAGE_ERROR
    off.stderr.fnmatch_lines(["*unrecognized arguments: --claims-report*"])
    off = pytester.runpytest(*args, "-p", "no:claimlog.text")
    off.assert_outcomes(passed=1)
    off.stdout.fnmatch_lines(
        [
            "*- claimlog's features turned off -*",
            "-p no:claimlog.text: the workshop's text: --workshop, its citations and notebooks",
            "-p no:claimlog.reports: the reports: --claims-report, pytest-html's claim column",
        ]
    )


def test_the_update_is_a_plugin_of_its_own_registered_by_an_update_and_refused_without_it(
    suite, pytester
):
    """Issue 60: the record's update (its transaction, the reference and the claims' keys it
    records) is a plugin object registered only by `--snapshot-update`. `-p no:claimlog.update`
    leaves a normal run as it was, the summary saying what is off, and refuses an update,
    writing nothing: without it the snapshot libraries would write whatever the claims did."""
    suite(*all_claims())  # a complete log: only then does an update record the reference
    n = len(all_claims())
    update = "*PLUGIN registered: <claimlog.plugin.update.Update object at *"
    updated = pytester.runpytest("-p", "no:randomly", "--snapshot-update", "--trace-config")
    updated.assert_outcomes(passed=n)
    updated.stdout.fnmatch_lines([update, "recorded the reference: *"])
    normal = pytester.runpytest("-p", "no:randomly", "--trace-config")
    normal.assert_outcomes(passed=n)
    normal.stdout.no_fnmatch_line(update)

    def record():
        return {p: p.read_bytes() for p in (pytester.path / "snapshots").rglob("*.*")}

    before = record()
    assert before  # the snapshots and the reference identity the update wrote
    args = ("-p", "no:randomly", "-p", "no:claimlog.update")
    off = pytester.runpytest(*args)
    off.assert_outcomes(passed=n)
    off.stdout.fnmatch_lines(
        [
            "*- claimlog's features turned off -*",
            "-p no:claimlog.update: the record's update: --snapshot-update is refused",
        ]
    )
    refused = pytester.runpytest(*args, "--snapshot-update")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(
        ["*--snapshot-update: claimlog's update is off (-p no:claimlog.update), and without it *"]
    )
    assert record() == before


def test_the_evidence_is_a_plugin_of_its_own_and_a_claim_that_reads_it_is_skipped_without_it(
    suite, pytester
):
    """Issue 60: `-p no:claimlog.evidence` judges the claims by the record alone: a claim
    marked `evidence` (it reads the sweep's tables) is skipped, saying why, and the summary
    names the feature that is off. An update without it knows no claim's key, so the keys
    recorded beside the snapshots, which would be of other snapshots, are removed."""
    suite(*all_claims())  # a complete log: only then does an update record the keys
    pytester.makepyfile(
        test_rates=(
            "import pytest\n\n\n@pytest.mark.evidence\n"
            "def test_how_often_it_holds(fragility_table, platform_standing):\n"
            "    assert platform_standing.platform and not fragility_table.readings\n"
        )
    )
    keys = pytester.path / "snapshots" / "keys.json"
    n = len(all_claims())
    pytester.runpytest("-p", "no:randomly", "--snapshot-update").assert_outcomes(passed=n + 1)
    assert json.loads(keys.read_text()) == {}  # keys of claims/, which this project has not
    on = pytester.runpytest("-p", "no:randomly")
    on.assert_outcomes(passed=n + 1)
    assert "features turned off" not in on.stdout.str()
    args = ("-p", "no:randomly", "-p", "no:claimlog.evidence", "-rs")
    off = pytester.runpytest(*args)
    off.assert_outcomes(passed=n, skipped=1)
    off.stdout.fnmatch_lines(
        [
            "bnvg: the reference platform *; the evidence is not read (-p no:claimlog.evidence)*",
            "*- claimlog's features turned off -*",
            "-p no:claimlog.evidence: the sweep's evidence: *",
            "SKIPPED * reads the sweep's evidence, which this session does not "
            "(-p no:claimlog.evidence)",
        ]
    )
    updated = pytester.runpytest(*args, "--snapshot-update")
    updated.assert_outcomes(passed=n, skipped=1)
    assert not keys.exists()
    updated.stdout.fnmatch_lines(
        ["*removed snapshots/keys.json: this update knew no claim's key (it ran without *"]
    )


def test_the_summary_names_what_claimlog_set_in_the_environment_and_what_it_left(
    suite, pytester, monkeypatch
):
    """Issue 60: the environment is set in one place, and the summary says what: the
    reference kernels and torch's thread count, each as a shell would set it, and the
    variables the user set, which claimlog leaves as they are."""
    suite(("split", ["S1 split"]))
    pytester.runpytest("-p", "no:randomly", "--snapshot-update").assert_outcomes(passed=1)
    run = pytester.runpytest("-p", "no:randomly")
    run.stdout.fnmatch_lines(
        [
            "claimlog set, for this run and the processes it starts: ATEN_CPU_CAPABILITY=avx2 "
            "MKL_CBWR=COMPATIBLE ONEDNN_MAX_CPU_ISA=AVX2 *CLAIMLOG_TORCH_THREADS=1"
        ]
    )
    # Put back after the test: claimlog's note of what it set, which a session under a
    # user's MKL_CBWR rewrites, and the thread count, for the sessions after it here.
    for name in (SET_BY_CLAIMLOG, THREADS):
        monkeypatch.setenv(name, os.environ[name])
    monkeypatch.setenv("MKL_CBWR", "AUTO")
    run = pytester.runpytest("-p", "no:randomly", "--torch-threads", "2")
    run.stdout.fnmatch_lines(
        [
            "claimlog set, for this run and the processes it starts: ATEN_CPU_CAPABILITY=avx2 "
            "ONEDNN_MAX_CPU_ISA=AVX2 *CLAIMLOG_TORCH_THREADS=2 (yours, left as set: "
            "MKL_CBWR=AUTO)"
        ]
    )
