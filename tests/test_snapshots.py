"""Snapshots: a changed number fails exactly the claims that read it, naming it; one command
updates both libraries' files; nothing a claim still owns is ever deleted.

These run real claims in a scratch copy of the project, each session in this process
(pytester's in-process runs): the S5 claims (pure arithmetic, no training), and a new claim
on the at-init measurements (no training either).
"""

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
S5 = "test_s5_geometric_decay"
QUARTER = "test_factor_per_layer_compounds_over_4_and_10_layers-0.25.csv"
STORED_DEEP = '"S5 factor 0.25, left at the deep depth",9.5367431640625e-07'


@pytest.fixture
def project(s5_project):
    """The S5 claims and their snapshots (`s5_project`), recorded on the reference platform (so a difference fails, as on the reference machine)."""
    return s5_project


def numbers_file(project, name=QUARTER):
    return project.path / "snapshots" / "numbers" / "claims" / S5 / name


def text_file(project):
    return project.path / "snapshots" / "text" / f"{S5}.ambr"


def run(project, *args):
    # importlib: this process may have imported the project's own claim modules, of the same
    # names (the suite runs claims/ too); pytest's default would refuse a second file of one.
    return project.runpytest_inprocess(
        "claims", "-p", "no:randomly", "-p", "no:cacheprovider", "--import-mode=importlib", *args
    )


def test_changing_one_stored_reading_fails_exactly_the_claim_that_owns_it_naming_both_values(
    project,
):
    path = numbers_file(project)
    path.write_text(
        path.read_text().replace(
            STORED_DEEP, STORED_DEEP.replace("9.5367431640625e-07", "9.61e-07")
        )
    )
    result = run(project)
    result.assert_outcomes(passed=5, failed=1)
    # A stored number edited by hand makes the snapshots another experiment's: the sweep's
    # evidence no longer applies, and the reading is judged exactly, as robust.
    result.stdout.fnmatch_lines(
        [
            "*S5 factor 0.25, left at the deep depth: snapshot 9.61e-07, here 9.54e-07 (log line 60, no evidence of it yet)",
            "If the new values are right, bring the record up to them: pytest claims/ "
            "--snapshot-update (with --workshop DIR it rewrites the text that quotes them too)",
            "FAILED claims/test_s5_geometric_decay.py::test_factor_per_layer_compounds_over_4_and_10_layers?0.25?*",
        ]
    )
    assert (
        "  line 60, S5 factor 0.25, left at the deep depth: 9.61e-07 -> 9.54e-07 ("
        in result.stdout.str()
    )
    # Said once, in the claim's failure (pytest's short summary repeats the whole message
    # where CI is set).
    failure = result.stdout.str().split("short test summary info")[0]
    assert failure.count("If the new values are right") == 1


def test_the_update_command_restores_both_libraries_files(project):
    numbers, text = numbers_file(project), text_file(project)
    originals = numbers.read_text(), text.read_text()
    numbers.write_text(originals[0].replace("9.5367431640625e-07", "9.61e-07"))
    text.write_text(originals[1].replace("-> 9.54e-07", "-> 9.61e-07"))
    update = run(project, "--snapshot-update")
    update.assert_outcomes(passed=6)
    assert (numbers.read_text(), text.read_text()) == originals
    # The update says what a reader of the log will see change, by line, old -> new.
    update.stdout.fnmatch_lines(
        [
            "*1 quoted number moved*",
            "recorded in the snapshots now: the text must quote the new values (--workshop DIR rewrites its quotes)",
            "  line 60, S5 factor 0.25, left at the deep depth: 9.61e-07 -> 9.54e-07 (*)",
        ]
    )
    again = run(project)
    again.assert_outcomes(passed=6)
    assert "quoted number" not in again.stdout.str()  # nothing moved since


def test_a_changed_point_of_a_figures_data_names_the_row_and_the_column(project):
    path = project.path / "snapshots" / "numbers" / "figures" / "geometric_decay.csv"
    lines = path.read_text().splitlines()
    cells = lines[5].split(",")  # layers 4
    cells[3] = "0.004"  # the column of factor 0.25
    lines[5] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")
    result = run(project)
    result.assert_outcomes(passed=5, failed=1)
    result.stdout.fnmatch_lines(
        ["*figure geometric_decay.png, layers 4, 0.25: snapshot 0.004, here 0.00390625"]
    )


