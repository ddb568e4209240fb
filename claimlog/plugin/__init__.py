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


TORCH_FIRST = (
    "claimlog: torch was imported before claimlog could set the reference kernels (by a "
    "plugin or conftest loaded first, or PYTHONSTARTUP): it may compute with its own, as the "
    "platform's fingerprint will show; set ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=COMPATIBLE "
    "ONEDNN_MAX_CPU_ISA=AVX2 before Python starts to compute the reference's\n"
)


TORCH_CAME_FIRST = pytest.StashKey[bool]()


def pytest_configure(config: pytest.Config) -> None:
    if config.stash.get(TORCH_CAME_FIRST, False):
        sys.stderr.write(TORCH_FIRST)


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

    before = {name: os.environ.get(name) for name in platform.TORCH_VARIABLES}
    platform.apply()
    if "torch" in sys.modules and before != {n: os.environ.get(n) for n in before}:
        # torch reads some of them as it is imported: what it computes now is its own
        # choice, which the platform's fingerprint will show, not the reference's. Said once
        # pytest's capture of conftest loading is over (pytest_configure).
        early_config.stash[TORCH_CAME_FIRST] = True
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
