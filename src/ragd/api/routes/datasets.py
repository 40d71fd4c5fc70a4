"""Datasets and their files, and search scoped by the key (see docs/knowledge-bases.md).

POST/GET        /api/v1/datasets                      create / list readable
GET             /api/v1/datasets/{id}/export          a portable archive of it (tar, streamed)
POST            /api/v1/datasets/import               a new dataset from such an archive (multipart)
GET/PATCH/DELETE /api/v1/datasets/{id}
GET             /api/v1/datasets/{id}/fields          its files' metadata fields and each one's type
POST/GET        /api/v1/datasets/{id}/files           upload many (multipart) -> job / list
POST            /api/v1/datasets/{id}/content         a text (title + text) -> job, like an upload
GET/PATCH/DELETE /api/v1/datasets/{id}/files/{file}   read / enable-disable / delete
GET             /api/v1/datasets/{id}/files/{file}/chunks  a page of its chunks, or a split's neighbours
POST            /api/v1/datasets/{id}/files/{file}/reindex, /api/v1/datasets/{id}/reindex
POST            /api/v1/datasets/{id}/search, /api/v1/search (datasets and/or collection_names)
GET             /api/v1/collections                   what the key may search, with chunk counts
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse

from ragd.api.auth import Caller
from ragd.api.deps import MULTIPART_OVERHEAD, services
from ragd.api.kb_schemas import (
    ArchiveForm,
    ContentCreate,
    DatasetCreate,
    DatasetUpdate,
    FileUpdate,
    SearchBody,
    UploadForm,
    chunk_out,
    dataset_out,
    file_out,
    hit_out,
    job_out,
    timings_out,
    upload_chunking,
)
from ragd.api.multipart import read_form
from ragd.api.page_links import PageLinks
from ragd.api.schemas import request_body
from ragd.bootstrap import Services
from ragd.errors import InvalidRequest, PayloadTooLarge, UnsupportedMediaType
from ragd.kb import chunks
from ragd.kb import datasets as ds
from ragd.kb import file_metadata as fm
from ragd.kb import files as fs
from ragd.kb import zip_uploads as zu
from ragd.kb.access import dataset_refs
from ragd.kb.archive_reader import ArchiveLimits
from ragd.kb.content import text_upload
from ragd.kb.dataset_export import export_dataset
from ragd.kb.dataset_import import import_dataset
from ragd.kb.reach import CollectionCount, list_reach
from ragd.kb.scoped_search import search_scoped_counted
from ragd.kb.search import search_datasets
from ragd.kb_types import Dataset, Principal
from ragd.observe.timings import collect_timings
from ragd.types import ChunkMeta

router = APIRouter(prefix="/api/v1", tags=["knowledge bases"])
Svc = Annotated[Services, Depends(services)]


@router.post("/datasets", status_code=201)
async def create_dataset(body: DatasetCreate, caller: Caller, svc: Svc) -> dict[str, Any]:
    dataset = await ds.create_dataset(
        svc.knowledge(),
        caller,
        name=body.name,
        description=body.description,
        chunking=body.chunking.spec() if body.chunking else None,
        allowed_roles=tuple(body.allowed_roles),
        tenant_id=body.tenant_id,
        reranker=None if body.reranker is None else body.reranker.lower(),
        embedding=None if body.embedding is None else body.embedding.lower(),
    )
    return dataset_out(dataset)


@router.get("/datasets")
async def list_datasets(caller: Caller, svc: Svc) -> dict[str, Any]:
    kb = svc.knowledge()
    datasets = await ds.list_datasets(kb, caller)
    stats = await ds.dataset_stats(kb, datasets)
    return {"datasets": [dataset_out(d, stats[d.id]) for d in datasets]}


@router.get("/datasets/{dataset_id}/export", response_class=StreamingResponse)
async def export_archive(dataset_id: str, caller: Caller, svc: Svc) -> StreamingResponse:
    """The dataset as a tar: its settings, files, stored uploads, chunks with their vectors and
    the manifest entry of its model, with a SHA-256 per part (docs/knowledge-bases.md)."""
    export = await export_dataset(svc.knowledge(), caller, dataset_id, svc.manifest)
    return StreamingResponse(
        export.stream,
        media_type="application/x-tar",
        headers={"Content-Disposition": f'attachment; filename="{export.filename}"'},
    )


@router.post(
    "/datasets/import",
    status_code=201,
    openapi_extra=request_body({"multipart/form-data": ArchiveForm}),
)
async def import_archive(
    request: Request,
    caller: Caller,
    svc: Svc,
    tenant_id: Annotated[
        str | None, Query(max_length=64, description="the service key names the tenant")
    ] = None,
    name: Annotated[str | None, Query(max_length=200, description="instead of the archive's name")] = None,
    reembed: Annotated[bool, Query(description="index the uploads again when the model differs")] = False,
) -> dict[str, Any]:
    """multipart/form-data with the archive in a part named ``archive`` (or ``file``)."""
    content_type = request.headers.get("content-type", "")
    if content_type.split(";")[0].strip().lower() != "multipart/form-data":
        raise UnsupportedMediaType("upload the archive as multipart/form-data (a part named 'archive')")
    limits = ArchiveLimits(svc.settings.catalog.max_archive_bytes, svc.settings.catalog.max_archive_members)
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limits.max_bytes + MULTIPART_OVERHEAD:
        raise PayloadTooLarge(
            f"an archive is at most {limits.max_bytes} bytes", hint="raise RAGD_CATALOG__MAX_ARCHIVE_BYTES"
        )
    with tempfile.TemporaryDirectory(prefix="ragd-archive-") as tmp:
        form = await read_form(
            request.stream(), content_type, tmp_dir=Path(tmp), max_file_bytes=limits.max_bytes
        )
        part = form.file("archive") or form.file("file")
        if part is None:
            raise InvalidRequest("no archive in the upload (a multipart part named 'archive')")
        done = await import_dataset(
            svc.knowledge(),
            caller,
            part.path,
            manifest=svc.manifest,
            limits=limits,
            tenant_id=tenant_id,
            name=name,
            reembed=reembed,
        )
    if done.job is not None:
        svc.wake_worker()
    return {
        "dataset": await _with_stats(svc, done.dataset),
        "files": done.files,
        "points": done.points,
        "job": job_out(done.job) if done.job is not None else None,
    }


@router.get("/datasets/{dataset_id}")
async def get_dataset(dataset_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    return await _with_stats(svc, await ds.get_dataset(svc.knowledge(), caller, dataset_id))


async def _with_stats(svc: Services, dataset: Dataset) -> dict[str, Any]:
    return dataset_out(dataset, (await ds.dataset_stats(svc.knowledge(), [dataset]))[dataset.id])


@router.patch("/datasets/{dataset_id}")
async def update_dataset(dataset_id: str, body: DatasetUpdate, caller: Caller, svc: Svc) -> dict[str, Any]:
    dataset = await ds.update_dataset(
        svc.knowledge(),
        caller,
        dataset_id,
        name=body.name,
        description=body.description,
        chunking=body.chunking.spec() if body.chunking else None,
        allowed_roles=tuple(body.allowed_roles) if body.allowed_roles is not None else None,
        reranker=None if body.reranker is None else body.reranker.lower(),
        embedding=None if body.embedding is None else body.embedding.lower(),
    )
    return await _with_stats(svc, dataset)


@router.delete("/datasets/{dataset_id}")
async def delete_dataset(dataset_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    points = await ds.delete_dataset(svc.knowledge(), caller, dataset_id)
    return {"deleted": True, "id": dataset_id, "chunks_deleted": points}


@router.post(
    "/datasets/{dataset_id}/files",
    status_code=202,
    openapi_extra=request_body({"multipart/form-data": UploadForm}),
)
async def upload_files(dataset_id: str, request: Request, caller: Caller, svc: Svc) -> dict[str, Any]:
    """multipart/form-data with one or more parts named ``files`` (or ``file``)."""
    content_type = request.headers.get("content-type", "")
    if content_type.split(";")[0].strip().lower() != "multipart/form-data":
        raise UnsupportedMediaType("upload files as multipart/form-data (parts named 'files')")
    limit = svc.settings.extract.max_file_bytes
    most = svc.settings.catalog.max_upload_files
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > most * (limit + MULTIPART_OVERHEAD):
        raise PayloadTooLarge(f"an upload is at most {most} files of {limit} bytes")
    kb = svc.knowledge()
    await ds.get_dataset(kb, caller, dataset_id)  # 404 before reading the body
    with tempfile.TemporaryDirectory(prefix="ragd-upload-") as tmp:
        form = await read_form(request.stream(), content_type, tmp_dir=Path(tmp), max_file_bytes=limit)
        parts = [f for f in form.files if f.field in ("files", "file")]
        if len(parts) > most:
            raise InvalidRequest(f"at most {most} files per upload, got {len(parts)}")
        uploads = [fs.Upload(name=f.filename, path=f.path, size=f.size) for f in parts]
        # a .zip's members, each a file of its own, under the same limits (ragd.kb.zip_uploads)
        zip_limits = zu.ZipLimits(limit, svc.settings.extract.max_unpacked_bytes, most)
        uploads = await asyncio.to_thread(zu.expand, uploads, Path(tmp), zip_limits)
        dataset = await ds.get_dataset(kb, caller, dataset_id)
        metadata = await fm.upload_metadata(kb, dataset, form.fields.get("tags"), form.fields.get("fields"))
        entries, job = await fs.upload_files(
            kb,
            caller,
            dataset_id,
            uploads,
            chunking=upload_chunking(form.fields),
            source_label=form.fields.get("source_label"),
        )
        entries = await fm.attach_metadata(kb, dataset, entries, metadata)
    svc.wake_worker()
    return {"files": [file_out(e) for e in entries], "job": job_out(job)}


@router.post("/datasets/{dataset_id}/content", status_code=202)
async def add_content(dataset_id: str, body: ContentCreate, caller: Caller, svc: Svc) -> dict[str, Any]:
    """A text (title + text) kept as a ``.md``/``.txt`` upload and indexed by a queued job, as an
    uploaded file is: its progress is the job's (``GET /api/v1/jobs/{id}``)."""
    kb = svc.knowledge()
    dataset = await ds.get_dataset(kb, caller, dataset_id)  # 404 before anything is written
    metadata = await fm.body_metadata(kb, dataset, body.tags, body.fields)  # 400 before, too
    with tempfile.TemporaryDirectory(prefix="ragd-content-") as tmp:
        upload = text_upload(
            body.title,
            body.text,
            body.format,
            Path(tmp),
            max_bytes=svc.settings.extract.max_file_bytes,
        )
        entries, job = await fs.upload_files(
            kb,
            caller,
            dataset_id,
            [upload],
            chunking=body.chunking.spec() if body.chunking else None,
            source_label=body.source_label,
        )
        entries = await fm.attach_metadata(kb, dataset, entries, metadata)
    svc.wake_worker()
    return {"files": [file_out(e) for e in entries], "job": job_out(job)}


