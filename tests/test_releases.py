"""Torch releases as platforms: what moves with the release, what an upgrade costs.

Synthetic tables check the rules; the last tests check the committed evidence: every release
the project has a requirements file for is in it, and in docs/platforms.md's generated section.
"""

from pathlib import Path

from bnvg.log.layout import log as bnvg_log
from bnvg.workshop import DECLARATION
from claimlog.evidence.fragility import from_document
from claimlog.evidence.fragility import load as load_fragility
from claimlog.log.readings import PERCENT, STEP, STEP_SPEC, Quantity, Reading, at_least, at_most
from claimlog.places import Places
from claimlog.sweep import platforms, report
from claimlog.sweep.merge import PLATFORMS_PAGE, build_document, build_robustness

LOG = bnvg_log()  # the workshop's log, as claimlog reads it
VERSIONS = LOG.versions_line()

ROOT = Path(__file__).resolve().parent.parent
ACC = Quantity("final test accuracy", PERCENT, ".1f")
FIRST = Quantity("first step at the target", STEP, STEP_SPEC)
FIRST_NAME = "S6 batch norm, first step at the target"
ACC_NAME = "S8 layer norm, final test accuracy"


def readings(acc=51.5, first=100):
    return {
        r.name: r
        for r in (
            Reading("S8 layer norm", ACC, acc, at_least(90), True),
            Reading("S6 batch norm", FIRST, first, at_most(100)),
        )
    }


def table(releases, kernels=None, published=None):
    """`releases`: {"2.15.0": readings}; `kernels`: other platforms of the reference's torch."""
    runs = {f"torch-{r}/workshop": rs for r, rs in releases.items()}
    runs.update({f"{name}/native": rs for name, rs in (kernels or {}).items()})
    return from_document(
        build_document(
            reference=("ref/workshop", readings()),
            rounding=runs,
            seeds={},
            published=published,
            line_of={"S8 layer norm": 96, "S6 batch norm": 66},
            axes={
                **{f"torch-{r}/workshop": "release" for r in releases},
                **{f"{name}/native": "platform" for name in kernels or {}},
            },
            releases={r: f"torch-{r}/workshop" for r in releases},
            reference_release="2.13.0",
        )
    )


def test_a_reading_that_moves_only_between_releases_is_told_apart_from_one_moved_by_kernels():
    t = table({"2.15.0": readings(first=150)}, kernels={"amd": readings(acc=52.0)})
    first, acc = t.readings[FIRST_NAME], t.readings[ACC_NAME]
    assert first.moves_with == ("release",) and acc.moves_with == ("platform",)
    assert t.on_release(first, "2.15.0").printed == "step 150"
    assert t.on_release(first, "2.13.0") is first.reference
    assert t.on_release(first, "2.16.0") is None
    # A release is a platform: it moves the print, and its bound breaking there makes the
    # statement itself platform-dependent.
    assert first.platform_verdict == "fragile" and first.holds_on_some_platforms_only
    assert first.holds_in("release") == (1, 2)  # with the reference


def test_an_upgrade_lists_the_lines_that_move_and_the_statements_that_break():
    t = table({"2.14.1": readings(), "2.15.0": readings(first=150)})
    claim = "claims/test_s6_training.py::test_batch_norm_reaches_90_by_step_100"
    # In release order, as the merge passes them: the reference is not the first.
    outcomes = {
        "2.12.1": {claim: "failed"},
        "2.13.0": {claim: "passed"},
        "2.14.1": {claim: "passed"},
        "2.15.0": {claim: "failed"},
    }
    robustness = build_robustness("ref", {}, {}, {claim: "..."}, outcomes)
    assert platforms.failing_claims(robustness, "2.15.0", reference="2.13.0") == [claim]
    assert platforms.failing_claims(robustness, "2.14.1", reference="2.13.0") == []
    text = platforms.render_upgrades(t, robustness, 107, VERSIONS, DECLARATION.published)
    v = LOG.versions_line()
    assert f"**torch 2.14.1**: 1 line moves ({v})." in text
    assert f"**torch 2.15.0**: 2 lines move ({v}, 66)." in text
    assert (
        "- line 66, S6 batch norm, first step at the target: step 150 (here step 100); its bound breaks"
        in text
    )
    assert (
        "- S6 batch norm, first step at the target is at most 100: on torch 2.15.0 it is step 150, "
        "not step 100" in text
    )
    assert "- `test_batch_norm_reaches_90_by_step_100` fails" in text
    assert "pytest claims/ --snapshot-update" in text and "git diff snapshots/ captures/" in text


def test_what_a_release_or_a_platform_prints_otherwise_is_a_platform_difference():
    t = table({"2.15.0": readings(first=150)}, kernels={"amd": readings(acc=52.0)})
    [on_release] = platforms.moved(t, "2.15.0")
    assert isinstance(on_release, platforms.PlatformDifference)
    assert (on_release.evidence.name, on_release.there.printed) == (FIRST_NAME, "step 150")
    assert on_release.breaks  # at most 100 held on the reference, not there
    [on_amd] = platforms.moved_on(t, "amd/native")
    assert (on_amd.evidence.name, on_amd.there.printed) == (ACC_NAME, "52.0")
    assert not on_amd.breaks  # at least 90 held on neither


