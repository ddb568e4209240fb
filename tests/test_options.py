"""pytest's own places: the header says where a run stands before its first test, `pytest
--help` groups bnvg's options by what they decide, and a project fixes its folders once as
ini options."""

import pytest

from claimlog.plugin.options import INI_OPTIONS

S5 = "test_s5_geometric_decay"


def run(project, *args):
    return project.runpytest_inprocess(
        "claims", "-p", "no:randomly", "-p", "no:cacheprovider", "--import-mode=importlib", *args
    )


def test_the_header_says_the_standing_the_evidence_and_whether_the_run_is_narrowed(s5_project):
    full = run(s5_project)
    full.assert_outcomes(passed=6)
    lines = full.outlines
    header = next(i for i, line in enumerate(lines) if line.startswith("bnvg: "))
    assert header < next(i for i, line in enumerate(lines) if line.startswith("collected"))
    assert lines[header].startswith("bnvg: the reference platform (")
    assert lines[header].endswith(
        "): every number compared with the snapshots, bit for bit; no evidence yet "
        "(python -m bnvg.sweep); a full run"
    )
    narrowed = run(s5_project, "-k", "quarter")
    narrowed.stdout.fnmatch_lines(
        ["bnvg: the reference platform (*; a narrowed run (its log never replaces a complete one)"]
    )


def test_a_session_without_claims_says_nothing_of_them(s5_project):
    s5_project.makepyfile(test_other="def test_one():\n    pass\n")
    result = s5_project.runpytest_inprocess("test_other.py", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert not [line for line in result.outlines if line.startswith("bnvg: ")]


def test_help_groups_every_option_of_bnvg_and_lists_its_ini_options(s5_project):
    said = s5_project.runpytest_inprocess("--help").stdout.str()
    groups = [line for line in said.splitlines() if line.startswith("bnvg: ")]
    assert groups == [
        "bnvg: what a run writes, and where:",
        "bnvg: how the numbers are compared:",
        "bnvg: where the numbers are computed:",
        "bnvg: other seeds (another experiment than the workshop's; the sweep's):",
        "bnvg: the evidence, under an update:",  # the update's sweep, a plugin of its own
    ]
    for option in (
        "--results-log",
        "--diagrams",
        "--claims-report",
        "--record",
        "--workshop",
        "--strict-numbers",
        "--recompute",
        "--torch-threads",
        "--native-kernels",
        "--sampler-seed",
        "--init-seed",
        "--no-sweep",
        "--scheduler",
    ):
        assert f"  {option}" in said
    for name in INI_OPTIONS:
        assert f"  {name} (string):" in said
    # The text is a plugin of its own (`-p no:claimlog.text`), its group its own.
    assert "claimlog: the workshop's text:" in said.splitlines()
    assert "  claimlog_workshop (string):" in said


def test_the_ini_options_fix_the_text_and_the_obtained_folder_once(s5_project, workshop_ini):
    s5_project.makeini(workshop_ini + "claimlog_workshop = text\nclaimlog_obtained = computed\n")
    (s5_project.path / "text").mkdir()
    (s5_project.path / "text" / "m.md").write_text(
        "A factor of 0.9 leaves 6.56e-01 after 4 layers (line 58).\n"
    )
    full = run(s5_project)
    full.assert_outcomes(passed=7)  # the six claims and the citation
    assert (s5_project.path / "computed" / "results.log").is_file()
    assert not (s5_project.path / "obtained").exists()
    # A narrowed run verifies too few lines for the whole text: the ini's text is left alone
    # (--workshop on the command line still checks it).
    run(s5_project, "-k", "0.9").assert_outcomes(passed=1)
    run(s5_project, "-k", "0.9 or m.md", "--workshop", "text").assert_outcomes(passed=2)


def test_an_ini_folder_that_does_not_exist_is_named(s5_project, workshop_ini):
    s5_project.makeini(workshop_ini + "claimlog_workshop = nowhere\n")
    result = run(s5_project)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*the ini option claimlog_workshop: */nowhere: no such folder*"])
