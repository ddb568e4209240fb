"""How a run's outputs compare with the committed ones (`claimlog.runner`)."""

from __future__ import annotations

from claimlog.places import Places, differing_figures, differing_lines
from claimlog.runner import compare, main


def test_differing_lines_names_each_changed_line_and_each_line_only_one_log_has():
    assert differing_lines("a\nb\nc\n", "a\nb\nc\n") == []
    assert differing_lines("a\nB\nc\n", "a\nb\nc\n") == [2]
    assert differing_lines("a\nb\n", "a\nb\nc\nd\n") == [3, 4]


def test_a_run_is_compared_line_by_line_and_figure_by_figure(tmp_path):
    committed = Places(tmp_path / "project")
    committed.diagrams.mkdir(parents=True)
    committed.results_log.parent.mkdir(parents=True, exist_ok=True)
    committed.results_log.write_text("header\ntorch 1 | numpy 2\nbody\n")
    for name in ("a.png", "b.png", "c.png"):
        (committed.diagrams / name).write_bytes(name.encode())
    out = tmp_path / "out"
    (out / "diagrams").mkdir(parents=True)
    (out / "results.log").write_text("header\ntorch 9 | numpy 2\n")
    (out / "diagrams" / "a.png").write_bytes(b"a.png")
    (out / "diagrams" / "b.png").write_bytes(b"other bytes")

    assert differing_figures(out / "diagrams", committed) == ["b.png", "c.png"]
    comparison = compare(out, committed)
    assert comparison.said == [
        "results.log: differs from the committed log on lines [2, 3]",
        "  line 2: committed 'torch 1 | numpy 2', here 'torch 9 | numpy 2'",
        "  line 3: committed 'body', here (no such line)",
        "figures: 1 of 3 byte-identical to the committed ones; differ: b.png, c.png",
        "readings: not compared (record.json was not written)",
    ]
    assert comparison.differs == ["results.log on lines [2, 3]", "figures b.png, c.png"]


def test_a_folder_no_session_wrote_is_refused_naming_the_file_and_the_options(tmp_path, capsys):
    assert main([str(tmp_path)]) == 2
    said = capsys.readouterr().err
    assert f"{tmp_path / 'results.log'} does not exist" in said
    assert "--results-log=OUT/results.log --diagrams=OUT/diagrams" in said
    assert main([]) == 2 and "usage: python -m claimlog.runner" in capsys.readouterr().err
