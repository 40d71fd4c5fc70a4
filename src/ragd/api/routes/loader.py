"""``PUT /process``: extraction for a stock Open WebUI (``CONTENT_EXTRACTION_ENGINE=external``).

Open WebUI's ``retrieval/loaders/external_document.py`` (``ExternalDocumentLoader.load``) sends one
file and reads back LangChain documents; nothing is indexed here (Open WebUI chunks, embeds and
stores the text itself)::

    PUT {EXTERNAL_DOCUMENT_LOADER_URL}/process
    Authorization: Bearer <EXTERNAL_DOCUMENT_LOADER_API_KEY>
    Content-Type: <the upload's MIME type, when Open WebUI knows it>
    X-Filename: <quote(basename(stored path))>, e.g. "1b4e…-9c1d_report%20Q3.pdf"
    body: the file's raw bytes

    200 {"page_content": "<the text>", "metadata": {"source": …, "content_type": …, "extractor": …}}

The text comes from the same extractor as ``PUT /api/v1/ingest`` (in worker processes when
``RAGD_EXTRACT__ISOLATE`` is on), with the same limits and ragd's own error codes: ``413
FILE_TOO_LARGE`` (checked from Content-Length and again as the body streams in), ``415
UNSUPPORTED_TYPE``, ``422 EXTRACTION_FAILED`` and its subclasses, ``400 INVALID_REQUEST`` when
neither X-Filename nor Content-Type says what the file is.  Any key that may write is accepted —
the service key or a tenant key with the editor or admin role: extraction reads and writes no
tenant's data, and a reader-role key stays read-only (403).  The file name is the caller's: it is
percent-decoded, cut to its last path component and has control characters escaped
(:func:`ragd.observe.logging.sanitize`) before it reaches the extractor, the metadata or a log
line, and it never names a file on disk.
"""

from __future__ import annotations

import asyncio
import logging
import mimetypes
import tempfile
from pathlib import Path, PurePath
from typing import Annotated, Any
from urllib.parse import unquote

from fastapi import APIRouter, Depends, Header, Request
from pydantic import BaseModel, Field

from ragd.api.auth import Caller
from ragd.api.deps import check_length, services
from ragd.bootstrap import Services
from ragd.errors import InvalidRequest, PayloadTooLarge, RagError, UnsupportedMediaType
from ragd.extract.mime import file_type_for_mime
from ragd.kb.access import require_writer
from ragd.observe.logging import sanitize
from ragd.types import Blob, Document

log = logging.getLogger(__name__)
router = APIRouter()

#: the route's path, also handed to :class:`ragd.api.gate.BodyGate` (its body is a file, not JSON)
PATH = "/process"
MAX_NAME_CHARS = 255
_MAX_SUFFIX_CHARS = 16
_FORMS = ("multipart/form-data", "application/x-www-form-urlencoded")
_BODY = {
    "requestBody": {
        "required": True,
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
    }
}


class LoadedDocument(BaseModel):
    """One LangChain ``Document`` as Open WebUI builds it: ``Document(page_content=…, metadata=…)``."""

    page_content: str = Field(description="the file's text (Markdown where the extractor keeps structure)")
    metadata: dict[str, Any] = Field(
        description="source, filename, content_type, extractor; page_count, title, languages when known"
    )


def clean_name(header: str | None) -> str | None:
    """X-Filename as a display name: percent-decoded, last path component, control characters escaped."""
    if not header:
        return None
    decoded = unquote(header.strip(), errors="replace")
    base = decoded.replace("\\", "/").rsplit("/", 1)[-1].strip()
    if base in ("", ".", ".."):
        return None
    safe = sanitize(base, limit=len(base) * 6)
    if len(safe) <= MAX_NAME_CHARS:
        return safe
    suffix = PurePath(safe).suffix
    suffix = suffix if len(suffix) <= _MAX_SUFFIX_CHARS else ""
    return safe[: MAX_NAME_CHARS - len(suffix) - 1] + "…" + suffix


def media_type(request: Request) -> str | None:
    """The request's Content-Type without parameters, lower-cased; None when absent."""
    declared = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return declared or None


def upload_name(x_filename: str | None, media: str | None) -> str:
    """The name from X-Filename, else ``document<ext>`` from a Content-Type ragd reads; 400 if neither."""
    name = clean_name(x_filename)
    if name is not None:
        return name
    known = file_type_for_mime(media)
    if known is None:
        raise InvalidRequest(
            "PUT /process needs the file's name in X-Filename (URL-quoted), or a Content-Type ragd reads",
            hint="Open WebUI sends both; from curl add -H 'X-Filename: report.pdf'",
        )
    return "document" + (mimetypes.guess_extension(known.mime) or "")


async def save_body(request: Request, path: Path, limit: int) -> int:
    """Stream the body to ``path``; 413 from Content-Length, or as soon as it passes ``limit``."""
    check_length(request, limit)
    size = 0
    with path.open("wb") as sink:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise PayloadTooLarge(
                    f"upload exceeds max_upload_bytes={limit}", hint="raise RAGD_EXTRACT__MAX_FILE_BYTES"
                )
            sink.write(chunk)
    return size


def loader_metadata(name: str, document: Document) -> dict[str, Any]:
    """What Open WebUI keeps next to each chunk (it overwrites ``source``/``name`` with its own)."""
    found = document.meta
    pages = len(document.pages) or found.get("page_count")
    fields: dict[str, Any] = {
        "source": name,
        "filename": name,
        "content_type": document.mime_type,
        "extractor": document.extractor,
        "page_count": pages,
        "title": found.get("title"),
        "languages": list(found.get("languages") or ()),
    }
    return {key: value for key, value in fields.items() if value not in (None, "", [])}


@router.put(PATH, response_model=LoadedDocument, openapi_extra=_BODY)
async def process(
    request: Request,
    caller: Caller,
    svc: Annotated[Services, Depends(services)],
    x_filename: Annotated[str | None, Header(description="the file's name, URL-quoted")] = None,
) -> LoadedDocument:
    """Extract one file's text for Open WebUI's external document loader; nothing is stored."""
    require_writer(caller)
    media = media_type(request)
    if media in _FORMS:
        raise UnsupportedMediaType(
            f"PUT /process takes the file's raw bytes as the body, not {media}",
            hint="curl --upload-file report.pdf -H 'X-Filename: report.pdf'",
        )
    name = upload_name(x_filename, media)
    try:
        document = await _extract(request, svc, name, media)
    except RagError as exc:
        log.info("process %s refused: %s", sanitize(name), exc.code)
        raise
    log.info("process %s: %d characters by %s", sanitize(name), len(document.text), document.extractor)
    return LoadedDocument(page_content=document.text, metadata=loader_metadata(name, document))


async def _extract(request: Request, svc: Services, name: str, media: str | None) -> Document:
    with tempfile.TemporaryDirectory(prefix="ragd-process-") as tmp:
        path = Path(tmp) / "upload"
        await save_body(request, path, svc.settings.extract.max_file_bytes)
        blob = Blob(name=name, path=path, mime_type=media)
        return await asyncio.to_thread(svc.extractor.extract, blob)
