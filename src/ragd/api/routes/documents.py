"""The rest of the ingestion-service surface (``contracts.md`` §2.3-§2.5).

* ``DELETE /api/v1/documents/{file_id}``: every point of the file, in every collection; idempotent;
  recorded in the audit trail (``file.delete``, actor ``service``) when the catalog is open.
* ``GET /api/v1/documents/{file_id}/chunks``: paginated inspection (off unless enabled: 404).
* ``POST /api/v1/extract``: extraction only, with an engine override (``engine``; a vision engine's
  prompt ``profile``); nothing is written.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request

from ragd.api.auth import SERVICE, Authorized
from ragd.api.deps import MULTIPART_OVERHEAD, check_length, metrics, services
from ragd.api.multipart import read_form
from ragd.api.schemas import DeleteOk, ExtractForm, request_body
from ragd.bootstrap import Services
from ragd.errors import InvalidRequest, RagError, UnsupportedMediaType
from ragd.kb import audit
from ragd.kb_types import AuditOutcome
from ragd.observe.metrics import Metrics
from ragd.types import Blob, Document

router = APIRouter()

PREVIEW_CHARS = 200
_CONTENT_MODES = ("false", "preview", "full")


@router.delete("/api/v1/documents/{file_id}", response_model=DeleteOk, dependencies=[Authorized])
async def delete_document(
    file_id: str,
    svc: Annotated[Services, Depends(services)],
    m: Annotated[Metrics, Depends(metrics)],
) -> DeleteOk:
    try:
        deleted = await svc.ingestor.delete(file_id)
    except RagError as exc:
        m.delete_requests.labels("error", exc.code).inc()
        await _record(svc, file_id, AuditOutcome.FAILED, {"code": exc.code})
        raise
    m.delete_requests.labels("ok", "").inc()
    await _record(svc, file_id, AuditOutcome.OK, {"chunks_deleted": deleted})
    return DeleteOk(file_id=file_id, chunks_deleted=deleted)


async def _record(svc: Services, file_id: str, outcome: AuditOutcome, detail: dict[str, Any]) -> None:
    if svc.kb is not None:  # ragd proxy has no catalog
        detail = {**detail, "surface": "ingestion"}
        await audit.record(
            svc.kb.catalog,
            SERVICE,
            "file.delete",
            outcome=outcome,
            target_kind="file",
            target_id=file_id,
            detail=detail,
        )


async def _inspection_enabled(request: Request) -> None:
    if not request.app.state.ragd.settings.server.inspection_enabled:
        raise HTTPException(status_code=404, detail="Not Found")


@router.get(
    "/api/v1/documents/{file_id}/chunks",
    dependencies=[Depends(_inspection_enabled), Authorized],
    response_model_exclude_none=True,
)
async def document_chunks(
    file_id: str,
    svc: Annotated[Services, Depends(services)],
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    offset: Annotated[str | None, Query(max_length=128)] = None,
    include_content: str = "preview",
) -> dict[str, Any]:
    if include_content not in _CONTENT_MODES:
        raise InvalidRequest(f"include_content must be one of {', '.join(_CONTENT_MODES)}")
    page, next_offset = await svc.ingestor.chunks(file_id, limit=limit, offset=offset)
    total = await svc.ingestor.count(file_id)
    chunks = [_chunk_view(p.content, p.meta, include_content) for p in page]
    first = page[0].meta if page else {}
    stats = {
        "total_chunks": total,
        "extraction_engine": first.get("extractor"),
        "languages": first.get("languages"),
        "name": first.get("name"),
        "collection_name": first.get("collection_name"),
    }
    return {
        "status": True,
        "file_id": file_id,
        "returned": len(chunks),
        "limit": limit,
        "next_offset": next_offset,
        "stats": {k: v for k, v in stats.items() if v is not None},
        "chunks": chunks,
    }


def _chunk_view(content: str, meta: Any, mode: str) -> dict[str, Any]:
    view: dict[str, Any] = {
        "split_id": meta.get("split_id"),
        "content_length": len(content),
        "meta": dict(meta),
    }
    if mode == "full":
        view["content"] = content
    elif mode == "preview":
        view["content"] = content if len(content) <= PREVIEW_CHARS else content[:PREVIEW_CHARS] + "…"
    return view


@router.post(
    "/api/v1/extract",
    dependencies=[Authorized],
    openapi_extra=request_body({"multipart/form-data": ExtractForm}),
)
async def extract(request: Request, svc: Annotated[Services, Depends(services)]) -> dict[str, Any]:
    content_type = request.headers.get("content-type", "")
    if not content_type.lower().startswith("multipart/form-data"):
        raise UnsupportedMediaType("POST /api/v1/extract takes multipart/form-data with a 'file' part")
    limit = svc.settings.extract.max_file_bytes
    check_length(request, limit + MULTIPART_OVERHEAD)
    with tempfile.TemporaryDirectory(prefix="ragd-extract-") as tmp:
        form = await read_form(request.stream(), content_type, tmp_dir=Path(tmp), max_file_bytes=limit)
        upload = form.file("file")
        if upload is None:
            raise InvalidRequest("multipart request missing 'file' field")
        engine_name = (form.fields.get("engine") or "").strip().lower() or None
        profile = (form.fields.get("profile") or "").strip().lower() or None
        extractor = svc.extraction_engine(engine_name, profile)
        blob = Blob(name=upload.filename or "upload", path=upload.path)
        document = await asyncio.to_thread(extractor.extract, blob)
    return {
        "status": True,
        "engine": document.extractor,
        "profile": document.meta.get("vision_profile"),
        "documents": _pages(document),
    }


def _pages(document: Document) -> list[dict[str, Any]]:
    """One entry per page for paged formats (``meta.page`` 0-based), else one for the whole text."""
    base = {"mime_type": document.mime_type, **{k: v for k, v in document.meta.items() if v}}
    if not document.pages:
        return [{"content": document.text, "meta": base}]
    return [
        {"content": document.text[span.start : span.end], "meta": {**base, "page": span.page}}
        for span in document.pages
    ]
