"""Results computed once and reused: the memo the claims' fixtures compute through, and the
facts of torch that let a session that computes nothing skip importing it."""

import subprocess
import sys

import pytest
import torch

from claimlog.plugin.fixtures import Computed
from claimlog.store import COMPUTED, Memo, Store


def memo(tmp_path, events, source="v1", recompute=False):
    """A session's computed results (each call another session), its events told as
    (what, name), computations left out."""

    def told(event):
        if event.what != COMPUTED:
            events.append((event.what, event.name))

    session = f"session {len(list(tmp_path.glob('*')))}-{id(events)}-{source}-{recompute}"
    kept = Memo(
        Store(tmp_path / "results"), "result", recompute=recompute, session=session, on_event=told
    )
    return Computed(kept, {"source": source, "torch": "2.13.0+cpu"})


def test_a_result_is_computed_once_and_reused_by_a_later_session_with_the_same_inputs(tmp_path):
    calls, events = [], []

    def compute():
        calls.append(1)
        return {"ratio": 3.32e-04, "layers": (1, 2, 3)}

    first = memo(tmp_path, events).get("S4 at-init measurements", compute)
    assert first == memo(tmp_path, events).get("S4 at-init measurements", compute)
    assert len(calls) == 1 and events == [("reused", "S4 at-init measurements")]


def test_an_edited_source_or_recompute_computes_it_again(tmp_path):
    calls, events = [], []

    def compute():
        calls.append(1)
        return 0.25

    memo(tmp_path, events).get("S2 sigmoid facts", compute)
    memo(tmp_path, events, source="v2").get("S2 sigmoid facts", compute)
    memo(tmp_path, events, recompute=True).get("S2 sigmoid facts", compute)
    assert len(calls) == 3 and events == []


def test_a_damaged_entry_is_reported_and_computed_again(tmp_path):
    events = []
    memo(tmp_path, events).get("S9 eval bug", lambda: 0.695)
    [entry] = (tmp_path / "results").glob("*.bin")
    entry.write_bytes(entry.read_bytes()[:-1])
    assert memo(tmp_path, events).get("S9 eval bug", lambda: 0.695) == 0.695
    assert events == [("damaged", "S9 eval bug")]


@pytest.mark.slow
def test_torchs_facts_are_asked_of_torch_once_then_read_without_importing_it(tmp_path):
    script = (
        "import sys; from pathlib import Path; from claimlog.store import Store; "
        "from claimlog.machine import torch_facts; "
        f"facts = torch_facts(Store(Path({str(tmp_path)!r}))); "
        "print(facts['cpu capability'], 'torch' in sys.modules)"
    )
    said = [
        subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True
        ).stdout.split()
        for _ in range(2)
    ]
    # What torch itself answers in this environment (AVX2 under the reference kernels), both
    # times: the second answer, read without torch, is the first one kept.
    assert said[0][0] == said[1][0] == torch.backends.cpu.get_cpu_capability()
    assert [s[1] for s in said] == ["True", "False"]


def test_a_figures_inputs_are_known_by_content_whatever_the_workshop_names_them():
    """Issue 60: the engine knows no workshop's data set by its attribute names. A dataclass
    of any fields is known by each field's content, a tensor by its values."""
    from dataclasses import dataclass

    import numpy as np

    from claimlog.plugin.fixtures import fingerprint

    @dataclass(frozen=True)
    class Names:
        words: tuple[str, ...]
        counts: np.ndarray

    same = fingerprint(Names(("emma", "ava"), np.array([1, 2])))
    assert same == fingerprint(Names(("emma", "ava"), np.array([1, 2])))
    assert same != fingerprint(Names(("emma", "ava"), np.array([1, 3])))
    assert same != fingerprint(Names(("emma", "olivia"), np.array([1, 2])))
    big = torch.arange(5000, dtype=torch.float32)  # its repr would elide the middle
    moved = big.clone()
    moved[2500] = -1.0
    assert fingerprint(big) != fingerprint(moved)
