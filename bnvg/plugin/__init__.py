"""The pytest plugin of bnvg, loaded by the root conftest.py; each part is a plugin of its own.

- `options`: the command line, read once into the session's settings; one torch thread;
- `collection`: what each claim owns and declares; where the suite runs (xdist or not);
- `fixtures`: the recipe, data and measurements, `quoted`, the snapshot;
- `standing`: this process's platform (torch's facts kept in pytest's cache), and where it
  stands with the evidence (reference, held, new);
- `figures`: `figure`, which checks what a figure plots, then draws it or reuses its drawing;
- `runs`: trained networks declared per claim, trained once, their histories verified;
- `computed`: every other result that takes torch, computed once and reused from pytest's
  cache, so a session that computes nothing imports no torch;
- `quoting`, `numbers`, `text_snapshots`: the checks against the two snapshot libraries;
- `controller`: gathers every claim's evidence; writes results.log (`results_log`), the
  claims report (`claims_report`) and the session record;
- `citation_items`: `--workshop DIR`, a test per citation of the log in the Markdown;
- `html_report`: with pytest-html, each claim's sentence, readings and figure in its row.

The reference kernels (`bnvg.experiment.platform`) are set here, as the plugin is imported:
numpy reads its part when it is imported, which the plugin's own modules do next. The
options (`options`) then decide torch's part again, before torch is imported.
"""

from bnvg.experiment import platform

platform.apply()

pytest_plugins = [
    "bnvg.plugin.options",
    "bnvg.plugin.collection",
    "bnvg.plugin.fixtures",
    "bnvg.plugin.figures",
    "bnvg.plugin.runs",
    "bnvg.plugin.computed",
    "bnvg.plugin.controller",
    "bnvg.plugin.citation_items",
    "bnvg.plugin.html_report",
]
