"""A content-addressed store of results, kept in a folder (pytest's cache directory), and
the atomic writes every file of the project is written with.

An entry is named by a key: a digest of everything its content depends on, so a changed input
finds no entry and the result is computed again. Each entry is two files: the content
(`<key>.bin`) and, written last, its description (`<key>.json`): what it is, when and where it
was computed, and the sha256 and size of the content. Reading checks both; an entry that is
truncated, corrupt or written for another key is reported as `Damaged` and never used.
Writes are atomic and take a lock per key, so xdist workers and concurrent sessions never
see, or leave, half an entry. A `Memo` is the one way a result is kept and reused: the key,
the lock, the damaged entry computed again, and the event said.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from filelock import FileLock


def digest(*parts: bytes | str) -> str:
    """sha256 of the parts, each length-prefixed so that ("ab", "c") != ("a", "bc")."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()


def python_files(roots: Iterable[Path]) -> list[Path]:
    """The Python files of `roots`, each a file or a folder searched whole: where a workshop's
    code lives (`Declaration.computing`, `Declaration.quoting`)."""
    return [f for root in roots for f in ([root] if root.is_file() else root.rglob("*.py"))]


def module_name(file: Path) -> str:
    """The dotted name a file is imported by, up to its top package (a claims module, in no
    package: its stem)."""
    names = [file.stem] if file.name != "__init__.py" else []
    folder = file.parent
    while (folder / "__init__.py").exists():
        names.insert(0, folder.name)
        folder = folder.parent
    return ".".join(names)


def source_digest(files: Iterable[Path]) -> str:
    """A digest of source files' contents, by name: editing any line, a comment included,
    changes it."""
    return digest(*(part for f in sorted(files) for part in (f.name, f.read_bytes())))


@dataclass(frozen=True)
class Entry:
    content: bytes
    about: Mapping[str, Any]  # the description written with it (without the checksum)


@dataclass(frozen=True)
class Damaged:
    """An entry that exists but cannot be trusted, and why."""

    key: str
    reason: str


class Store:
    """Entries in one folder, by key."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _paths(self, key: str) -> tuple[Path, Path]:
        return self.folder / f"{key}.bin", self.folder / f"{key}.json"

    def lock(self, key: str, timeout: float = -1) -> FileLock:
        """A lock for computing and writing one entry (blocking; `timeout=0` to try)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self.folder / f"{key}.lock"), timeout=timeout)

    def has(self, key: str) -> bool:
        return all(p.exists() for p in self._paths(key))

    def keys(self) -> list[str]:
        """The key of every entry whose description is written (the entry's commit), in a
        fixed order: sound or not, as `get` will tell."""
        return sorted(p.stem for p in self.folder.glob("*.json")) if self.folder.is_dir() else []

    def get(self, key: str) -> Entry | Damaged | None:
        """The entry for `key`, None if there is none, or Damaged."""
        content_path, about_path = self._paths(key)
        if not about_path.exists() and not content_path.exists():
            return None
        try:
            about = json.loads(about_path.read_text())
            content = content_path.read_bytes()
        except (OSError, ValueError) as error:
            return Damaged(key, f"unreadable ({type(error).__name__}: {error})")
        if not isinstance(about, dict) or about.get("key") != key:
            return Damaged(key, "written for another key")
        if len(content) != about.get("size") or digest(content) != about.get("sha256"):
            return Damaged(key, "its content does not match its checksum (truncated or corrupt)")
        return Entry(content, {k: v for k, v in about.items() if k not in ("sha256", "size")})

    def keep_as(self, key: str, new_key: str, about: Mapping[str, Any]) -> bool:
        """Keep the sound entry of `key` also under `new_key`, its description updated with
        `about`: the same result, described anew. It replaces what `new_key` held (an entry
        damaged, or older than one computed again under --recompute). Whether there was one
        to keep."""
        found = self.get(key)
        if not isinstance(found, Entry):
            return False
        with self.lock(new_key):
            self.put(new_key, found.content, {**found.about, **about})
        return True

    def put(self, key: str, content: bytes, about: Mapping[str, Any]) -> None:
        """Write an entry: the content first, its description (the commit) last."""
        content_path, about_path = self._paths(key)
        with replacing(content_path) as tmp:
            tmp.write_bytes(content)
        description = {**about, "key": key, "size": len(content), "sha256": digest(content)}
        with replacing(about_path) as tmp:
            tmp.write_text(json.dumps(description, indent=1, sort_keys=True) + "\n")


COMPUTED, REUSED, DAMAGED = "computed", "reused", "damaged"
# Runs that could have trained together, trained one at a time: together gave other bits here.
APART = "apart"
MISSING = object()  # no usable entry (`Memo.found`)


@dataclass(frozen=True)
class Event:
    """What a process did with one kept result: computed it (and kept it), reused it, or
    found it damaged (and so computed it again)."""

    what: str  # COMPUTED, REUSED or DAMAGED
    kind: str  # what a `Memo` keeps: "run", "result", "figure", "torch facts"
    name: str  # which one: "batch norm", "S2 sigmoid facts", "two_moons.png"
    detail: Any = None  # reused: the entry's description; damaged: why
    # computed: how long computing it took, in seconds of wall time (for the sweep's floor)
    seconds: float | None = field(default=None, compare=False)


