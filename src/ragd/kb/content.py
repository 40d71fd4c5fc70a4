"""A text given over HTTP (title + text) becomes an upload like any file: a ``.md`` or ``.txt``
file kept for re-indexing and indexed by the same durable INGEST job as an upload
(``POST /api/v1/datasets/{id}/content``; docs/knowledge-bases.md, "Text content")."""

from __future__ import annotations

from pathlib import Path

from ragd.errors import InvalidRequest, PayloadTooLarge
from ragd.kb.files import MAX_FILE_NAME, Upload, clean_file_name
from ragd.types import ParsedEnum


class TextFormat(ParsedEnum):
    MARKDOWN = "markdown"
    TEXT = "text"

    @property
    def suffix(self) -> str:
        return ".md" if self is TextFormat.MARKDOWN else ".txt"


def content_file_name(title: str, fmt: TextFormat) -> str:
    """The file a text is kept as: its title (slashes replaced), with the format's suffix."""
    base = " ".join(title.replace("/", "-").replace("\\", "-").split())
    if not base:
        raise InvalidRequest("a title is 1-200 printable characters")
    if not base.lower().endswith(fmt.suffix):
        base = base[: MAX_FILE_NAME - len(fmt.suffix)] + fmt.suffix
    return clean_file_name(base)


def text_upload(title: str, text: str, fmt: TextFormat, folder: Path, *, max_bytes: int) -> Upload:
    """Write ``text`` (UTF-8) into ``folder`` as the upload of ``title``; over ``max_bytes``
    (``RAGD_EXTRACT__MAX_FILE_BYTES``, as for a file) is FILE_TOO_LARGE, nothing written."""
    if not text.strip():
        raise InvalidRequest("the text is empty")
    data = text.encode("utf-8", "replace")
    if len(data) > max_bytes:
        raise PayloadTooLarge(f"a text is at most {max_bytes} bytes (UTF-8), got {len(data)}")
    name = content_file_name(title, fmt)
    path = folder / "content"
    path.write_bytes(data)
    return Upload(name=name, path=path, size=len(data))
