"""The record changes all at once or not at all: `--snapshot-update` as one transaction.

The record is what the text cites and a reviewer diffs: `captures/`, `diagrams/`,
`snapshots/text/`, `snapshots/numbers/`, the sweep's evidence (`snapshots/evidence/`, which
an update brings up to the checkout before its claims run), `snapshots/environment.json` and
`snapshots/keys.json`.
Some documents join the transaction too, wherever they are: the journal names them. An update
given the workshop's text (`--workshop DIR`) rewrites the quotes that moved, and one that
merges the evidence rewrites the documentation's sections the sweep generates. Only a
`--snapshot-update` that completes changes any of it: everything it judged passed (every
claim, every citation), and the session was not interrupted. Both snapshot libraries write
their files where they live, from whichever process ran the claim, so the update is guarded
by an undo journal, as a database guards a transaction with a rollback journal:

1. **begin**: copy the record (and the documents, under `before/text/`) into
   `obtained/.update/before/`, then write the journal (one atomic rename). From here on the
   tree may be half written.
2. **commit**, after the session's last write: delete the journal (one atomic unlink, the
   commit point), then the copy.
3. **recover**, before the next session reads anything: a journal left behind means an
   update died part way (SIGKILL, power). Every file of the record is put back as the copy
   has it (each document the journal names too), files the update added to the
   record are deleted, and only then is the journal deleted. A
   recovery killed in turn is redone by the next session: it is idempotent.

So a tree is always found either as committed or as the complete update, never a mix.
Sessions in one checkout take one lock (`obtained/.update.lock`, released by the operating
system when its process dies, however it dies): an update holds it for its whole session;
any other session takes it only to recover, and refuses to start while an update runs.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from claimlog.places import Places
from claimlog.store import atomic_write, read_json, replacing, unfinished_writes

# Under before/: the documents of the transaction, numbered as the journal names them.
TEXT = "text"


class Busy(Exception):
    """Another session of this checkout is updating the record."""


def record_folders(places: Places) -> list[Path]:
    """Every folder of the record there is: `Places.record_folders`, the folders in them,
    and those they lie in (`snapshots/`), below the project's root."""
    found: set[Path] = set()
    for folder in places.record_folders:
        if folder.is_dir():
            found |= {folder, *(p for p in folder.rglob("*") if p.is_dir())}
            found |= {p for p in folder.parents if p.is_relative_to(places.root)} - {places.root}
    return sorted(found)


def record_files(places: Places) -> Iterator[Path]:
    """Every file of the record, as it is now."""
    for folder in places.record_folders:
        if folder.is_dir():
            yield from sorted(p for p in folder.rglob("*") if p.is_file())
    for file in (places.environment, places.recorded_keys):
        if file.is_file():
            yield file


LOOK = 10.0  # seconds at most that another session's look for an interrupted update takes


