"""An advisory, process-exclusive lock on an embedded index directory.

Qdrant Edge refuses a second opener of the same shard with an opaque WAL
error; this lock turns that into a clear :class:`StoreLocked` before Edge is
touched, and also covers the create-and-write-manifest window.  ``flock``
locks belong to an open file description, so they are released when the
holder exits or crashes, and a second opener in the *same* process is
refused too.
"""

from __future__ import annotations

import fcntl
import logging
import os
from pathlib import Path

from ragd.errors import StoreLocked

log = logging.getLogger(__name__)

LOCK_FILE = "ragd.lock"


class DirLock:
    """``acquire`` or raise StoreLocked; ``release`` is idempotent."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / LOCK_FILE
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        if self._fd is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            holder = _read_holder(fd)
            os.close(fd)
            raise StoreLocked(
                f"the index at {self.path.parent} is in use by another ragd process{holder}",
                hint="stop the other process (e.g. `ragd serve`) or use another data dir",
            ) from exc
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        log.debug("locked %s", self.path)

    def held_elsewhere(self) -> bool:
        """Whether another open of the lock file holds it now (a probe: nothing is created or kept)."""
        if self._fd is not None:
            return False
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # closing drops a lock the probe took
        return False

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
        log.debug("unlocked %s", self.path)


def _read_holder(fd: int) -> str:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""
    return f" (pid {text})" if text.isdigit() else ""
