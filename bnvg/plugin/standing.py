"""Where this session's platform stands with the evidence: the reference, held, or new.

Found once per computing process (from torch's facts of the platform, kept in pytest's cache
by `bnvg.plugin.computed`): this platform's id
is compared with the reference's (`snapshots/environment.json`), then looked up among the
committed fragments (`snapshots/evidence/fragments/<platform>/`) at this session's seeds.
The rules that follow from it live in `bnvg.evidence.verdicts`.
"""

from __future__ import annotations

import json

import pytest

from bnvg.evidence.verdicts import HELD, NEW, REFERENCE, Standing
from bnvg.experiment.platform import platform_id
from bnvg.plugin.options import Settings, settings
from bnvg.sweep.fragments import FragmentStore
from bnvg.sweep.variants import seed_variant_name

STANDING = pytest.StashKey[Standing]()


def recorded_platform(s: Settings) -> dict[str, str]:
    """The reference platform, as `snapshots/environment.json` records it ({} if unreadable)."""
    try:
        data = json.loads(s.places.environment.read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def find(here: dict[str, str], s: Settings) -> Standing:
    """The standing of the platform `here` for a session with settings `s`."""
    pid = platform_id(here)
    recorded = recorded_platform(s)
    reference = platform_id(recorded) if recorded else ""
    variant = seed_variant_name(s.sampler_seed, s.init_seed)
    if variant is None and pid == reference:
        return Standing(REFERENCE, pid, reference, s.strict)
    fragment = FragmentStore(s.places.fragments).at_seeds(pid, variant)
    if fragment is None:
        return Standing(NEW, pid, reference, s.strict)
    return Standing(
        HELD,
        pid,
        reference,
        s.strict,
        readings={name: r.as_float() for name, r in fragment.readings.items()},
        tables=fragment.tables,
    )


def standing(config: pytest.Config) -> Standing:
    """This process's standing (found once per process)."""
    if STANDING not in config.stash:
        from bnvg.experiment.platform import current
        from bnvg.plugin.platform_facts import process_facts

        s = settings(config)
        config.stash[STANDING] = find(current(s.torch_threads, process_facts(config)), s)
    return config.stash[STANDING]