@dataclass
class Update:
    """One checkout's update transaction (see the module's docstring)."""

    places: Places
    lock: FileLock | None = None

    @property
    def folder(self) -> Path:
        return self.places.update_workspace

    @property
    def journal(self) -> Path:
        return self.folder / "journal.json"

    @property
    def before(self) -> Path:
        return self.folder / "before"

    @property
    def holder(self) -> Path:
        return self.folder / "holder"

    # -- the lock ---------------------------------------------------------------------------
    def acquire(self) -> None:
        """Take the checkout's lock, or raise Busy naming the session that holds it. Every
        session takes it a moment as it starts, to look for an interrupted update
        (`recover`); a lock held by no update that names itself (`begin` writes `holder`) is
        such a look, and is waited for: two sessions started together both run."""
        self.places.make_obtained()
        lock = FileLock(self.places.obtained / ".update.lock")
        try:
            lock.acquire(timeout=0)
        except Timeout:
            if self.holder.exists():
                raise Busy(self._holder()) from None
            try:
                lock.acquire(timeout=LOOK)
            except Timeout:
                raise Busy(self._holder()) from None
        self.lock = lock

    def release(self) -> None:
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def _holder(self) -> str:
        try:
            who = self.holder.read_text().strip()
        except OSError:
            who = "unknown"
        return (
            "another pytest session is updating the snapshots in this checkout "
            f"(process {who}): wait for it to finish, or stop it"
        )

    # -- the transaction --------------------------------------------------------------------
    def recover(self) -> str | None:
        """Put back the record an interrupted update left half written; say so (None when
        there was nothing to recover). Call it holding the lock."""
        if not self.journal.exists():
            shutil.rmtree(self.before, ignore_errors=True)  # a begin that never started
            return None
        restored, removed = self._restore()
        self.journal.unlink()
        shutil.rmtree(self.before, ignore_errors=True)
        self.holder.unlink(missing_ok=True)  # the killed session's, no holder any more
        return (
            "an earlier --snapshot-update was interrupted before it completed: the committed "
            f"record is back ({restored} files restored, {removed} files it had added removed)"
        )

    def begin(self, documents: Sequence[Path] = ()) -> None:
        """Keep a copy of the record, and of the `documents` an update may rewrite beside it
        (the workshop's text, the pages the sweep writes sections of), then open the journal.
        Call it holding the lock."""
        shutil.rmtree(self.before, ignore_errors=True)
        staging = self.folder / "before.partial"
        shutil.rmtree(staging, ignore_errors=True)
        named = [str(document.resolve()) for document in documents]
        copies = [(p, staging / p.relative_to(self.places.root)) for p in record_files(self.places)]
        copies += [(Path(d), staging / TEXT / str(n)) for n, d in enumerate(named)]
        for source, target in copies:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
        staging.mkdir(parents=True, exist_ok=True)
        staging.rename(self.before)
        # The record's folders as they are: those the update makes, it takes away again.
        folders = [str(f.relative_to(self.places.root)) for f in record_folders(self.places)]
        journal = {"began": time.time(), "pid": os.getpid(), "text": named, "folders": folders}
        atomic_write(self.journal, json.dumps(journal))
        # Who holds the lock for a whole session, for a second session's refusal to name.
        atomic_write(self.holder, f"{os.getpid()} since {time.strftime('%H:%M:%S')}")

    def commit(self) -> None:
        """The update completed: its files are the record now."""
        self.journal.unlink(missing_ok=True)
        shutil.rmtree(self.before, ignore_errors=True)
        self.holder.unlink(missing_ok=True)

    def rollback(self) -> None:
        """The update did not complete (interrupted, or crashed): put the record back."""
        self.recover()
        self.holder.unlink(missing_ok=True)

    def _journaled(self, name: str) -> Any:
        """What the journal records under `name`: None where it cannot be read, or records
        none (a journal from before the update kept it)."""
        return (read_json(self.journal) or {}).get(name)

    def _restore(self) -> tuple[int, int]:
        # The documents the journal names, in its copy's order (none in a journal from
        # before the text joined the transaction).
        named = [Path(d) for d in self._journaled("text") or []]
        texts = [(self.before / TEXT / str(n), d) for n, d in enumerate(named)]
        restored = sum(_put_back(s, d) for s, d in texts if s.is_file())
        kept = {
            p.relative_to(self.before)
            for p in self.before.rglob("*")
            if p.is_file() and p.relative_to(self.before).parts[0] != TEXT
        }
        removed = 0
        for path in list(record_files(self.places)):
            if path.relative_to(self.places.root) not in kept:
                path.unlink()
                removed += 1
        for folder in self.places.record_folders:  # stray temporary files of atomic writes
            for stray in unfinished_writes(folder):
                stray.unlink(missing_ok=True)
        root = self.places.root
        restored += sum(_put_back(self.before / name, root / name) for name in sorted(kept))
        # The record's folders when the update began (None: a journal from before it kept
        # them, whose update's folders stay); those the update made, emptied above, go too.
        folders = self._journaled("folders")
        if folders is not None:
            before = {root / f for f in folders}
            made = [f for f in record_folders(self.places) if f not in before]
            for folder in sorted(made, key=lambda f: len(f.parts), reverse=True):
                if not any(folder.iterdir()):
                    folder.rmdir()
        return restored, removed


def _put_back(source: Path, target: Path) -> int:
    """Put the kept copy `source` back at `target`, atomically: 1 if that changed it."""
    if target.is_file() and target.read_bytes() == source.read_bytes():
        return 0
    with replacing(target) as tmp:
        shutil.copyfile(source, tmp)
    return 1
