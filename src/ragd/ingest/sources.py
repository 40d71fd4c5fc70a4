"""Which files a folder ingest picks up: a walk with .gitignore-style ignores.

Hidden files and folders, VCS and dependency folders are skipped; every
``.gitignore`` found on the way applies to its own subtree (pathspec's
gitignore semantics), and the caller may add patterns of its own.  A symlink in a
walked folder that points outside it is never read (``FORBIDDEN``, as in a folder
source): ``ragd proxy --docs-folder`` must not put ``/etc/passwd`` in a model's context.
The rules, the walk and that check live in :mod:`ragd.sources.ignore`, shared with
folder sources.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ragd.errors import ExtractionError, Forbidden, NotFound
from ragd.observe.logging import sanitize
from ragd.sources.ignore import DEFAULT_IGNORES, LEAVES_ROOT, leaves_root, os_reason, walk_files
from ragd.types import IngestReport, IngestStatus

__all__ = ["DEFAULT_IGNORES", "SourceFile", "collect"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SourceFile:
    path: Path
    #: how the file is named in results: relative to the ingest root's parent
    source: str


def collect(
    paths: Sequence[Path],
    ignore: Sequence[str] = (),
    *,
    unlisted: Callable[[IngestReport], None] | None = None,
    refused: Callable[[IngestReport], None] | None = None,
) -> list[SourceFile]:
    """Files under ``paths`` (files are taken as given, folders walked), de-duplicated, in order.

    A folder that cannot be listed is passed to ``unlisted`` as a failed :class:`IngestReport`
    (its files are left out); without ``unlisted`` it is only logged.  A symlink in a walked folder
    that points outside it is left out and passed to ``refused`` as a failed report (``FORBIDDEN``;
    it hides nothing, so pruning goes on), or logged without ``refused``."""
    seen: set[Path] = set()
    out: list[SourceFile] = []
    for given in paths:
        if not given.exists():
            raise NotFound(f"no such file or folder: {given}")
        root = given.resolve()
        report = _reporter(given, root, unlisted) if unlisted else None
        found = [root] if root.is_file() else walk_files(root, ignore, unlisted=report)
        for path in found:
            if path in seen:
                continue
            if path != root and leaves_root(root, path):
                _refuse(_label(given, root, path), refused)
                continue
            seen.add(path)
            out.append(SourceFile(path=path, source=_label(given, root, path)))
    return out


def _refuse(source: str, refused: Callable[[IngestReport], None] | None) -> None:
    if refused is None:
        log.warning("not reading %s: %s", sanitize(source), LEAVES_ROOT)
        return
    refused(IngestReport(source=source, status=IngestStatus.FAILED, code=Forbidden.code, message=LEAVES_ROOT))


def _label(given: Path, root: Path, path: Path) -> str:
    """``path`` (under ``root``, the resolved ``given``) named from ``given`` as the user wrote it."""
    return Path(os.path.normpath(given / path.relative_to(root))).as_posix()


def _reporter(
    given: Path, root: Path, report: Callable[[IngestReport], None]
) -> Callable[[Path, OSError], None]:
    def refused(folder: Path, exc: OSError) -> None:
        report(
            IngestReport(
                source=_label(given, root, folder) + "/",
                status=IngestStatus.FAILED,
                code=ExtractionError.code,
                message=f"cannot list the folder ({os_reason(exc)}); its files were left out",
            )
        )

    return refused
