"""Whole runs of the real claims: in subprocesses, as a user or CI would start them, and, for
what a session does to a scratch copy of the project (updates, moved histories), in this
process (`claims_here`).

Each writes its log, diagrams and session record to a scratch folder, never to the
repository's, and is read through its record (`claimlog.runner`), not its terminal output.
"""

import json
import os
from pathlib import Path

import pytest

from bnvg.log.layout import log as bnvg_log
from claimlog.places import Places
from claimlog.plugin.outcomes import NOT_VERIFIED
from claimlog.runner import differing_figures, extra_figures

LOG = bnvg_log()  # the workshop's log, as claimlog reads it

# Whole claims sessions in subprocesses, cold and warm: the slow tier.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def warm(warm_claims):
    """A run that reuses the test session's trained networks and figures (`warm_claims`)."""

    def run(tmp_path, *args, env=None, cwd=ROOT):
        done = warm_claims(args, cwd=cwd, outputs=tmp_path, env=env)
        assert done.returncode == 0, done.tail()
        return done

    return run


def test_k_eval_bug_selects_only_the_eval_bug_claims_and_uses_one_network(tmp_path, warm):
    record = warm(tmp_path, "-k", "eval_bug").record
    ran = [nodeid for nodeid, c in record.claims.items() if c.outcome == "passed"]
    assert ran and all(n.startswith("claims/test_s9_eval_bug.py::") for n in ran)
    assert (*record.trained, *record.reused) == ("batch norm",)
    assert record.options["torch threads"] == 1


def test_an_at_init_claim_trains_nothing_and_never_imports_matplotlib(tmp_path, warm):
    run = warm(
        tmp_path,
        "-k",
        "3000x",
        "-s",
        "-p",
        "bnvg_probe",
        env={"PYTHONPATH": str(Path(__file__).parent / "probes")},
    )
    assert run.record.trained == () and run.record.reused == ()
    assert [c.outcome for c in run.record.claims.values()].count("passed") == 1
    assert "matplotlib imported: False" in run.stdout  # the probe plugin's own line


@pytest.fixture(scope="module")
def parallel_run(cold_parallel_run):
    """The session's cold run on two workers, shuffled (see tests/conftest.py)."""
    return cold_parallel_run


def test_the_full_suite_trains_each_of_the_twelve_runs_once_across_workers(parallel_run):
    trained = parallel_run.record.trained
    assert len(trained) == len(set(trained)) == 12


def test_the_reference_kernels_reach_the_xdist_workers_and_their_record_says_so(parallel_run):
    import json

    record = parallel_run.record
    kernels = {
        k: record.platform[k] for k in ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA")
    }
    assert kernels == {
        "ATEN_CPU_CAPABILITY": "avx2",
        "MKL_CBWR": "COMPATIBLE",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
    }
    assert record.platform["cpu capability"] == "AVX2" and record.platform["numpy simd"] == "AVX2"
    assert record.platform["set by the user"] == "none" and record.platform["cpu"]
    recorded = json.loads((ROOT / "snapshots" / "environment.json").read_text())
    same_torch = record.platform["torch"] == recorded["torch"]
    # Whatever CPU this is (its vendor and model are no part of the reference identity).
    assert record.standing["kind"] == ("reference" if same_torch else "new")
    if same_torch:
        assert record.standing["platform"] == record.standing["reference"]


def test_every_reading_is_recorded_by_name_and_every_run_history_with_it(parallel_run):
    record = parallel_run.record
    assert record.readings["S4 plain ratio, times smaller"].printed == "3015"
    assert record.readings["S6 plain, first step at the target"].value is None
    assert len([t for t in record.tables if t.startswith("runs/")]) == 12
    assert all(c.outcome == "passed" for c in record.claims.values())


def test_cold_serial_and_parallel_runs_train_each_run_once_and_draw_the_committed_diagrams(
    parallel_run, cold_serial_run
):
    assert sorted(cold_serial_run.record.trained) == ["batch norm", "plain"]
    drawn = sorted(p.name for p in cold_serial_run.diagrams.glob("*.png"))
    assert drawn and extra_figures(cold_serial_run.diagrams, Places(ROOT)) == []
    assert set(drawn).isdisjoint(differing_figures(cold_serial_run.diagrams, Places(ROOT)))
    assert differing_figures(parallel_run.diagrams, Places(ROOT)) == []


