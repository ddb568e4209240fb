"""The log's layout and wording: rendered from readings, byte for byte the script's text."""

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from bnvg.log import fill
from bnvg.log.layout import log as bnvg_log
from claimlog import Template
from claimlog.log.lines import Log, PublishedLogError
from claimlog.log.readings import LOSS, Quantity

LOG = bnvg_log()  # the workshop's log, as claimlog reads it

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = (ROOT / "captures" / "results.log").read_text().splitlines()
PUBLISHED = ROOT / "snapshots" / "evidence" / "published.log"


def test_the_layout_has_the_scripts_107_lines_and_every_fixed_line_reads_as_committed():
    assert len(LOG.lines) == len(COMMITTED) == 107
    for n, line in LOG.fixed_lines().items():
        assert line.text == COMMITTED[n - 1], n


def test_a_claimed_line_filled_with_the_readings_the_script_printed_reads_as_committed():
    published = LOG.read_published(PUBLISHED)
    # The published values are printed at the log's precision, so filling a line with them
    # reprints it as the script did (in the published log's numbers).
    line = LOG.line_named("S4 plain layer 1")
    values = {
        f: published[f"S4 plain layer 1, {q.label}"].value for f, q in line.template.quantities()
    }
    assert line.fill(**values).text == COMMITTED[LOG.line_number("S4 plain layer 1") - 1]


def test_numbers_are_fields_and_names_are_text_so_no_name_is_a_reading():
    names = {r.label for line in LOG.fixed_lines().values() for r in line.readings}
    assert names == {"hidden layers", "neurons per layer", "learning rate", "batch size", "steps"}
    row = LOG.line_named("S4 plain layer 2").template
    assert "layer" not in dict(row.quantities()) and row.text_fields() == ["layer"]
    assert [q.label for _, q in LOG.line_named("S9 gamma").template.quantities()] == [
        f"neuron {k}" for k in range(1, 5)
    ]


def test_a_fill_with_a_missing_or_unknown_field_says_which():
    with pytest.raises(
        ValueError, match=r"'S1 split' prints \['train', 'test'\]: missing \['test'\]"
    ):
        LOG.line_named("S1 split").fill(train=800)
    with pytest.raises(ValueError, match="has no field"):
        LOG.line_named("S1 split").fill(train=800, test=200, extra=1)


def test_a_template_keeps_precision_in_the_quantity():
    with pytest.raises(ValueError, match="precision belongs to its Quantity"):
        Template("loss = {loss:.4f}", {"loss": Quantity("loss", LOSS, ".4f")})


def test_line_names_and_numbers_agree():
    keys = LOG.claimed_keys()
    assert len(keys) == len(set(keys)) == 74
    assert all(LOG.line_named(k).key == k for k in keys)
    with pytest.raises(ValueError, match="no log line is called 'S6 plan'"):
        LOG.line_number("S6 plan")


def test_a_line_is_read_under_its_documents_sections_and_blocks_headings():
    assert LOG.context_of(LOG.line_number("S7 depth 8 plain, lr = 5.0")) == (4, 72, 79)
    assert LOG.context_of(LOG.line_number("S6 batch norm")) == (4, 64)
    assert LOG.context_of(LOG.line_number("S4 plain layer 3")) == (4, 31, 34)


def test_the_published_log_is_read_through_the_templates_by_reading_name():
    published = LOG.read_published(PUBLISHED)
    assert published["S8 layer norm, final test accuracy"].printed == "100.0"
    assert published["S9 train mode, batches of 2, test accuracy"].value == 71.5
    assert published["S6 plain, first step at the target"].value is None
    assert published["S2 saturated slope, |z|"].value == 4
    assert len(published) == sum(len(list(line.template.quantities())) for line in LOG.lines)


def test_a_published_log_that_does_not_fit_the_layout_is_refused_naming_the_line(tmp_path):
    lines = PUBLISHED.read_text().splitlines()
    lines[39] = "gradient ratio, layer 1 vs output: 3.32e-04 (lots smaller)"
    bad = tmp_path / "published.log"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(
        PublishedLogError, match=r"published.log:40 does not read as the log line 'S4 plain ratio'"
    ):
        LOG.read_published(bad)
    bad.write_text("too short\n")
    with pytest.raises(PublishedLogError, match=r"has 1 lines; the layout of results\.log has 107"):
        LOG.read_published(bad)


def test_a_session_keeps_a_log_it_read_back_until_the_text_or_the_layout_changes(
    tmp_path, monkeypatch
):
    """Reading a log back compiles a pattern per line, a tenth of a warm session: pytest's
    cache keeps the readings under the key of the text and of the layout's wording."""
    from claimlog.plugin.session import SessionCache

    (tmp_path / ".pytest_cache").mkdir()  # pytest made its cache folder: kept there
    config = SimpleNamespace(
        pluginmanager=SimpleNamespace(has_plugin=lambda name: True),
        rootpath=tmp_path,
        getini=lambda name: ".pytest_cache",
    )
    cache = SessionCache(
        SimpleNamespace(log=LOG, config=config, workshop=SimpleNamespace(name="w"))
    )
    published = tmp_path / "published.log"
    published.write_text(PUBLISHED.read_text())
    read = cache.read_log(published)
    assert read == LOG.read_published(PUBLISHED)
    assert [r.printed for r in read.values()] == [
        r.printed for r in LOG.read_published(PUBLISHED).values()
    ]
    with monkeypatch.context() as patched:
        patched.setattr(Log, "read_published", lambda self, path: pytest.fail("read again"))
        assert cache.read_log(published) == read
    # Another text, or another wording of a line, is read again (and refused where wrong).
    lines = PUBLISHED.read_text().splitlines()
    lines[39] = "gradient ratio, layer 1 vs output: 3.32e-04 (lots smaller)"
    published.write_text("\n".join(lines) + "\n")
    with pytest.raises(PublishedLogError, match=r"published.log:40 does not read as"):
        cache.read_log(published)
    line = LOG.lines[39]
    reworded = Template(line.template.text + ".", line.template.numbers)
    lines = (*LOG.lines[:39], replace(line, template=reworded), *LOG.lines[40:])
    assert replace(LOG, lines=lines).reading_back() != LOG.reading_back()


def test_filled_lines_carry_their_bounds_and_refill_with_stored_values():
    from claimlog.log.readings import at_most

    line = fill.split(800, 200).bounded({"test points": at_most(250)})
    assert line.reading("test points").bound == at_most(250)
    again = LOG.line_named("S1 split").refill(line, {"S1 split, test points": 201})
    assert again.text == "  split: 800 train / 201 test"
    assert again.reading("test points").bound == at_most(250)
