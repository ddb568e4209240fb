"""This process's platform, and where it stands with the evidence: the reference, held, or new.

The platform (`bnvg.experiment.platform.Platform`) is found once per computing process. What
torch says of it (its version, the kernels ATen dispatches to) is kept in pytest's cache
(`.pytest_cache/d/bnvg-torch`), so a session that computes nothing never imports torch.

Its identity is compared with the reference identity (`snapshots/environment.json`), then
looked up among the committed fragments of this experiment
(`snapshots/evidence/fragments/<platform>/`) at this session's seeds. The rules that follow
from the standing live in `bnvg.evidence.verdicts`.
"""

from __future__ import annotations

import json

import pytest

from bnvg.evidence.fragments import FragmentStore, seed_variant_name
from bnvg.evidence.verdicts import HELD, NEW, REFERENCE, Standing
from bnvg.experiment.platform import Platform, torch_facts
from bnvg.plugin.options import Settings, settings
from bnvg.store import Store

TORCH_FACTS_FOLDER = "bnvg-torch"
FACTS = pytest.StashKey[dict[str, str]]()
PLATFORM = pytest.StashKey[Platform]()
STANDING = pytest.StashKey[Standing]()


def process_facts(config: pytest.Config) -> dict[str, str]:
    """torch's facts of this process's platform, found once per process."""
    if FACTS not in config.stash:
        pytest_cache = getattr(config, "cache", None)
        store = Store(pytest_cache.mkdir(TORCH_FACTS_FOLDER)) if pytest_cache is not None else None
        config.stash[FACTS] = torch_facts(store)
    return config.stash[FACTS]


def process_platform(config: pytest.Config) -> Platform:
    """The platform this process computes on."""
    if PLATFORM not in config.stash:
        threads = settings(config).torch_threads
        config.stash[PLATFORM] = Platform.here(threads, process_facts(config))
    return config.stash[PLATFORM]


def reference_identity(s: Settings) -> Platform | None:
    """The reference, as `snapshots/environment.json` records its identity (None if it
    cannot be read)."""
    try:
        data = json.loads(s.places.environment.read_text())
        return Platform.from_json(data) if isinstance(data, dict) else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def find(here: Platform, s: Settings) -> Standing:
    """The standing of the platform `here` for a session with settings `s`."""
    recorded = reference_identity(s)
    reference = recorded.id if recorded else ""
    variant = seed_variant_name(s.sampler_seed, s.init_seed)
    if variant is None and here.id == reference:
        return Standing(REFERENCE, here.id, reference, s.strict)
    fragment = FragmentStore(s.places.fragments, s.experiment).at_seeds(here.id, variant)
    if fragment is None:
        return Standing(NEW, here.id, reference, s.strict)
    return Standing(
        HELD,
        here.id,
        reference,
        s.strict,
        readings={name: r.as_float() for name, r in fragment.readings.items()},
        tables=fragment.tables,
    )


def standing(config: pytest.Config) -> Standing:
    """This process's standing (found once per process)."""
    if STANDING not in config.stash:
        config.stash[STANDING] = find(process_platform(config), settings(config))
    return config.stash[STANDING]
