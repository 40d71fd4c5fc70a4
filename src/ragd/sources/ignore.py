"""Which files of a folder count: .gitignore-style ignore rules and the walk that applies them.

Hidden files and folders (``.DS_Store``, AppleDouble ``._*`` files), VCS and
dependency folders, and the junk operating systems and Office leave in folders
(``Thumbs.db``, ``desktop.ini``, ``~$*`` lock files) are skipped
(:data:`DEFAULT_IGNORES`); every ``.gitignore`` found under the root applies
to its own subtree (pathspec's gitignore semantics), and the caller may add
patterns of its own, which apply from the root like the defaults.  A path is
ignored when any of these specs matches it; an ignored folder hides
everything under it.

Shared by the folder ingest (:func:`ragd.ingest.sources.collect`, hence ``ragd proxy --docs-folder``),
the folder source's scan and the folder watcher, so the three always agree; so is
:func:`leaves_root`, the check that keeps the first two from reading through a symlink that points
out of the folder (``docs/passwd -> /etc/passwd``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import pathspec

__all__ = ["DEFAULT_IGNORES", "LEAVES_ROOT", "IgnoreRules", "leaves_root", "walk_files"]

logger = logging.getLogger(__name__)

DEFAULT_IGNORES = (
    ".*",
    "node_modules/",
    "__pycache__/",
    "venv/",
    "*.pyc",
    "*.egg-info/",
    "dist/",
    "build/",
    "[Tt]humbs.db",
    "[Ee]hthumbs.db",
    "[Dd]esktop.ini",
    "~$*",
)

GITIGNORE = ".gitignore"

#: what a symlink out of the folder is reported as (code ``FORBIDDEN``), wherever a folder is read
LEAVES_ROOT = "a symlink to a file outside the folder (not read)"


def _spec(lines: Iterable[str]) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines(lines)


class IgnoreRules:
    """The ignore rules of one folder tree; ``.gitignore`` files are read once, on first use.

    Build a fresh instance to see edits made to ``.gitignore`` files since.
    ``root`` should be resolved; paths given to the methods must be under it.
    """

    def __init__(self, root: Path, extra: Sequence[str] = ()) -> None:
        self.root = root
        self._base = _spec([*DEFAULT_IGNORES, *extra])
        self._gitignores: dict[Path, pathspec.GitIgnoreSpec | None] = {}

    def ignored(self, path: Path, is_dir: bool) -> bool:
        """Whether ``path`` itself matches a rule (its folders are not looked at: see :meth:`excluded`)."""
        if path == self.root:
            return False
        slash = "/" if is_dir else ""
        if self._base.match_file(path.relative_to(self.root).as_posix() + slash):
            return True
        for base in path.parents:
            spec = self._gitignore(base)
            if spec is not None and spec.match_file(path.relative_to(base).as_posix() + slash):
                return True
            if base == self.root:
                break
        return False

    def excluded(self, path: Path, is_dir: bool) -> bool:
        """Whether ``path`` is ignored or lies in an ignored folder (for paths not met by a walk)."""
        rel = path.relative_to(self.root)
        folders = [self.root.joinpath(*rel.parts[:n]) for n in range(1, len(rel.parts))]
        return any(self.ignored(folder, True) for folder in folders) or self.ignored(path, is_dir)

    def _gitignore(self, folder: Path) -> pathspec.GitIgnoreSpec | None:
        if folder not in self._gitignores:
            self._gitignores[folder] = _read_gitignore(folder / GITIGNORE)
        return self._gitignores[folder]


def _read_gitignore(path: Path) -> pathspec.GitIgnoreSpec | None:
    try:
        if not path.is_file():
            return None
        return _spec(path.read_text(errors="replace").splitlines())
    except OSError as exc:
        logger.warning("cannot read %r, its patterns are not applied: %s", str(path), type(exc).__name__)
        return None


def leaves_root(root: Path, path: Path) -> bool:
    """Whether ``path``, met by :func:`walk_files` under the resolved ``root``, is a symlink to a file
    outside it (never to be read).  Blocking: run it in a thread."""
    return path.is_symlink() and not path.resolve().is_relative_to(root)


def os_reason(exc: OSError) -> str:
    """What went wrong, in the system's words (``Permission denied``), for a user-facing message."""
    return os.strerror(exc.errno) if exc.errno else type(exc).__name__


def _unreadable(folder: Path, exc: OSError) -> None:
    logger.warning("cannot list %r, its files are left out: %s", str(folder), type(exc).__name__)


def walk_files(
    root: Path,
    extra: Sequence[str] = (),
    *,
    unlisted: Callable[[Path, OSError], None] | None = None,
) -> Iterator[Path]:
    """Every file under ``root`` the rules keep, in sorted order per folder (symlinked folders not followed).

    A folder that cannot be listed (``root`` included) is passed to ``unlisted`` with the error and
    its files are left out; without ``unlisted`` that is logged.  Blocking: run it in a thread.
    """
    rules = IgnoreRules(root, extra)
    report = unlisted or _unreadable

    def failed(exc: OSError) -> None:
        report(Path(exc.filename) if exc.filename else root, exc)

    for dirpath, dirnames, filenames in os.walk(root, onerror=failed):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not rules.ignored(here / d, True))
        for name in sorted(filenames):
            path = here / name
            if not rules.ignored(path, False) and path.is_file():
                yield path
