"""The pytest plugin of claimlog, found by pytest through its `pytest11` entry point.

It stays inert in a folder whose pytest configuration declares no workshop
(`claimlog.declaration`). Where one is declared, before the first conftest is read, it sets
the reference kernels (`claimlog.platform`: numpy reads its part when it is imported, which
the plugin's own modules do next, and the options decide torch's part again before torch is
imported), then registers its six modules and the workshop's own plugins:

- `options`: the command line and the markers, read once into the session's `Settings`;
  which claims run and where (xdist); the platform this process computes on and where it
  stands with the evidence (reference, held, new);
- `quoting`: `quoted`, a claim's readings and lines checked against the two snapshot
  libraries (pytest-regressions' numbers, syrupy's text), then handed to the log;
- `fixtures`: what every workshop's claims read: `quoted`, `figure`, `runs`, `computed`,
  the evidence;
- `outcomes` (no hooks): what the controller learns of each claim from its reports, and the
  log the passing claims verify; read by `session` and `reports`;
- `session`: the controller, which learns every claim's outcome from the test reports and
  writes the session's outputs (results.log, the record, the reference identity, the text's
  rewrites) and its summary;
- `reports`: the claims report (--claims-report) and pytest-html's extras;
- `citations`: --workshop DIR, one test per citation of the log in the workshop's text
  (Markdown, Quarto, notebooks), and the quotes an update rewrites.
"""

from __future__ import annotations

import importlib
import os
import sys

import pytest

from claimlog.declaration import INI_NAME, declare, load

MODULES = tuple(
    f"claimlog.plugin.{name}"
    for name in ("options", "quoting", "fixtures", "session", "reports", "citations")
)


# Said in one line each, once pytest's capture of conftest loading is over (pytest_configure).
CAME_FIRST = {
    "torch": (
        "claimlog: torch was imported before claimlog could set the reference kernels (by a "
        "plugin or conftest loaded first, or PYTHONSTARTUP): it may compute with its own, as "
        "the platform's fingerprint will show; set ATEN_CPU_CAPABILITY=avx2 "
        "MKL_CBWR=COMPATIBLE ONEDNN_MAX_CPU_ISA=AVX2 before Python starts to compute the "
        "reference's\n"
    ),
    "numpy": (
        "claimlog: numpy was imported before claimlog could cap its vectors at AVX2 (by a "
        "plugin loaded first: pytest-randomly imports it, `-p no:randomly` keeps it out): it "
        "computes with its own, and the platform says so\n"
    ),
}
IMPORTED_FIRST = pytest.StashKey[list[str]]()


def pytest_configure(config: pytest.Config) -> None:
    for module in config.stash.get(IMPORTED_FIRST, []):
        sys.stderr.write(CAME_FIRST[module])


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        INI_NAME,
        "the workshop this folder's claims belong to, as 'package.module:NAME' (a "
        "claimlog.Declaration); without it claimlog does nothing",
        default="",
    )


# Not tryfirst: pytest's own `pythonpath` ini option is applied first, so a workshop that is
# not installed can be imported from its folder. Before the first conftest all the same.
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    spec = str(early_config.getini(INI_NAME))
    if not spec:
        return
    from claimlog import platform

    reads = {"torch": platform.TORCH_VARIABLES, "numpy": (platform.NUMPY_VARIABLE,)}
    before = {name: os.environ.get(name) for name in platform.VARIABLES}
    platform.apply()
    # torch and numpy read their variables as they are imported: one imported already
    # computes with its own choice (the platform says what), not the reference's.
    early_config.stash[IMPORTED_FIRST] = [
        module
        for module, variables in reads.items()
        if module in sys.modules and any(before[n] != os.environ.get(n) for n in variables)
    ]
    try:
        declaration = declare(load(spec, str(early_config.inipath)))
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None
    manager = early_config.pluginmanager
    # The engine's own modules import one another: registered as imported (pytest would
    # warn that an imported module cannot be rewritten for its asserts, which they need not).
    for name in MODULES:
        module = importlib.import_module(name)
        if not manager.is_registered(module):
            manager.register(module, name)
    for name in declaration.plugins:  # the workshop's, as a conftest's pytest_plugins would
        manager.import_plugin(name)