def test_the_published_log_is_placed_per_release():
    published = {ACC_NAME: Reading("S8 layer norm", ACC, 100.0)}
    t = table({"2.12.1": readings(acc=100.0), "2.15.0": readings()}, published=published)
    # Line 66 has no published reading here: only lines with published numbers are placed.
    assert platforms.published_lines(t, "2.12.1") == ([96], [])
    assert platforms.published_lines(t, "2.13.0") == ([], [96])
    text = platforms.render_upgrades(
        t, build_robustness("ref", {}, {}, {}), 107, VERSIONS, DECLARATION.published
    )
    assert "- torch 2.12.1: 1 of 1 lines with numbers; not none" in text
    assert "no torch release here reproduces published lines none." in text
    alone = table({"2.15.0": readings()}, published=published)
    assert "no torch release here reproduces published lines 96." in platforms.render_upgrades(
        alone, build_robustness("ref", {}, {}, {}), reference_lines=107
    )


def test_without_releases_the_section_says_how_to_add_one():
    t = table({})
    assert "nox -s torch-<release>" in platforms.render_upgrades(
        t, build_robustness("ref", {}, {}, {}), 107
    )


def released():
    """The releases the project has a requirements file for: "2.15.0", ..."""
    files = sorted((ROOT / "requirements").glob("torch-*.txt"))
    return [f.stem.removeprefix("torch-") for f in files]


def test_every_release_with_a_requirements_file_is_in_the_committed_evidence():
    fragility = load_fragility(Places(ROOT).fragility_json)
    assert released() and sorted(fragility.releases) == released()
    robustness_md = Places(ROOT).robustness_md.read_text()
    page = (ROOT / PLATFORMS_PAGE).read_text()
    costs = page.split("<!-- what an upgrade costs:", 1)[1].split("<!-- end of what", 1)[0]
    for release in released():
        assert f"| torch {release} |" in robustness_md
        assert f"**torch {release}**:" in costs
        assert f"- torch {release}: " in costs
        requirement = (ROOT / "requirements" / f"torch-{release}.txt").read_text()
        assert f"torch=={release}\n" in requirement


# -- another architecture: what an arm64 reader sees ---------------------------------------------

ARM = "aarch64-arm-neoverse-n1-emulated/workshop"


def test_an_arm64_platform_lists_what_moves_and_what_was_robust_on_every_x86_64_platform():
    claim = "claims/test_s8_other_fixes.py::test_layer_norm_row"
    t = from_document(
        build_document(
            reference=("ref/workshop", readings()),
            rounding={"amd/native": readings(acc=52.0), ARM: readings(acc=52.0, first=150)},
            seeds={},
            published=None,
            line_of={"S8 layer norm": 96, "S6 batch norm": 66},
            variants={ARM: "torch 2.13.0+cu130, ATen DEFAULT, emulated by QEMU"},
            architectures={ARM: "aarch64, Arm Neoverse-N1, emulated"},
        )
    )
    # Robust on x86-64 (only the reference printed it there), fragile now that arm64 moved it.
    first = t.readings[FIRST_NAME]
    assert platforms.robust_elsewhere(t, first) and first.platform_verdict == "fragile"
    assert not platforms.robust_elsewhere(t, t.readings[ACC_NAME])
    robustness = build_robustness(
        "ref",
        {},
        {},
        {claim: "..."},
        architectures={"aarch64, Arm Neoverse-N1, emulated": {claim: "failed"}},
    )
    text = platforms.render_architectures(t, robustness, VERSIONS)
    v = LOG.versions_line()
    assert (
        "**aarch64, Arm Neoverse-N1, emulated** (torch 2.13.0+cu130, ATen DEFAULT, emulated by "
        f"QEMU): 3 lines move ({v}, 66, 96)." in text
    )
    assert "- line 96, S8 layer norm, final test accuracy: 52.0 (here 51.5)" in text
    assert (
        "Robust on every x86-64 platform, moved here: "
        "S6 batch norm, first step at the target (line 66)." in text
    )
    assert "- `test_layer_norm_row` fails" in text
    assert "its bound breaks" in text
    table_md = report.render_robustness(robustness, [("test_s8_other_fixes", "S8")], DECLARATION)
    assert "| claim | aarch64, Arm Neoverse-N1, emulated |" in table_md
    assert "| `test_layer_norm_row` | **fails** |" in table_md


def test_without_another_architecture_the_section_says_how_to_add_one():
    assert "nox -s arm64" in platforms.render_architectures(
        table({}), build_robustness("r", {}, {}, {})
    )


def test_the_committed_evidence_holds_linux_arm64_on_both_emulated_cpu_models():
    """What `nox -s arm64` computed: named in fragility.md, robustness.md and docs/platforms.md."""
    places = Places(ROOT)
    fragility = load_fragility(places.fragility_json)
    assert sorted(fragility.architectures.values()) == [
        "aarch64, Arm Neoverse-N1, emulated",
        "aarch64, Arm Neoverse-V1, emulated",
    ]
    fragility_md, robustness_md = places.fragility_md.read_text(), places.robustness_md.read_text()
    page = (ROOT / PLATFORMS_PAGE).read_text()
    seen = page.split("<!-- what an arm64 reader sees:", 1)[1].split("<!-- end of what", 1)[0]
    for run, label in fragility.architectures.items():
        assert f"`{run}` = " in fragility_md and "emulated by QEMU" in fragility.variants[run]
        assert f"| {label} |" in robustness_md  # a column of each section's table
        assert f"**{label}** (" in seen


def test_releases_are_ordered_as_they_came_out():
    """A release candidate comes before its release, 2.9 before 2.13 (PEP 440, as pip orders
    them); a name that is no version sorts first rather than failing the merge."""
    from claimlog.evidence.fragility import version_key

    given = ["2.13.0", "2.13.0rc1", "2.15.0", "2.9.1", "2.13.0+cpu", "nightly"]
    assert sorted(given, key=version_key) == [
        "nightly",
        "2.9.1",
        "2.13.0rc1",
        "2.13.0",
        "2.13.0+cpu",
        "2.15.0",
    ]
    assert version_key("2.13.0rc1") < version_key("2.13.0")
