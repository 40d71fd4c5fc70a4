"""Folder listings that fail on demand.

Root lists any folder whatever its mode, so tests that need a folder ragd cannot list make
``os.scandir`` (the call ``os.walk`` makes per folder) raise for the folders they name.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


class FailingListing:
    """``os.scandir`` raising ``failures[folder]`` for the folders in it, the real call otherwise."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.failures: dict[Path, OSError] = {}
        real = os.scandir

        def scandir(path: str = ".") -> object:
            failure = self.failures.get(Path(path))
            if failure is not None:
                raise failure
            return real(path)

        monkeypatch.setattr(os, "scandir", scandir)

    def deny(self, *folders: Path) -> None:
        """Listing exactly these folders fails with EACCES (none: every listing works again)."""
        self.failures = {folder: PermissionError(13, "Permission denied", str(folder)) for folder in folders}