def test_the_log_does_not_depend_on_order_distribution_or_thread_settings(
    parallel_run, cold_serial_run, committed_log
):
    """The two cold runs differ in everything but the code: shuffled with seed 1 in one
    process with OMP_NUM_THREADS=8 set by the user, and shuffled with seed 2 on two workers.
    Both write the committed log, computing with one torch thread: the parallel run all of
    it, the serial run every line its sections verify (the rest it marks not verified)."""
    committed_log.check(parallel_run.results_log.read_bytes())
    here = cold_serial_run.results_log.read_text().splitlines()
    there = committed_log.bytes.decode().splitlines()
    assert len(here) == len(there)
    verified = [n for n, line in enumerate(here, 1) if NOT_VERIFIED not in line]
    assert [n for n in verified if here[n - 1] != there[n - 1]] == []
    for key in ("S4 plain ratio", "S6 plain", "S6 batch norm", "S9 eval mode"):
        assert LOG.line_number(key) in verified, key
    for run in (cold_serial_run, parallel_run):
        assert "Using --randomly-seed=" in run.stdout
        assert run.record.options["torch threads"] == 1
    seeds = {
        r.stdout.split("Using --randomly-seed=")[1].split()[0]
        for r in (cold_serial_run, parallel_run)
    }
    assert seeds == {"1", "2"}


def snapshot_files(project):
    return {p: p.read_bytes() for p in (project / "snapshots").rglob("*") if p.is_file()}


def test_a_partial_update_touches_no_other_snapshot_file(claims_here, shared_cache):
    """`pytest claims/ -k eval_bug --snapshot-update` rewrites at most the eval-bug claims'
    files, and leaves every other snapshot file (and the recorded environment) as it was."""
    before = snapshot_files(claims_here.path)
    claims_here("out", "-k", "eval_bug", "--snapshot-update", cache=shared_cache)
    assert snapshot_files(claims_here.path) == before


def test_a_full_update_keeps_the_reference_identity_and_says_when_it_changes(
    claims_here, shared_cache
):
    """On any machine of the reference platform a full update leaves environment.json byte
    for byte (it names no machine); recorded for another torch, the update says the
    reference changed, naming both identities, and records this one."""
    environment = claims_here.path / "snapshots" / "environment.json"
    committed = environment.read_bytes()
    first = claims_here("same", "--snapshot-update", cache=shared_cache)
    assert environment.read_bytes() == committed
    assert "the reference changed" not in first.stdout
    other = json.loads(committed)
    other["torch"] = "2.12.1+cu130"
    environment.write_text(json.dumps(other, indent=2, sort_keys=True) + "\n")
    changed = claims_here("changed", "--snapshot-update", cache=shared_cache)
    said = changed.stdout.replace("\n", " ")
    assert "the reference changed: the snapshots now hold the numbers of " in said
    assert "(x86_64-torch-2.12.1-cu130-numpy-2.2.6-avx2-aten-avx2-mkl-compatible-" in said
    assert environment.read_bytes() == committed


def test_a_moved_history_point_fails_every_claim_of_that_run_naming_run_step_and_quantity(
    claims_here, shared_cache
):
    history = claims_here.path / "snapshots" / "numbers" / "runs" / "batch-norm.csv"
    original = history.read_text()
    rows = original.splitlines()
    step, loss, acc = rows[42].split(",")  # step 2050
    rows[42] = ",".join([step, "0.5", acc])
    history.write_text("\n".join(rows) + "\n")
    run = claims_here("out", "-k", "eval_bug", cache=shared_cache, passes=False)
    failed = [n for n, c in run.record.claims.items() if c.outcome == "failed"]
    assert len(failed) == 4 and all("test_s9_eval_bug" in n for n in failed)
    # Counted in the failure reports: under CI pytest repeats each message in the summary.
    reports = run.stdout.split("short test summary info")[0]
    moved = f"run 'batch norm', step 2050, train loss: snapshot 0.5, here {float(loss)!r}"
    assert reports.count(moved) == 4
    # The update command puts the history back as it was computed.
    claims_here("again", "-k", "eval_bug", "--snapshot-update", cache=shared_cache)
    assert history.read_text() == original