def test_a_claim_with_no_stored_snapshot_fails_once_saying_so_with_the_update_command(project):
    source = project.path / "claims" / f"{S5}.py"
    source.write_text(
        source.read_text().replace(
            "def test_geometric_decay_figure_is_drawn", "def test_a_brand_new_figure_claim"
        )
    )
    result = run(project)
    result.assert_outcomes(passed=5, failed=1)
    out = result.stdout.str()
    # Counted in the failure reports: the short summary repeats the message in full where
    # pytest sees a CI environment, and cuts it to the terminal's width elsewhere.
    reports = out.split("short test summary info")[0]
    assert reports.count("no snapshot is stored for this claim") == 1
    result.stdout.fnmatch_lines(
        [
            "*test_a_brand_new_figure_claim: no snapshot is stored for this claim: snapshots/text/"
            "test_s5_geometric_decay.ambr has no entry for it. Record it: pytest claims/ "
            "--snapshot-update -k 'test_a_brand_new_figure_claim'"
        ]
    )
    assert "snapshots failed" not in out


def test_a_missing_numbers_file_fails_its_claim_naming_the_file(project):
    numbers_file(project).unlink()
    result = run(project)
    result.assert_outcomes(passed=5, failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*no snapshot is stored for this claim: snapshots/numbers/claims/{S5}/{QUARTER} is missing. Record it: *"
        ]
    )


def test_a_damaged_numbers_file_fails_naming_the_file_and_the_damage(project):
    numbers_file(project).write_text("garbage\n")
    result = run(project)
    result.assert_outcomes(passed=5, failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*a snapshot of this claim cannot be read: snapshots/numbers/claims/{S5}/{QUARTER} is damaged (*"
        ]
    )


def test_a_missing_text_snapshot_file_fails_each_claim_naming_the_file_and_the_command(project):
    text_file(project).unlink()
    result = run(project)
    result.assert_outcomes(passed=1, errors=5)
    result.stdout.fnmatch_lines(
        [
            "*the snapshot file */snapshots/text/test_s5_geometric_decay.ambr is missing. Restore it "
            "from git, or record the numbers computed here with `pytest claims/ --snapshot-update`.",
        ]
    )


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda text: "garbage\n" + text, "does not start with '# serializer version:'"),
        (
            lambda text: text.replace("# ---\n", "", 1),
            "starts a snapshot before the last one ended",
        ),
        (lambda text: text.replace("    'S5 factor 0.1'", "'S5 factor 0.1'", 1), "damaged at line"),
        (lambda text: text.rsplit("# ---", 1)[0], "never ends"),
    ],
)
def test_a_damaged_text_snapshot_file_fails_naming_the_file_and_the_damage(project, damage, said):
    path = text_file(project)
    path.write_text(damage(path.read_text()))
    result = run(project)
    result.assert_outcomes(passed=1, errors=5)
    assert said in result.stdout.str()
    assert "test_s5_geometric_decay.ambr" in result.stdout.str()


def test_a_full_update_removes_what_no_claim_reads_and_a_partial_one_removes_nothing(project):
    stale_text = "# name: test_a_claim_that_was_removed\n  'gone'\n# ---\n"
    text_file(project).write_text(text_file(project).read_text() + stale_text)
    stale_numbers = numbers_file(project, "test_a_claim_that_was_removed.csv")
    stale_numbers.write_text("reading,value\nS5 gone,1\n")

    run(project, "--snapshot-update", "-k", "0.25").assert_outcomes(passed=1)
    assert "test_a_claim_that_was_removed" in text_file(project).read_text()
    assert stale_numbers.exists()

    unused = run(project, "--snapshot-details")
    assert unused.ret == 1  # a full normal run fails on what no claim reads, naming it
    unused.stdout.fnmatch_lines(
        [
            "no claim reads 1 numbers snapshot any more: snapshots/numbers/claims/"
            f"{S5}/test_a_claim_that_was_removed.csv. Delete them with `pytest claims/ --snapshot-update`",
            "Unused test_a_claim_that_was_removed (snapshots/text/test_s5_geometric_decay.ambr)",
        ]
    )
    run(project, "--snapshot-update").assert_outcomes(passed=6)
    assert "test_a_claim_that_was_removed" not in text_file(project).read_text()
    assert not stale_numbers.exists()


