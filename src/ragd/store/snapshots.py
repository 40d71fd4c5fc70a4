"""The snapshot port: a store engine's own consistent copy of its whole collection.

A Qdrant *server* makes one with its snapshot API (:mod:`ragd.store.qdrant_snapshots`); the
embedded engine (Qdrant Edge) has none here, and its points are backed up by scrolling the store
(:mod:`ragd.kb.backup`).  The copy holds **every tenant's points** (ragd keeps one physical
collection): it serves the whole-instance backup only, never a per-dataset export.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True, slots=True)
class SnapshotFile:
    """A snapshot written to a local file: its size and SHA-256 (checked against the engine's)."""

    bytes: int
    sha256: str


class IndexSnapshots(Protocol):
    """Errors: :class:`ragd.errors.StoreError` subclasses (the engine unreachable, refusing, or a
    download that does not match the engine's checksum)."""

    async def take(self, dest: Path) -> SnapshotFile:
        """Snapshot the collection, download it into ``dest`` (a new file) and check it; the
        engine's copy is deleted afterwards."""
        ...

    async def recover(self, src: Path, sha256: str) -> None:
        """Replace the collection by the snapshot in ``src`` (the engine checks ``sha256`` too)."""
        ...
