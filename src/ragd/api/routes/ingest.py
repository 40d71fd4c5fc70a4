"""``PUT /api/v1/ingest``: the ingestion-service contract (``contracts.md`` §2.1-§2.2).

Two forms, dispatched on ``Content-Type``: JSON naming an S3 object, or a
multipart upload streamed to a temporary file.  Gates run before any work:
content type (415), request shape (400), collection binding (403), S3 bucket
allow-list (403), size (413: Content-Length, the multipart stream, S3 HEAD).
The file then goes through the same idempotent ingest as ``ragd ingest``.
"""

from __future__ import annotations

import json
import logging
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from pydantic import ValidationError

from ragd.api.auth import Authorized
from ragd.api.deps import MULTIPART_OVERHEAD, check_length, metrics, services
from ragd.api.multipart import Form, read_form
from ragd.api.schemas import Extraction, IngestForm, IngestJson, IngestOk, request_body
from ragd.bootstrap import Services
from ragd.errors import (
    Forbidden,
    InvalidMetadata,
    InvalidRequest,
    PayloadTooLarge,
    RagError,
    UnsupportedMediaType,
)
from ragd.ingest.pipeline import Outcome
from ragd.kb.file_metadata import check_metadata, ensure_field_indexes
from ragd.kb_types import FieldType
from ragd.objects.base import check_bucket
from ragd.observe.metrics import Metrics
from ragd.types import Blob, FileRef, IngestStatus

log = logging.getLogger(__name__)
router = APIRouter()

MAX_JSON_BYTES = 64 * 1024
_TRUE = frozenset({"true", "1", "yes", "y"})
_FALSE = frozenset({"false", "0", "no", "n"})
_REQUIRED = ("file_id", "filename", "collection_name", "user_id")
#: the response header saying whether the file was indexed or found unchanged (the body is the contract's)
STATUS_HEADER = "X-Ragd-Ingest-Status"


def form_bool(value: str | None, *, default: bool = True, name: str = "overwrite") -> bool:
    """The reference's strict boolean: true/1/yes/y, false/0/no/n, any case; else 400."""
    if value is None:
        return default
    text = value.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise InvalidRequest(f"{name} must be true or false, got {value[:40]!r}")


def check_binding(collection_name: str, file_id: str, user_id: str) -> None:
    """``file-<id>`` must be this file's, ``user-memory-<id>`` this user's (403 otherwise)."""
    if collection_name.startswith("user-memory-") and collection_name != f"user-memory-{user_id}":
        raise Forbidden(f"collection_name {collection_name!r} does not match user_id={user_id!r}")
    if collection_name.startswith("file-") and collection_name != f"file-{file_id}":
        raise Forbidden(f"collection_name {collection_name!r} does not match file_id={file_id!r}")


async def read_json(request: Request) -> IngestJson:
    check_length(request, MAX_JSON_BYTES)
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > MAX_JSON_BYTES:
            raise PayloadTooLarge(f"JSON body exceeds {MAX_JSON_BYTES} bytes")
    try:
        return IngestJson.model_validate_json(bytes(body))
    except ValidationError as exc:
        raise InvalidRequest(_pydantic_message(exc)) from None


def _pydantic_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "body"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def form_fields(form: Form) -> tuple[IngestJson, Path]:
    upload = form.file("file")
    if upload is None:
        raise InvalidRequest("multipart request missing 'file' field")
    values = {name: (form.fields.get(name) or "").strip() for name in (*_REQUIRED, "collection_type")}
    for name in _REQUIRED:
        if not values[name]:
            raise InvalidRequest(f"multipart request missing required field {name!r}")
    overwrite = form_bool(form.fields.get("overwrite"))
    force = form_bool(form.fields.get("force"), default=False, name="force")
    metadata = json_metadata(form.fields.get("metadata"))
    spec = IngestJson.model_construct(
        file_id=values["file_id"],
        filename=values["filename"],
        collection_name=values["collection_name"],
        collection_type=values["collection_type"] or "file",
        user_id=values["user_id"],
        overwrite=overwrite,
        force=force,
        metadata=metadata,
    )
    return spec, upload.path


def json_metadata(text: str | None) -> dict[str, Any] | None:
    """The multipart ``metadata`` field: a JSON object (blank: none)."""
    if not (text or "").strip():
        return None
    try:
        value = json.loads(text or "")
    except ValueError:
        raise InvalidMetadata("metadata: not JSON") from None
    if not isinstance(value, dict):
        raise InvalidMetadata('metadata: must be an object {"tags": [...], "fields": {...}}')
    return value