def test_an_update_in_which_a_claim_fails_records_nothing_and_says_why(project):
    """The record holds only what every claim verified: an update in which one claim fails
    keeps none of it, neither the failing claim's numbers nor the others', and says so."""
    source = project.path / "claims" / f"{S5}.py"
    source.write_text(
        source.read_text().replace(
            "assert after_deep < after_shallow < factor", "assert factor != 0.5"
        )
    )

    def record():
        folders = ("snapshots", "captures", "diagrams")
        return {
            p: p.read_bytes()
            for folder in folders
            for p in (project.path / folder).rglob("*")
            if p.is_file()
        }

    before = record()
    update = run(project, "--snapshot-update")
    update.assert_outcomes(passed=5, failed=1)
    assert record() == before
    update.stdout.fnmatch_lines(
        [
            "*- the update did not complete -*",
            "nothing of it was written: the record (captures/, diagrams/, snapshots/, the "
            "evidence) and the text are as committed",
            "1 of what it judged failed: fix it *, then run the same command again:",
            "  claims/test_s5_geometric_decay.py::"
            "test_factor_per_layer_compounds_over_4_and_10_layers[[]0.5[]]: assert 0.5 != 0.5",
        ]
    )
    # Issue 62: it does not point at what it computed where nothing shows it.
    assert "what it computed is above" not in update.stdout.str()


def test_a_claim_whose_bound_fails_says_which_reading_and_what_it_asserts(project):
    source = project.path / "claims" / f"{S5}.py"
    source.write_text(
        source.read_text()
        .replace(
            "from bnvg.log import fill",
            "from bnvg.log import fill\nfrom claimlog.log.readings import below",
        )
        .replace(
            "quoted.lines(fill.decay(factor, after_shallow, after_deep))",
            "quoted.lines(fill.decay(factor, after_shallow, after_deep), holds={'left at the deep depth': below(1e-9)})",
        )
    )
    result = run(project)
    result.assert_outcomes(passed=3, failed=3)
    result.stdout.fnmatch_lines(
        [
            "*S5 factor 0.5, left at the deep depth: 9.77e-04, but the claim says below 1e-09 (log line 59)"
        ]
    )


NEW_SENTENCE = '''"""A sentence of its own about the S4 plain table."""

from bnvg.log import fill
from claimlog.log.readings import below


def test_the_plain_backward_signal_loses_80_percent_or_more_per_layer(at_init, quoted):
    """Every backward shrink factor of the plain net is below 0.2 (line 41)."""
    line = fill.at_init_shrink("plain", at_init["plain"])
    quoted.bound(line, holds={r.label: below(0.2) for r in line.readings})
'''


@pytest.fixture
def new_sentence(pytester, outside_xdist, workshop_ini):
    """A scratch project holding the plugin and, in a file of its own, a new claim that bounds
    line 41, which the S4 claims own (S4's own module is left out: its lines need not run)."""
    pytester.makeini(workshop_ini)
    (pytester.path / "claims").mkdir()
    (pytester.path / "claims" / "test_new_sentence.py").write_text(NEW_SENTENCE)
    (pytester.path / "snapshots").mkdir()
    shutil.copy(ROOT / "snapshots" / "environment.json", pytester.path / "snapshots")
    return pytester


def test_a_new_sentence_bounds_a_line_another_claim_owns_in_one_file(new_sentence, tmp_path):
    """It records nothing until asked, then its numbers are snapshotted under its own name,
    it passes, the log keeps the line its owner's, and its outcome is what the sweep counts."""
    import json

    from claimlog.evidence.fragments import Variant, from_record
    from claimlog.evidence.record import Record

    first = run(new_sentence)
    first.assert_outcomes(failed=1)
    first.stdout.fnmatch_lines(["*no snapshot is stored for this claim*--snapshot-update -k*"])
    run(new_sentence, "--snapshot-update").assert_outcomes(passed=1)
    stored = (
        new_sentence.path
        / "snapshots/numbers/claims/test_new_sentence"
        / "test_the_plain_backward_signal_loses_80_percent_or_more_per_layer.csv"
    )
    assert stored.read_text().startswith('reading,value\n"S4 plain shrink, ||dL/dh_1||')
    assert not (new_sentence.path / "snapshots" / "text").exists()  # it quotes no line's text
    record_path = tmp_path / "record.json"
    run(new_sentence, f"--record={record_path}").assert_outcomes(passed=1)
    record = Record.load(record_path)
    nodeid = "claims/test_new_sentence.py::test_the_plain_backward_signal_loses_80_percent_or_more_per_layer"
    assert record.claims[nodeid].outcome == "passed" and record.claims[nodeid].owns == ()
    assert "S4 plain shrink, ||dL/dh_1|| / ||dL/dh_2||" not in record.readings  # its owner's
    fragment = from_record(Variant("init-seed-1", "init", seed=1), record, "experiment")
    assert fragment.outcomes[nodeid] == "passed"  # what robustness.json counts, seed by seed
    assert json.loads(json.dumps(fragment.to_json()))["claims"][nodeid] == "passed"
