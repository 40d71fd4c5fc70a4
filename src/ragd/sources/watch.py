"""Watch a folder and report which keys changed, in debounced batches (over ``watchfiles``).

Each batch is the set of keys (POSIX paths relative to the root, as
:class:`ragd.sources.folder.FolderSource` names them) that were added,
modified or deleted; a rename reports both the old and the new key.  A batch
closes after ``quiet_ms`` without events, or ``debounce_ms`` after its first
event if events keep coming, so a burst of edits arrives as one batch.

Paths the folder's ignore rules drop (hidden and dependency folders,
``.gitignore`` patterns, re-read for every batch) are left out, with one
exception: an edited, added or deleted ``.gitignore`` is reported under its
own key, since it can change which files belong to the source (a consumer
that rescans on any batch picks the change up; one that looks up each key
finds no such item and does nothing).

A folder moved in whole is reported as the files under it.  A key that no
longer exists may name a folder that was deleted or moved out whole: treat it
as "this path and everything under it".

Stopping: set ``stop_event`` (it is only read, never set by the watcher),
cancel the consuming task, or ``aclose()`` the iterator; the watcher thread
ends within one ``quiet_ms`` step.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from pathlib import Path
from typing import Any, cast

from watchfiles import Change, awatch

from ragd.errors import NotFound
from ragd.sources.ignore import GITIGNORE, IgnoreRules, walk_files

__all__ = ["watch_folder"]

logger = logging.getLogger(__name__)


class _StopSignal:
    """What the watcher thread polls: our own flag or the caller's event.

    ``awatch`` sets the event it was given when cancelled; this keeps it off the caller's.
    """

    def __init__(self, external: asyncio.Event | None) -> None:
        self._external = external
        self._own = False

    def is_set(self) -> bool:
        return self._own or (self._external is not None and self._external.is_set())

    def set(self) -> None:
        self._own = True


async def watch_folder(
    root: Path | str,
    *,
    ignore: Sequence[str] = (),
    debounce_ms: int = 500,
    quiet_ms: int = 50,
    stop_event: asyncio.Event | None = None,
) -> AsyncIterator[set[str]]:
    """Batches of changed keys under ``root`` until stopped (see the module docstring).

    Raises NotFound when ``root`` is not a folder.
    """
    root = Path(root)
    if not root.is_dir():
        raise NotFound(f"no such folder: {root}", hint="check the source's path")
    resolved = root.resolve()
    changes_stream = awatch(
        resolved,
        watch_filter=None,
        debounce=debounce_ms,
        step=min(quiet_ms, debounce_ms),
        stop_event=cast(Any, _StopSignal(stop_event)),
        ignore_permission_denied=True,
    )
    async with aclosing(changes_stream) as changes_batches:
        async for changes in changes_batches:
            keys = await asyncio.to_thread(_keys, resolved, ignore, changes)
            if keys:
                logger.debug("folder watch: %d changed keys", len(keys))
                yield keys


def _keys(root: Path, ignore: Sequence[str], changes: set[tuple[Change, str]]) -> set[str]:
    """The keys behind a batch of raw changes, filtered by the ignore rules as they are now."""
    rules = IgnoreRules(root, ignore)
    keys: set[str] = set()
    for change, raw in changes:
        path = Path(raw)
        if path == root or not path.is_relative_to(root):
            continue
        if path.is_dir():
            if change == Change.added and not rules.excluded(path, True):
                found = (p for p in walk_files(path, ignore) if not rules.excluded(p, False))
                keys.update(p.relative_to(root).as_posix() for p in found)
            continue
        if not rules.excluded(path, False) or _is_kept_gitignore(rules, path):
            keys.add(path.relative_to(root).as_posix())
    return keys


def _is_kept_gitignore(rules: IgnoreRules, path: Path) -> bool:
    return path.name == GITIGNORE and (path.parent == rules.root or not rules.excluded(path.parent, True))