def ingest_metadata(raw: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, FieldType]]:
    """The chunk ``meta`` keys of an ingest's user metadata (checked; no dataset: no recorded types)
    and each field's type, for its payload index."""
    if not raw:
        return {}, {}
    unknown = sorted(set(raw) - {"tags", "fields"})
    if unknown:
        raise InvalidMetadata(f"metadata.{unknown[0]}: unknown; metadata has tags and fields")
    metadata, types = check_metadata(raw.get("tags"), raw.get("fields"), {})
    return metadata.payload(), dict(types)


async def fetch_s3(svc: Services, spec: IngestJson, dest: Path) -> None:
    if not spec.s3_bucket or not spec.s3_key:
        raise InvalidRequest("JSON ingest needs both s3_bucket and s3_key")
    check_bucket(spec.s3_bucket, svc.settings.s3.allowed_buckets)
    objects = svc.object_store()
    await objects.download(spec.s3_bucket, spec.s3_key, dest, max_bytes=svc.settings.extract.max_file_bytes)


async def run_ingest(svc: Services, spec: IngestJson, path: Path) -> Outcome:
    meta, types = ingest_metadata(spec.metadata)
    # a field filtered without its payload index reads every point (~1 s a search at 1M chunks):
    # each field gets one at first sight, as a dataset's field does when its type is recorded
    await ensure_field_indexes(svc.store, types)
    ref = FileRef(
        file_id=spec.file_id,
        collection_name=spec.collection_name,
        name=spec.filename,
        source=spec.filename,
        extra={
            "filename": spec.filename,
            "collection_type": spec.collection_type,
            "user_id": spec.user_id,
            **meta,
        },
    )
    if not spec.overwrite:
        existing = await svc.ingestor.count(spec.file_id, spec.collection_name)
        if existing:
            return Outcome(IngestStatus.UNCHANGED, existing)
    return await svc.ingestor.ingest(Blob(name=spec.filename, path=path), ref, force=spec.force)


@router.put(
    "/api/v1/ingest",
    response_model=IngestOk,
    response_model_exclude_none=True,
    dependencies=[Authorized],
    openapi_extra=request_body({"multipart/form-data": IngestForm, "application/json": IngestJson}),
)
async def ingest(
    request: Request,
    response: Response,
    svc: Annotated[Services, Depends(services)],
    m: Annotated[Metrics, Depends(metrics)],
) -> IngestOk:
    started = time.perf_counter()
    try:
        outcome, spec, size = await _ingest(request, svc)
    except RagError as exc:
        m.ingest_requests.labels("error", exc.code).inc()
        m.ingest_failures.labels(exc.code).inc()
        raise
    m.ingest_requests.labels("ok", "").inc()
    m.ingest_duration.observe(time.perf_counter() - started)
    m.ingest_chunks.observe(outcome.chunks)
    m.ingest_bytes.observe(size)
    log.info("ingested file_id=%s chunks=%d status=%s", spec.file_id, outcome.chunks, outcome.status.value)
    response.headers[STATUS_HEADER] = outcome.status.value  # indexed or unchanged (ragd ingest reads it)
    extraction = None
    if outcome.route is not None:
        extraction = Extraction(engine=outcome.extractor, route=dict(outcome.route))
        if outcome.status is IngestStatus.INDEXED:
            m.extraction_routes.labels(outcome.extractor or "", _label(outcome.route.get("signal"))).inc()
    return IngestOk(collection_name=spec.collection_name, chunks_count=outcome.chunks, extraction=extraction)


def _label(signal: object) -> str:
    """A route's signal as a metric label (a closed set: textbox, raster, default)."""
    return signal if isinstance(signal, str) and signal.isidentifier() and len(signal) <= 32 else "other"


async def _ingest(request: Request, svc: Services) -> tuple[Outcome, IngestJson, int]:
    content_type = request.headers.get("content-type", "")
    media = content_type.split(";")[0].strip().lower()
    limit = svc.settings.extract.max_file_bytes
    with tempfile.TemporaryDirectory(prefix="ragd-ingest-") as tmp:
        tmp_dir = Path(tmp)
        if media == "application/json":
            spec = await read_json(request)
            check_binding(spec.collection_name, spec.file_id, spec.user_id)
            path = tmp_dir / "object"
            await fetch_s3(svc, spec, path)
        elif media == "multipart/form-data":
            check_length(request, limit + MULTIPART_OVERHEAD)
            form = await read_form(request.stream(), content_type, tmp_dir=tmp_dir, max_file_bytes=limit)
            spec, path = form_fields(form)
            check_binding(spec.collection_name, spec.file_id, spec.user_id)
        else:
            raise UnsupportedMediaType(
                f"Unsupported Content-Type: {media[:80]!r}; use application/json or multipart/form-data"
            )
        size = path.stat().st_size
        return await run_ingest(svc, spec, path), spec, size
