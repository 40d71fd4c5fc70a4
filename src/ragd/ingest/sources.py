"""Which files a folder ingest picks up: a walk with .gitignore-style ignores.

Hidden files and folders, VCS and dependency folders are skipped; every
``.gitignore`` found on the way applies to its own subtree (pathspec's
gitignore semantics), and the caller may add patterns of its own.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pathspec

from ragd.errors import NotFound

DEFAULT_IGNORES = (
    ".*",
    "node_modules/",
    "__pycache__/",
    "venv/",
    "*.pyc",
    "*.egg-info/",
    "dist/",
    "build/",
)


@dataclass(frozen=True, slots=True)
class SourceFile:
    path: Path
    #: how the file is named in results: relative to the ingest root's parent
    source: str


def _spec(lines: Iterable[str]) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines(lines)


def _walk(root: Path, extra: Sequence[str]) -> Iterator[Path]:
    specs: list[tuple[Path, pathspec.GitIgnoreSpec]] = [(root, _spec([*DEFAULT_IGNORES, *extra]))]

    def ignored(path: Path, is_dir: bool) -> bool:
        for base, spec in specs:
            if base == path or base not in path.parents:
                continue
            rel = path.relative_to(base).as_posix() + ("/" if is_dir else "")
            if spec.match_file(rel):
                return True
        return False

    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        gitignore = here / ".gitignore"
        if gitignore.is_file():
            specs.append((here, _spec(gitignore.read_text(errors="replace").splitlines())))
        dirnames[:] = sorted(d for d in dirnames if not ignored(here / d, True))
        for name in sorted(filenames):
            path = here / name
            if not ignored(path, False) and path.is_file():
                yield path


def collect(paths: Sequence[Path], ignore: Sequence[str] = ()) -> list[SourceFile]:
    """Files under ``paths`` (files are taken as given, folders walked), de-duplicated, in order."""
    seen: set[Path] = set()
    out: list[SourceFile] = []
    for given in paths:
        if not given.exists():
            raise NotFound(f"no such file or folder: {given}")
        root = given.resolve()
        found = [root] if root.is_file() else _walk(root, ignore)
        for path in found:
            if path in seen:
                continue
            seen.add(path)
            label = given / path.relative_to(root) if root.is_dir() else given
            out.append(SourceFile(path=path, source=Path(os.path.normpath(label)).as_posix()))
    return out
