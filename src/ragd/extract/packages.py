"""Zip packages (DOCX, XLSX, PPTX, ODF, EPUB): refuse a zip bomb before anything unpacks it.

A 98 KB DOCX can hold a 95 MiB text run (deflate compresses repetition ~1000:1).
:func:`check_unpacked_size` reads only the zip's central directory and refuses the
file when its members declare more than the limit in total.  A member that lies
about its size is stopped by the reader's own checks or, at the latest, by the
extraction process's memory limit (:mod:`ragd.extract.isolation`).  A package
that is not a readable zip is left to its reader, which reports it as corrupt.
"""

from __future__ import annotations

import io
import zipfile

from ragd.errors import PayloadTooLarge


def check_unpacked_size(name: str, data: bytes, limit: int) -> None:
    """Raise :class:`PayloadTooLarge` when ``data``'s zip members unpack to more than ``limit`` bytes."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as package:
            total = sum(member.file_size for member in package.infolist())
    except (zipfile.BadZipFile, OSError, ValueError):
        return
    if total > limit:
        raise PayloadTooLarge(
            f"{name!r} unpacks to {total:,} bytes, over the {limit:,}-byte limit",
            hint="raise RAGD_EXTRACT__MAX_UNPACKED_BYTES if the file is genuine, or split it",
        )
