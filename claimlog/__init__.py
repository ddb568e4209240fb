"""claimlog: every number a text quotes, a named reading checked by a pytest claim.

A workshop (an experiment, the log it prints and a text that cites it) declares itself to
claimlog once, and its claims call what is below; everything else of claimlog is its own
business. The whole of it is on one page: docs/engine.md.

What a workshop declares:

- `Declaration`: its name, its log, its recipe, its plugins (the fixtures its claims read),
  its figures' module, the code its computations live in, its seed axes, and the networks
  it trains (a `Training`), and how it trains several at once (a `Together`);
- `Log` of `Line`s, each a `Template` with a `Quantity` (of a `Kind`) per number it prints;
  `LogLine`, a line filled with readings;
- `Table`: the numbers a figure plots, or a history, compared point by point;
- `Computed`: results computed once and kept in pytest's cache (the `computed` fixture).

What a claim calls (beside the fixtures `quoted`, `figure`, `runs`, `computed`, `recipe`,
`figure_table`, `results_log`, `torch_platform`, `fragility_table` and `platform_standing`,
and the markers `log_lines`, `runs` and `evidence`):

- the bounds it states of a reading: `about`, `above`, `below`, `at_least`, `at_most`,
  `exactly`;
- for a claim that reads the sweep's evidence: `Rate` (k of N, with its interval) and
  `seed_variant_name`, the name of the seed variant a session is.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Each name, and the module it lives in. Imported when first asked for (PEP 562): pytest
# imports claimlog.plugin, and so this package, before the reference kernels are set, and
# numpy reads its part of them when it is imported.
_HOMES = {
    "Computed": "claimlog.plugin.fixtures",
    "Declaration": "claimlog.declaration",
    "Kind": "claimlog.log.readings",
    "Line": "claimlog.log.lines",
    "Log": "claimlog.log.lines",
    "LogLine": "claimlog.log.lines",
    "Quantity": "claimlog.log.readings",
    "Rate": "claimlog.evidence.fragility",
    "Table": "claimlog.evidence.tables",
    "Template": "claimlog.log.lines",
    "Together": "claimlog.declaration",
    "Training": "claimlog.declaration",
    "about": "claimlog.log.readings",
    "above": "claimlog.log.readings",
    "at_least": "claimlog.log.readings",
    "at_most": "claimlog.log.readings",
    "below": "claimlog.log.readings",
    "exactly": "claimlog.log.readings",
    "seed_variant_name": "claimlog.declaration",
}

if TYPE_CHECKING:
    from claimlog.declaration import Declaration, Together, Training, seed_variant_name
    from claimlog.evidence.fragility import Rate
    from claimlog.evidence.tables import Table
    from claimlog.log.lines import Line, Log, LogLine, Template
    from claimlog.log.readings import (
        Kind,
        Quantity,
        about,
        above,
        at_least,
        at_most,
        below,
        exactly,
    )
    from claimlog.plugin.fixtures import Computed


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'claimlog' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "Computed",
    "Declaration",
    "Kind",
    "Line",
    "Log",
    "LogLine",
    "Quantity",
    "Rate",
    "Table",
    "Template",
    "Together",
    "Training",
    "about",
    "above",
    "at_least",
    "at_most",
    "below",
    "exactly",
    "seed_variant_name",
]