def test_the_committed_log_is_byte_identical_to_the_workshop_scripts_log(
    workshop_script_log, committed_log
):
    """In this environment (the pinned torch, one thread) the script and the claims agree."""
    committed_log.check(workshop_script_log)


WORKSHOP_TEXT = """\
# Module 5: the other fixes

The inputs vary by 0.89 and 0.51 (line 10), and the plain net's layer 4's gradient is
3.99e-02 (line 38) against 2.07e-01 with batch norm (line 48).
After 4000 steps at lr 0.5 the plain net still scores 51.5% (line 65).
Layer norm reaches 90% in only 16 of 33 minibatch orders (line 96).
In train mode, batches of 2 score 71.5% (line 103).
Layer norm also works: it reaches 100.0% (line 96).
"""


@pytest.fixture(scope="module")
def reported_run(tmp_path_factory, warm_claims):
    """One full run that checks the workshop's text and writes both reports."""
    folder = tmp_path_factory.mktemp("reported")
    text = folder / "text"
    text.mkdir()
    (text / "module5.md").write_text(WORKSHOP_TEXT)
    args = [
        f"--workshop={text}",
        f"--claims-report={folder / 'report.md'}",
        f"--html={folder / 'report.html'}",
        "--self-contained-html",
        f"--junitxml={folder / 'junit.xml'}",
    ]
    return warm_claims(args, cwd=ROOT, outputs=folder / "out"), folder


def test_the_workshops_citations_are_checked_against_the_claims_this_run_verified(
    reported_run, committed_log
):
    """The published eval-bug accuracy passes as drift, the published layer norm accuracy fails
    with its range, and correct prose passes; citations run in one process, after the claims."""
    run, folder = reported_run
    record = run.record
    assert all(c.outcome == "passed" for c in record.claims.values())
    outcomes = {nodeid.rsplit("::", 1)[1]: c for nodeid, c in record.citations.items()}
    assert {name: c.outcome for name, c in outcomes.items()} == {
        "line 3": "passed",
        "line 4": "passed",
        "line 4 (2)": "passed",
        "line 5": "passed",
        "line 6": "passed",
        "line 7": "passed",
        "line 8": "failed",
    }
    assert outcomes["line 7"].drift == [
        f"{folder / 'text'}/module5.md:7 quotes 71.5 for 'S9 train mode, batches of 2, test accuracy': "
        "here 69.5; fragile, printed 71.5 by 2 platforms of the sweep and the published log "
        "(platform-dependent); no torch release here prints 71.5 (each prints 69.5)"
    ]
    assert "it was 51.5 to 95.5 over the platforms the sweep ran" in run.stdout
    committed_log.check(run.results_log.read_bytes())


def test_the_claims_report_shows_every_claim_by_section_with_its_figure_inline(reported_run):
    run, folder = reported_run
    report = (folder / "report.md").read_text()
    # The log's sections in the workshop's own headings, the header's lines first.
    header = "## the log's header"
    sections = [line for line in report.splitlines() if line.startswith("## [") or line == header]
    assert sections[0] == header
    assert [s.split("]")[0] for s in sections[1:]] == [f"## [S{k}" for k in range(1, 10)]
    # Before them, what the workshop's text cites (the run checked it with --workshop).
    assert report.index("## What the text cites") < report.index(header)
    claims = [line for line in report.splitlines() if line.startswith("### ")]
    assert len(claims) == len(run.record.claims) == 59
    for png in sorted((ROOT / "diagrams").glob("*.png")):
        figure = f"![{png.name}]({os.path.relpath(run.diagrams / png.name, folder)})"
        assert report.count(figure) == 1, png.name
        # Under the claim that draws it: no other claim's heading comes between.
        claim = report.rindex("### ", 0, report.index(figure))
        assert "figure_is_drawn" in report[claim : report.index(figure)], png.name
    # A name's digit or a version is never shown as a reading; readings have their names.
    assert "| versions" not in report and "| S3 layer-2 weights, fan_in" not in report
    assert (
        "| S4 plain layer 1, ||dL/dW|| | 6.63e-05 | 6.63e-05 | 6.63e-05 | robust |"
        in report.replace("\\|", "|")
    )


