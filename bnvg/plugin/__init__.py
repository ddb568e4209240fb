"""The pytest plugin of bnvg, loaded by the root conftest.py: six plugin modules and one
they share.

- `options`: the command line and the markers, read once into the session's `Settings`;
  which claims run and where (xdist); the platform this process computes on and where it
  stands with the evidence (reference, held, new);
- `quoting`: `quoted`, a claim's readings and lines checked against the two snapshot
  libraries (pytest-regressions' numbers, syrupy's text), then handed to the log;
- `fixtures`: what the claims read: the recipe, the data, trained runs, computed results,
  figures; each computed once and reused from pytest's cache;
- `outcomes` (no hooks): what the controller learns of each claim from its reports, and the
  log the passing claims verify; read by `session` and `reports`;
- `session`: the controller, which learns every claim's outcome from the test reports and
  writes the session's outputs (results.log, the record, the reference identity, the text's
  rewrites) and its summary;
- `reports`: the claims report (--claims-report) and pytest-html's extras;
- `citations`: --workshop DIR, one test per citation of the log in the workshop's text
  (Markdown, Quarto, notebooks), and the quotes an update rewrites.

The reference kernels (`bnvg.experiment.platform`) are set here, as the plugin is imported:
numpy reads its part when it is imported, which the plugin's own modules do next. The
options then decide torch's part again, before torch is imported.
"""

from bnvg.experiment import platform

platform.apply()

pytest_plugins = [
    "bnvg.plugin.options",
    "bnvg.plugin.quoting",
    "bnvg.plugin.fixtures",
    "bnvg.plugin.session",
    "bnvg.plugin.reports",
    "bnvg.plugin.citations",
]
