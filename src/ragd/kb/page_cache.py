"""Drawn pages kept on disk, least recently used dropped first, within a byte budget.

Entries are files named by a key's SHA-256 under one folder (``RAGD_PAGES__CACHE_DIR``, default
``<data_dir>/pages``), written whole (a temporary file renamed into place), so replicas sharing the
folder and a crash mid-write never leave half an entry.  Reading an entry touches its modification
time; after each write, when the folder holds more than the budget, the entries read longest ago
go until it holds 90 % of it.  Synchronous file I/O: callers run it off the event loop.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path

_KEEP = 0.9  # after an eviction the folder holds at most this share of the budget


class PageCache:
    def __init__(self, folder: Path, max_bytes: int) -> None:
        self._folder = folder
        self._max_bytes = max_bytes

    @property
    def enabled(self) -> bool:
        return self._max_bytes > 0

    def get(self, key: str) -> bytes | None:
        """The entry's bytes, or None; a hit counts as a use (it is kept longer)."""
        if not self.enabled:
            return None
        path = self._path(key)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        with contextlib.suppress(OSError):
            os.utime(path)
        return data

    def put(self, key: str, data: bytes) -> None:
        """Keep ``data`` under ``key`` (an entry over the whole budget is not kept)."""
        if not self.enabled or len(data) > self._max_bytes:
            return
        self._folder.mkdir(parents=True, exist_ok=True)
        handle, tmp = tempfile.mkstemp(dir=self._folder, prefix=".tmp-")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(tmp, self._path(key))
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            return
        self._evict()

    def _path(self, key: str) -> Path:
        return self._folder / hashlib.sha256(key.encode("utf-8")).hexdigest()

    def _evict(self) -> None:
        entries: list[tuple[float, int, str]] = []
        total = 0
        with contextlib.suppress(OSError), os.scandir(self._folder) as found:
            for entry in found:
                if entry.name.startswith(".tmp-"):
                    continue
                with contextlib.suppress(OSError):
                    stat = entry.stat()
                    entries.append((stat.st_mtime, stat.st_size, entry.path))
                    total += stat.st_size
        if total <= self._max_bytes:
            return
        for _, size, path in sorted(entries):
            with contextlib.suppress(OSError):
                os.unlink(path)
                total -= size
            if total <= self._max_bytes * _KEEP:
                break