def test_the_html_report_embeds_every_figure_and_each_claims_sentence_and_readings(
    reported_run, html_rows
):
    _, folder = reported_run
    rows = html_rows(folder / "report.html")
    claims = {k: v for k, v in rows.items() if k.startswith("claims/")}
    assert len(claims) == 59
    images = [e for row in claims.values() for e in row["extras"] if e["format_type"] == "image"]
    assert sorted(e["name"] for e in images) == sorted(
        p.name for p in (ROOT / "diagrams").glob("*.png")
    )
    assert all(e["content"].startswith("data:image/png;base64,") for e in images)
    ratio = claims[
        "claims/test_s4_at_init.py::test_plain_net_first_layer_gradient_is_3000x_smaller_than_output"
    ]
    assert "Workshop: &quot;gradient ratio, layer 1 vs output" in ratio["sentence"]
    [table] = [e["content"] for e in ratio["extras"] if e["format_type"] == "html"]
    assert (
        "<td>S4 plain ratio, times smaller</td><td>3015</td><td>3015</td><td>robust</td>" in table
    )


def test_the_junit_xml_holds_each_claims_sentence_and_log_lines_and_nothing_internal(
    reported_run,
):
    """CI systems ingest the JUnit XML: per claim, its sentence and the log lines it verified,
    nothing of the plugin's own transport, 100 KB at most for the whole run."""
    import xml.etree.ElementTree as ET

    _, folder = reported_run
    path = folder / "junit.xml"
    assert path.stat().st_size <= 100_000, f"{path.stat().st_size} bytes"
    cases = {
        f"{case.get('classname')}.{case.get('name')}": {
            p.get("name"): p.get("value") for p in case.iter("property")
        }
        for case in ET.parse(path).getroot().iter("testcase")
    }
    ratio = cases[
        "claims.test_s4_at_init.test_plain_net_first_layer_gradient_is_3000x_smaller_than_output"
    ]
    assert ratio["sentence"].startswith('Workshop: "gradient ratio, layer 1 vs output')
    assert ratio["log line 40"] == "gradient ratio, layer 1 vs output: 3.32e-04  (3015x smaller)"
    names = {name for properties in cases.values() for name in properties}
    assert not {n for n in names if n.startswith("bnvg")}, names


def test_a_moved_history_still_lets_its_claims_say_which_quoted_numbers_moved(
    claims_here, shared_cache
):
    """A claim whose run's history moved fails on it only once it has quoted: the readings it
    computed that print otherwise than their snapshot are listed as moved (here the final loss
    stored as 0.0091), and its failure names both the readings and the history."""
    numbers = claims_here.path / "snapshots" / "numbers"
    history = numbers / "runs" / "batch-norm.csv"
    rows = history.read_text().splitlines()
    step, _, acc = rows[42].split(",")  # step 2050
    rows[42] = ",".join([step, "0.5", acc])
    history.write_text("\n".join(rows) + "\n")
    claim = "test_batch_norm_net_reaches_90_percent_by_step_100_and_ends_at_100_percent"
    readings = numbers / "claims" / "test_s6_training" / f"{claim}.csv"
    lines = readings.read_text().splitlines()
    [at] = [
        i for i, line in enumerate(lines) if line.startswith('"S6 batch norm, final train loss"')
    ]
    lines[at] = '"S6 batch norm, final train loss",0.0091'
    readings.write_text("\n".join(lines) + "\n")
    run = claims_here("out", "-k", claim, cache=shared_cache, passes=False)
    assert run.returncode == 1
    said = run.stdout
    assert "1 quoted number moved" in said
    assert "line 66, S6 batch norm, final train loss: 0.0091 -> 0.0079 (" in said
    assert "S6 batch norm, final train loss: snapshot 0.0091, here 0.0079" in said
    assert "run 'batch norm', step 2050, train loss: snapshot 0.5, here " in said
    assert all(not c.drift for c in run.record.claims.values())