T = TypeVar("T")


class Memo:
    """Results of one kind, each computed at most once per key and kept in a `Store`.

        memo = Memo(store, "result", on_event=events.append)
        facts = memo.get("S2 sigmoid facts", key, compute, encode=pickle.dumps, decode=...)

    The one way every result bnvg reuses from pytest's cache is kept (trained runs, computed
    results, figures, torch's facts of the platform): the key names everything the result
    depends on; a lock per key lets one process compute while the others wait and then read
    it (xdist workers, concurrent sessions); a damaged entry, or one that no longer decodes,
    is reported and computed again; and every reuse, computation and damage is told to
    `on_event`. With `recompute`, only entries this `session` wrote are used: every result is
    computed again once, and shared between the session's processes. Without a store (pytest's
    cache disabled) it computes every time.
    """

    def __init__(
        self,
        store: Store | None,
        kind: str,
        *,
        recompute: bool = False,
        session: str = "",
        on_event: Callable[[Event], None] | None = None,
    ) -> None:
        self.store = store
        self.kind = kind
        self.recompute = recompute
        self.session = session
        self.on_event = on_event or (lambda event: None)

    def get(
        self,
        name: str,
        key: str,
        compute: Callable[[], T],
        *,
        encode: Callable[[T], bytes],
        decode: Callable[[Entry], T],
        about: Callable[[T], Mapping[str, Any]] = lambda value: {},
    ) -> T:
        """The result `name`: kept from before, or computed now by `compute()` and kept
        (`encode` makes its bytes, `about` its description; `decode` reads an entry back),
        waiting while another process holds the key's lock (computing it)."""
        with self.store.lock(key) if self.store is not None else nullcontext():
            found = MISSING if self.store is None else self.found(name, key, decode)
            if found is not MISSING:
                return found  # type: ignore[return-value]
            started = time.perf_counter()
            value = compute()
            self.keep(name, key, value, encode, about, time.perf_counter() - started)
            return value

    def found(self, name: str, key: str, decode: Callable[[Entry], T]) -> T | object:
        """The kept result, telling `on_event` it was reused, or MISSING (a damaged entry, or
        one that no longer decodes, is told too). The caller holds the key's lock."""
        assert self.store is not None
        found = self.store.get(key)
        if isinstance(found, Damaged):
            self.on_event(Event(DAMAGED, self.kind, name, found.reason))
        elif found is not None and self._usable(found):
            try:
                kept = decode(found)
            except Exception as error:  # a class that moved or changed: compute anew
                self.on_event(Event(DAMAGED, self.kind, name, f"{type(error).__name__}: {error}"))
            else:
                if found.about.get("session") != self.session:
                    self.on_event(Event(REUSED, self.kind, name, dict(found.about)))
                return kept
        return MISSING

    def keep(
        self,
        name: str,
        key: str,
        value: T,
        encode: Callable[[T], bytes],
        about: Callable[[T], Mapping[str, Any]],
        seconds: float,
        detail: Mapping[str, Any] | None = None,
    ) -> None:
        """Keep `value`, computed in `seconds`, under `key` (the caller holds its lock; no
        store: only told)."""
        if self.store is not None:
            when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
            description = {"name": name, "kind": self.kind, "session": self.session, "at": when}
            self.store.put(key, encode(value), {**about(value), **description})
        self.on_event(Event(COMPUTED, self.kind, name, dict(detail) if detail else None, seconds))

    def peek(self, key: str, decode: Callable[[Entry], T]) -> T | None:
        """The kept result for `key` if there is a sound one this memo would use (under
        `recompute`, one of this session's), without computing anything."""
        found = None if self.store is None else self.store.get(key)
        if not isinstance(found, Entry) or not self._usable(found):
            return None
        try:
            return decode(found)
        except Exception:
            return None

    def _usable(self, entry: Entry) -> bool:
        return not self.recompute or entry.about.get("session") == self.session


# -- atomic writes: a file replaced whole, or not at all ------------------------------------
UNFINISHED = ".tmp"  # the suffix of `replacing`'s temporary files


@contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A temporary file beside `path` to write to; when the block ends without an error it
    replaces `path` in one rename, so readers see the old file or the new one, never half.
    The temporary file is removed whatever happens, unless the process is killed first
    (`unfinished_writes` finds what it then leaves)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=UNFINISHED)
    os.close(fd)
    # mkstemp makes the file private (0600); give it the mode a plain open() would have.
    os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask())
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def unfinished_writes(folder: Path) -> list[Path]:
    """The temporary files that writes under `folder`, at any depth, left when their process
    was killed inside `replacing`: never a file's content, and never to be committed."""
    return sorted(folder.rglob(f".*{UNFINISHED}"))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: Path, text: str) -> None:
    """Write `text` to `path` atomically (see `replacing`), in UTF-8 whatever the locale,
    each newline as written, and on disk before the rename puts it in place."""
    with replacing(path) as tmp, open(tmp, "wb") as f:
        f.write(text.encode("utf-8"))
        f.flush()
        os.fsync(f.fileno())


def read_json(path: Path) -> Any:
    """What the JSON file `path` holds; None where it is missing, unreadable or no JSON."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def relative(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)
