"""A content-addressed store of results, kept in a folder (pytest's cache directory), and
the atomic writes every file of the project is written with.

An entry is named by a key: a digest of everything its content depends on, so a changed input
finds no entry and the result is computed again. Each entry is two files: the content
(`<key>.bin`) and, written last, its description (`<key>.json`): what it is, when and where it
was computed, and the sha256 and size of the content. Reading checks both; an entry that is
truncated, corrupt or written for another key is reported as `Damaged` and never used.
Writes are atomic and take a lock per key, so xdist workers and concurrent sessions never
see, or leave, half an entry.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock


def digest(*parts: bytes | str) -> str:
    """sha256 of the parts, each length-prefixed so that ("ab", "c") != ("a", "bc")."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()


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

    def put(self, key: str, content: bytes, about: Mapping[str, Any]) -> None:
        """Write an entry: the content first, its description (the commit) last."""
        content_path, about_path = self._paths(key)
        with replacing(content_path) as tmp:
            tmp.write_bytes(content)
        description = {**about, "key": key, "size": len(content), "sha256": digest(content)}
        with replacing(about_path) as tmp:
            tmp.write_text(json.dumps(description, indent=1, sort_keys=True) + "\n")


# -- atomic writes: a file replaced whole, or not at all ------------------------------------
@contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A temporary file beside `path` to write to; when the block ends without an error it
    replaces `path` in one rename, so readers see the old file or the new one, never half.
    The temporary file is removed whatever happens."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    # mkstemp makes the file private (0600); give it the mode a plain open() would have.
    os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask())
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: Path, text: str) -> None:
    """Write `text` to `path` atomically (see `replacing`)."""
    with replacing(path) as tmp, open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def relative(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)
