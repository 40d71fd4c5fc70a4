"""Which files a folder ingest picks up: a walk with .gitignore-style ignores.

Hidden files and folders, VCS and dependency folders are skipped; every
``.gitignore`` found on the way applies to its own subtree (pathspec's
gitignore semantics), and the caller may add patterns of its own.  The rules
and the walk live in :mod:`ragd.sources.ignore`, shared with folder sources.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ragd.errors import NotFound
from ragd.sources.ignore import DEFAULT_IGNORES, walk_files

__all__ = ["DEFAULT_IGNORES", "SourceFile", "collect"]


@dataclass(frozen=True, slots=True)
class SourceFile:
    path: Path
    #: how the file is named in results: relative to the ingest root's parent
    source: str


def collect(paths: Sequence[Path], ignore: Sequence[str] = ()) -> list[SourceFile]:
    """Files under ``paths`` (files are taken as given, folders walked), de-duplicated, in order."""
    seen: set[Path] = set()
    out: list[SourceFile] = []
    for given in paths:
        if not given.exists():
            raise NotFound(f"no such file or folder: {given}")
        root = given.resolve()
        found = [root] if root.is_file() else walk_files(root, ignore)
        for path in found:
            if path in seen:
                continue
            seen.add(path)
            label = given / path.relative_to(root) if root.is_dir() else given
            out.append(SourceFile(path=path, source=Path(os.path.normpath(label)).as_posix()))
    return out