@router.get("/datasets/{dataset_id}/files")
async def list_files(
    dataset_id: str,
    caller: Caller,
    svc: Svc,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> dict[str, Any]:
    entries = await fs.list_files(svc.knowledge(), caller, dataset_id, limit=limit, offset=offset)
    return {"files": [file_out(e) for e in entries]}


@router.get("/datasets/{dataset_id}/fields")
async def dataset_fields(dataset_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    """The metadata fields the dataset's files carry, each with its type (string, number, boolean,
    date), sorted by name: what a filter's ``fields.<name>`` can compare."""
    types = await fm.field_types(svc.knowledge(), caller, dataset_id)
    return {"fields": [{"name": name, "type": kind.value} for name, kind in sorted(types.items())]}


@router.get("/datasets/{dataset_id}/files/{file_id}")
async def get_file(dataset_id: str, file_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    return file_out(await fs.get_file(svc.knowledge(), caller, dataset_id, file_id))


@router.get("/datasets/{dataset_id}/files/{file_id}/chunks")
async def file_chunks(
    dataset_id: str,
    file_id: str,
    caller: Caller,
    svc: Svc,
    offset: Annotated[int | None, Query(ge=0, le=1_000_000)] = None,
    limit: Annotated[int, Query(ge=1, le=chunks.MAX_LIMIT)] = 50,
    around: Annotated[int | None, Query(ge=0, le=1_000_000, description="a split_id")] = None,
    radius: Annotated[int, Query(ge=0, le=chunks.MAX_RADIUS)] = 2,
) -> dict[str, Any]:
    """The file's chunks by split_id: a page (offset, limit), or those within radius of around."""
    if around is not None and offset is not None:
        raise InvalidRequest("give offset (a page) or around (a split_id's neighbours), not both")
    page = await chunks.read_chunks(
        svc.knowledge(),
        caller,
        dataset_id,
        file_id,
        offset=offset or 0,
        limit=limit,
        around=around,
        radius=radius,
    )
    links = PageLinks.of(svc.settings.extract)
    return {
        "file_id": page.file.id,
        "name": page.file.name,
        "total": page.total,
        "chunks": [chunk_out(c, dataset_id=dataset_id, links=links) for c in page.chunks],
    }


@router.patch("/datasets/{dataset_id}/files/{file_id}")
async def update_file(
    dataset_id: str, file_id: str, body: FileUpdate, caller: Caller, svc: Svc
) -> dict[str, Any]:
    """``enabled`` (dis/enables it in search), ``tags`` (replaces them), ``fields`` (sets each named
    field, null removes one): any of them, applied in that order; metadata needs no re-embedding."""
    if body.enabled is None and body.tags is None and body.fields is None:
        raise InvalidRequest("give enabled, tags or fields")
    kb = svc.knowledge()
    entry = None
    if body.enabled is not None:
        entry = await fs.set_enabled(kb, caller, dataset_id, file_id, body.enabled)
    if body.tags is not None or body.fields is not None:
        entry = await fm.update_metadata(kb, caller, dataset_id, file_id, tags=body.tags, fields=body.fields)
    return file_out(entry or await fs.get_file(kb, caller, dataset_id, file_id))


@router.delete("/datasets/{dataset_id}/files/{file_id}")
async def delete_file(dataset_id: str, file_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    points = await fs.delete_file(svc.knowledge(), caller, dataset_id, file_id)
    return {"deleted": True, "id": file_id, "chunks_deleted": points}


@router.post("/datasets/{dataset_id}/files/{file_id}/reindex", status_code=202)
async def reindex_file(dataset_id: str, file_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    job = await fs.reindex(svc.knowledge(), caller, dataset_id, [file_id])
    svc.wake_worker()
    return {"job": job_out(job)}


@router.post("/datasets/{dataset_id}/reindex", status_code=202)
async def reindex_dataset(dataset_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    job = await fs.reindex(svc.knowledge(), caller, dataset_id)
    svc.wake_worker()
    return {"job": job_out(job)}


@router.get("/collections")
async def list_collections(caller: Caller, svc: Svc) -> dict[str, Any]:
    """What the key may search: the service key every collection of the index (a dataset's marked
    with its id), a tenant key its readable datasets' collections; with chunk counts."""
    reach = await list_reach(svc.knowledge(), caller)
    rows = reach.collections or tuple(CollectionCount(d.collection_name, n, d.id) for d, n in reach.datasets)
    return {"collections": [{"name": c.name, "chunks": c.chunks, "dataset_id": c.dataset_id} for c in rows]}


@router.post("/datasets/{dataset_id}/search")
async def search_dataset(dataset_id: str, body: SearchBody, caller: Caller, svc: Svc) -> JSONResponse:
    if body.collection_names or body.dataset_names:
        raise InvalidRequest("collection_names and dataset_names are for POST /api/v1/search")
    return await _search(svc, caller, body, (dataset_id,))


@router.post("/search")
async def search_all(body: SearchBody, caller: Caller, svc: Svc) -> JSONResponse:
    if body.dataset_names:  # by name (unique per tenant): NOT_FOUND for one the key cannot read
        named = await dataset_refs(caller, svc.knowledge().catalog, body.dataset_names)
        ids = list(dict.fromkeys([*(body.dataset_ids or ()), *named]))
        body = body.model_copy(update={"dataset_ids": ids, "dataset_names": None})
    if body.collection_names:
        return await _search(svc, caller, body, None, collections=tuple(body.collection_names))
    return await _search(svc, caller, body, tuple(body.dataset_ids) if body.dataset_ids else None)


async def _search(
    svc: Services,
    caller: Principal,
    body: SearchBody,
    ids: tuple[str, ...] | None,
    *,
    collections: tuple[str, ...] = (),
) -> JSONResponse:
    """``ids``: the datasets to search (None: every readable one); ``collections`` (POST
    /api/v1/search naming them): these collections, and ``body.dataset_ids``' too."""
    started = time.perf_counter()
    kb = svc.knowledge()
    with collect_timings() as timings:
        knobs = body.knobs(svc.settings.retrieval)
        if collections:
            scoped = await search_scoped_counted(
                kb,
                svc.pipeline,
                caller,
                body.query,
                collections=collections,
                dataset_ids=body.dataset_ids or (),
                k=body.k,
                mode=body.mode,
                knobs=knobs,
                deadline_s=svc.settings.server.search_timeout_s,
            )
            hits, matched = scoped.hits, scoped.filter_matched
            readable = await ds.list_datasets(kb, caller)
            searched = {ChunkMeta.parse(h.meta).collection_name for h in hits}
            datasets = [d for d in readable if d.collection_name in searched]
        else:
            found = await search_datasets(
                kb,
                svc.pipeline,
                caller,
                body.query,
                dataset_ids=ids,
                k=body.k,
                mode=body.mode,
                deadline_s=svc.settings.server.search_timeout_s,
                knobs=knobs,
            )
            hits, datasets, matched = found.hits, list(found.datasets), found.filter_matched
    by_collection = {d.collection_name: d for d in datasets}
    links = PageLinks.of(svc.settings.extract)
    out: dict[str, Any] = {
        "datasets": [d.id for d in datasets],
        "results": [hit_out(h, by_collection, explain=body.explain, links=links) for h in hits],
    }
    if matched is not None:  # a filter was given: how many chunks it admitted (0: it matched nothing)
        out["filter_matched"] = matched
    if body.explain:
        total_ms = (time.perf_counter() - started) * 1000.0
        out["timings_ms"] = timings_out(timings.milliseconds(), total_ms)
    return JSONResponse(out)
