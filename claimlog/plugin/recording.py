"""The kernels a session's computations call: recorded by a full update, examined where a
number moved on the reference.

The fingerprint of a platform replays the workshop's own kernels (`claimlog.kernels`), which
the reference identity names. A full update finds them (`KernelRecording.hearing`,
`KernelRecording.note_kernels`: each computation heard from its first kernel to its last,
`claimlog.hearing`), and refuses, in one line, a computation that is not deterministic; the
controller writes them into `snapshots/environment.json`. Where a number moved on the
reference all the same, the computations this process asked for are heard here and held
against the record (`KernelRecording.examine`): what sets this machine apart from it.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

import pytest

from claimlog.declaration import seed_variant_name
from claimlog.kernels import NotDeterministic, reference_kernels
from claimlog.machine import import_torch
from claimlog.plugin.options import narrowed
from claimlog.store import digest

if TYPE_CHECKING:
    from claimlog.plugin.options import Settings
    from claimlog.store import Memo


class KernelRecording:
    """The kernels one process's computations called, by computation (`recorded`), and those
    refused as not deterministic (`refused`); an xdist worker ships both to the controller."""

    def __init__(
        self,
        config: pytest.Config,
        settings: Callable[[], Settings],
        memo: Callable[[str, str], Memo],
    ) -> None:
        """Of the session of `config`, whose settings (read at configure, after this is
        made) `settings` gives, and whose pytest cache `memo` keeps the records in."""
        self._config = config
        self._settings = settings
        self._memo = memo
        self.recorded: dict[str, tuple[str, ...]] = {}  # kernels called, by computation
        self.refused: list[str] = []  # computations refused as not deterministic
        # Every computation this process asked for (to examine a number that moved), by name.
        self.computations: dict[str, Callable[[], object]] = {}
        self._examined: dict[str, list[str]] = {}

    def records_kernels(self) -> bool:
        """Whether this session may record the reference, and so its kernels: a full update
        at the workshop's own seeds (a narrowed one, a sweep's job among them, never writes
        the reference identity)."""
        s = self._settings()
        return s.update and not narrowed(self._config) and seed_variant_name(s.seeds) is None

    def note_kernels(self, name: str, compute: Callable[[], object], key: str) -> None:
        """Under an update that records the reference: the kernels of the computation `name`,
        from its first call to its last, as it was heard computing (`hearing`) or
        run whole once more, then started twice (`claimlog.hearing.record`); a computation
        that gives other bits the second time fails the claim in one line, before anything
        is recorded. Kept in pytest's cache under the computation's own `key` (its code,
        recipe and platform) and how it is recorded: an update after an edit of the text
        records nothing again."""
        __tracebackhide__ = True
        self.computations.setdefault(name, compute)
        if name in self.recorded or not self.records_kernels():
            return
        try:
            found = self._kernels_memo(name, compute, key, None)
        except NotDeterministic as refused:
            self.refused.append(str(refused))
            pytest.fail(str(refused), pytrace=False)
        self.recorded[name] = tuple(found)

    def _kernels_memo(
        self,
        name: str,
        compute: Callable[[], object],
        key: str,
        whole: Mapping[str, str] | None,
    ) -> list[str]:
        from claimlog.hearing import record

        def recorded() -> list[str]:
            import_torch()
            return sorted(record(name, compute, whole))

        found = self._memo("kernels", "kernels").get(
            name,
            self._kernels_key(key),
            recorded,
            encode=lambda kernels: json.dumps(kernels).encode(),
            decode=lambda entry: list(json.loads(entry.content)),
        )
        return list(found or ())

    def _kernels_key(self, key: str) -> str:
        from claimlog.hearing import recording

        return digest(json.dumps([key, recording()]))

    def kernels_known(self, name: str, key: str) -> bool:
        """Whether the kernels of the computation `name` (under its `key`) need no recording:
        none is recorded in this session, or its record is kept."""
        if not self.records_kernels() or name in self.recorded:
            return True
        memo = self._memo("kernels", "kernels")
        return memo.peek(self._kernels_key(key), lambda entry: entry.content) is not None

    @contextlib.contextmanager
    def hearing(self, name: str, compute: Callable[[], object], key: str) -> Iterator[None]:
        """Around the computation `name` as it runs anyway (a run trained, a result computed):
        where its kernels are to be recorded, it is heard from its first call to its last
        (`claimlog.hearing.Listening`), and its record made and kept at once, so that no
        claim runs it whole again to hear it. A computation refused as not deterministic is
        refused (NotDeterministic), and kept by nobody: a claim that asks for its kernels
        refuses it in one line (`note_kernels`)."""
        if self.kernels_known(name, key):
            yield
            return
        from claimlog.hearing import Listening

        with Listening() as heard:
            yield
        self.recorded[name] = tuple(self._kernels_memo(name, compute, key, heard.kernels))

    def examine(self) -> list[str]:
        """Where this platform's fingerprint is the reference's and a number moved all the
        same: each computation this process asked for heard here, run whole, and its kernels
        held against the record
        (`claimlog.hearing.apart_from_record`): what sets this machine apart from it, for
        people, or [] where every kernel is the record's, with the record's bits (then
        something the keys do not see changed, or the computation is not deterministic).
        Each computation is examined once a session."""
        from claimlog.hearing import apart_from_record, kernels_of

        reference = reference_kernels(self._settings().places.environment)
        found: list[str] = []
        for name, compute in self.computations.items():
            if name not in self._examined:
                import_torch()
                self._examined[name] = apart_from_record(kernels_of(compute), reference)
            found += [f"{name}: {said}" for said in self._examined[name]]
        return found

    def recorded_kernels(self) -> set[str]:
        """Every kernel this process (and, on the controller, every worker) recorded."""
        return {k for kernels in self.recorded.values() for k in kernels}
