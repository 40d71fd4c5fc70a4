"""HTTP shapes of the knowledge-base API (datasets, files, sources, jobs, tenants, keys).

Records are rendered by the ``*_out`` functions; request bodies are pydantic
models that refuse unknown fields, so a typo is a 422 rather than ignored.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ragd.api.page_links import PageLinks
from ragd.api.schemas import COLLECTION_PATTERN, KnobFields
from ragd.errors import InvalidRequest, is_permanent
from ragd.kb.content import TextFormat
from ragd.kb_types import (
    ApiKeyInfo,
    ChunkingSpec,
    Dataset,
    DatasetStats,
    DatasetTemplate,
    FileEntry,
    Job,
    JobItem,
    SourceGrant,
    SourceKind,
    SourceSpec,
    Tenant,
)
from ragd.types import ChunkMeta, ChunkStrategy, Hit, SearchMode, StoredChunk


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ChunkingBody(_Body):
    strategy: ChunkStrategy | None = None
    size: int | None = Field(None, ge=16, le=100_000, description="tokens (token/markdown) or characters")
    overlap: int | None = Field(None, ge=0, le=50_000)

    @field_validator("strategy", mode="before")
    @classmethod
    def _strategy(cls, v: object) -> object:
        return None if v is None else ChunkStrategy.parse(str(v))

    def spec(self) -> ChunkingSpec:
        return ChunkingSpec(self.strategy, self.size, self.overlap)


RERANKER_FIELD = (
    "the reranker this dataset's searches run unless a request says otherwise: a configured name, "
    "none, or default (the service's; the default)"
)


EMBEDDING_FIELD = (
    "the dense model this dataset's files are embedded with: a configured name (RAGD_EMBEDDERS) or "
    "default (the service's model; the default); fixed once the dataset has files"
)


class DatasetCreate(_Body):
    name: str = Field(min_length=1, max_length=200)
    description: str = Field("", max_length=10_000)
    chunking: ChunkingBody | None = None
    allowed_roles: list[str] = Field(default_factory=list, max_length=100)
    tenant_id: str | None = Field(None, description="service key only: the tenant the dataset belongs to")
    reranker: str | None = Field(None, max_length=64, description=RERANKER_FIELD)
    embedding: str | None = Field(None, max_length=64, description=EMBEDDING_FIELD)


class DatasetUpdate(_Body):
    name: str | None = Field(None, min_length=1, max_length=200)
    description: str | None = Field(None, max_length=10_000)
    chunking: ChunkingBody | None = None
    allowed_roles: list[str] | None = Field(None, max_length=100)
    reranker: str | None = Field(None, max_length=64, description=RERANKER_FIELD)
    embedding: str | None = Field(None, max_length=64, description=EMBEDDING_FIELD)


class UploadForm(BaseModel):
    """``POST /api/v1/datasets/{id}/files`` as multipart/form-data (documentation only)."""

    files: list[bytes] = Field(description="one part per file, each named 'files' with its filename")
    chunk_strategy: ChunkStrategy | None = Field(
        None, description="these files' own chunker over the dataset's (kept on re-index)"
    )
    chunk_size: int | None = Field(None, ge=16, le=100_000, description="their own chunk size")
    chunk_overlap: int | None = Field(None, ge=0, le=50_000, description="their own chunk overlap")
    source_label: str | None = Field(
        None, max_length=200, description="where the files came from (listings and hits' metadata)"
    )
    tags: str | None = Field(None, description='the files\' tags: a JSON list (["a", "b"]) or "a, b"')
    fields: str | None = Field(
        None, description='the files\' fields as a JSON object ({"customer": "acme", "year": 2024})'
    )


class ContentCreate(_Body):
    """``POST /api/v1/datasets/{id}/content``: a text queued for indexing like an uploaded file."""

    title: str = Field(min_length=1, max_length=200, description="the file's name (a suffix is added)")
    text: str = Field(min_length=1, description="the content; at most RAGD_EXTRACT__MAX_FILE_BYTES in UTF-8")
    format: TextFormat = Field(
        TextFormat.MARKDOWN, description="markdown (kept as <title>.md) or text (<title>.txt)"
    )
    chunking: ChunkingBody | None = Field(None, description="its own chunking over the dataset's")
    source_label: str | None = Field(None, max_length=200, description="where the text came from")
    tags: Any = Field(None, description="a list of tags, as at upload (checked: INVALID_METADATA)")
    fields: Any = Field(None, description="{name: string|number|boolean|date}, as at upload")

    @field_validator("format", mode="before")
    @classmethod
    def _format(cls, v: object) -> object:
        return TextFormat.parse(str(v))


class ArchiveForm(BaseModel):
    """``POST /api/v1/datasets/import`` as multipart/form-data (documentation only)."""

    archive: bytes = Field(description="the tar of GET /api/v1/datasets/{id}/export (a part named archive)")


class FileUpdate(_Body):
    enabled: bool | None = Field(None, description="false: the file leaves search (its chunks kept)")
    tags: list[Any] | None = Field(
        None, description="replaces the file's tags (strings of 1-64 characters, at most 32)"
    )
    fields: dict[str, Any] | None = Field(
        None,
        description="sets each named field (string, number, boolean or ISO-8601 date); null removes one",
    )


class SourceCreate(_Body):
    kind: SourceKind
    config: dict[str, Any]

    @field_validator("kind", mode="before")
    @classmethod
    def _kind(cls, v: object) -> object:
        return SourceKind.parse(str(v))


class SearchBody(_Body, KnobFields):
    query: str = Field(min_length=1, max_length=2000)
    k: int = Field(5, ge=1, le=100)
    mode: SearchMode = SearchMode.HYBRID
    dataset_ids: list[str] | None = Field(None, max_length=100, description="default: every readable dataset")
    dataset_names: list[Annotated[str, Field(min_length=1, max_length=200)]] | None = Field(
        None,
        max_length=100,
        description="datasets by name (unique per tenant), searched with dataset_ids; one the key cannot "
        "read is NOT_FOUND",
    )
    collection_names: list[Annotated[str, Field(pattern=COLLECTION_PATTERN)]] | None = Field(
        None,
        max_length=100,
        description="search these collections: a tenant key reaches only its readable datasets' "
        "(any other name drops out, like an unknown one); the service key any collection, raw ones "
        "(Open WebUI's) included. With dataset_ids too, both are searched",
    )
    explain: bool = Field(
        False,
        description="each hit also carries its point id and component scores (dense, sparse, fused, "
        "rerank), and the response the stage timings of this search in milliseconds (timings_ms)",
    )

    @field_validator("mode", mode="before")
    @classmethod
    def _mode(cls, v: object) -> object:
        return SearchMode.parse(str(v))


class TenantCreate(_Body):
    name: str = Field(min_length=1, max_length=200)


class TemplateDataset(_Body):
    """One dataset of the tenant template: a dataset's name and settings."""

    name: str = Field(min_length=1, max_length=200)
    description: str = Field("", max_length=10_000)
    chunking: ChunkingBody | None = None
    allowed_roles: list[str] = Field(default_factory=list, max_length=100)

    def spec(self) -> DatasetTemplate:
        chunking = self.chunking.spec() if self.chunking else ChunkingSpec()
        return DatasetTemplate(self.name, self.description, chunking, tuple(self.allowed_roles))


class TemplateBody(_Body):
    """``PUT /api/v1/tenants/template``: the datasets every new tenant is created with."""

    datasets: list[TemplateDataset] = Field(max_length=50, description="[]: new tenants get none")


class KeyCreate(_Body):
    role: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    name: str = Field("", max_length=200)


class GrantCreate(_Body):
    kind: SourceKind = Field(description="folder or s3")
    target: str = Field(
        min_length=1,
        max_length=2048,
        description="folder: an absolute path on the server; s3: bucket/prefix (bucket alone: the whole"
        " bucket)",
    )
    shared: bool = Field(False, description="let it overlap other tenants' grants (both tenants reach it)")

    @field_validator("kind", mode="before")
    @classmethod
    def _kind(cls, v: object) -> object:
        return SourceKind.parse(str(v))


def _chunking_out(c: ChunkingSpec) -> dict[str, Any]:
    return {"strategy": c.strategy.value if c.strategy else None, "size": c.size, "overlap": c.overlap}


def upload_chunking(fields: Mapping[str, str]) -> ChunkingSpec | None:
    """The files' own chunking from an upload's form fields ``chunk_strategy``, ``chunk_size`` and
    ``chunk_overlap`` (none given: None, the dataset's), validated like a dataset's ``chunking``."""
    given = {
        key: fields[f"chunk_{key}"] for key in ("strategy", "size", "overlap") if fields.get(f"chunk_{key}")
    }
    if not given:
        return None
    try:
        return ChunkingBody.model_validate(given).spec()
    except ValidationError as exc:
        problems = "; ".join(f"chunk_{e['loc'][0]}: {e['msg']}" for e in exc.errors() if e["loc"])
        raise InvalidRequest(f"invalid chunking override ({problems or exc.error_count()})") from None


def dataset_out(d: Dataset, stats: DatasetStats | None = None) -> dict[str, Any]:
    """A dataset, with its file counts (``stats``; none given: a dataset without files)."""
    stats = stats or DatasetStats()
    return {
        "id": d.id,
        "tenant_id": d.tenant_id,
        "name": d.name,
        "description": d.description,
        "collection_name": d.collection_name,
        "chunking": _chunking_out(d.chunking),
        "allowed_roles": list(d.allowed_roles),
        "reranker": d.reranker or "default",
        "embedding": d.embedding or "default",
        "created_at": d.created_at,
        "updated_at": d.updated_at,
        "files": stats.files,
        "chunks": stats.chunks,
        "files_by_status": {status.value: n for status, n in stats.files_by_status.items()},
        "status": stats.state.value,
        "last_update": stats.last_update(d),
    }


def file_out(f: FileEntry) -> dict[str, Any]:
    return {
        "id": f.id,
        "dataset_id": f.dataset_id,
        "name": f.name,
        "status": f.status.value,
        "enabled": f.enabled,
        "chunks": f.chunks,
        "size": f.size,
        "source_id": f.source_id,
        "item_key": f.item_key,
        "source_label": f.source_label,
        "tags": list(f.metadata.tags),
        "fields": dict(f.metadata.fields),
        "chunking": _chunking_out(f.chunking) if f.chunking is not None else None,
        "error": {"code": f.error_code, "message": f.error_message} if f.error_code else None,
        "created_at": f.created_at,
        "updated_at": f.updated_at,
    }


def chunk_out(
    c: StoredChunk, *, dataset_id: str | None = None, links: PageLinks | None = None
) -> dict[str, Any]:
    """One stored chunk of a file, as the file's chunk listing shows it; ``page_image``: its page
    with its passage marked (``api/page_links.py``), or null."""
    meta = ChunkMeta.parse(c.meta)
    return {
        "id": c.id,
        "split_id": meta.split_id,
        "content": c.content,
        "page": meta.page,
        "page_image": links.link(dataset_id, meta.file_id, meta.name, meta.page, c.id) if links else None,
        "headers": list(meta.headers),
    }


class ScheduleBody(_Body):
    """A source's schedule: ``interval_s``, or ``cron`` (5 fields) with an IANA ``timezone``."""

    interval_s: float | None = Field(None, description="seconds between runs")
    cron: str | None = Field(None, max_length=200, description="minute hour day month weekday")
    timezone: str | None = Field(None, max_length=64, description="IANA name the cron is read in (UTC)")


def source_out(s: SourceSpec) -> dict[str, Any]:
    return {
        "id": s.id,
        "dataset_id": s.dataset_id,
        "kind": s.kind.value,
        "config": dict(s.config),
        "created_at": s.created_at,
        "last_synced_at": s.last_synced_at,
        "last_error": s.last_error,
        "disabled": s.disabled,
        "disabled_reason": s.disabled_reason,
        "schedule": s.schedule.to_json() if s.schedule else None,
        "paused": s.paused,
        "next_run_at": s.next_run_at if s.schedule and not s.paused and not s.disabled else None,
        "last_run_at": s.last_run_at,
    }


def grant_out(g: SourceGrant) -> dict[str, Any]:
    return {
        "id": g.id,
        "tenant_id": g.tenant_id,
        "kind": g.kind.value,
        "target": g.target,
        "shared": g.shared,
        "created_at": g.created_at,
        "created_by": g.created_by,
        "revoked_at": g.revoked_at,
    }


def job_out(job: Job, errors: list[JobItem] | None = None, *, now: float | None = None) -> dict[str, Any]:
    """A job with its counts, rate (items/s) and ETA; ``errors``: failed items to show."""
    now = now or time.time()
    finished = job.done + job.failed
    elapsed = ((job.finished_at or now) - job.started_at) if job.started_at else 0.0
    rate = finished / elapsed if elapsed > 0 and finished else 0.0
    eta = (job.total - finished) / rate if rate > 0 and not job.status.finished else None
    out: dict[str, Any] = {
        "id": job.id,
        "kind": job.kind.value,
        "status": job.status.value,
        "finished": job.status.finished,
        "dataset_id": job.dataset_id,
        "total": job.total,
        "done": job.done,
        "failed": job.failed,
        "chunks": job.chunks,
        "rate_per_s": round(rate, 3),
        "eta_s": round(eta, 1) if eta is not None else None,
        "attempts": job.attempts,
        "max_attempts": job.max_attempts,
        "cancel_requested": job.cancel_requested,
        "error": {"code": job.error_code, "message": job.error_message} if job.error_code else None,
        "created_at": job.created_at,
        "started_at": job.started_at,
        "finished_at": job.finished_at,
        "updated_at": job.updated_at,
    }
    if errors is not None:
        out["errors"] = [{"key": i.key, **_item_error(i)} for i in errors]
    return out


def item_out(i: JobItem) -> dict[str, Any]:
    return {
        "key": i.key,
        "stage": i.stage.value,
        "file_id": i.file_id,
        "chunks": i.chunks,
        "error": _item_error(i) if i.error_code else None,
    }


def _item_error(i: JobItem) -> dict[str, Any]:
    """An item's error; ``permanent``: it would fail the same way again (a retry skips it)."""
    code = i.error_code or ""
    return {"code": code, "message": i.error_message, "permanent": is_permanent(code)}


#: stages every explained search shows (null when it did not run), then any other it reported
EXPLAINED_STAGES = ("embed_sparse", "embed_dense", "qdrant", "rerank")


def timings_out(milliseconds: dict[str, float], total_ms: float) -> dict[str, float | None]:
    """``timings_ms`` of an explained search: the main stages first, ``total`` last."""
    shown: dict[str, float | None] = {stage: milliseconds.get(stage) for stage in EXPLAINED_STAGES}
    return shown | milliseconds | {"total": round(total_ms, 3)}


def hit_out(
    hit: Hit, dataset_of: Mapping[str, Dataset], *, explain: bool = False, links: PageLinks | None = None
) -> dict[str, Any]:
    """A search hit (``dataset_of``: the searched datasets by collection name); ``explain``: with
    its point ``id``, raw component ``scores`` and stored ``meta`` too.  ``datasetName`` is the
    Leadmetrics seed's name for ``dataset_name`` (both always present; null for a raw collection).
    ``page_image``: the hit's page with its passage marked (``api/page_links.py``), or null."""
    meta = ChunkMeta.parse(hit.meta)
    explained: dict[str, Any] = {}
    if explain:
        s = hit.scores
        scores = {"dense": s.dense, "sparse": s.sparse, "fused": s.fused, "rerank": s.rerank}
        explained = {"id": hit.id, "scores": scores, "meta": dict(hit.meta)}
    dataset = dataset_of.get(meta.collection_name)
    label = meta.extra.get("source_label")
    return explained | {
        "content": hit.content,
        "score": hit.score,
        "relevance": hit.relevance,
        "dataset_id": dataset.id if dataset else None,
        "dataset_name": dataset.name if dataset else None,
        "datasetName": dataset.name if dataset else None,
        "source_label": label if isinstance(label, str) else None,
        "collection": meta.collection_name or None,
        "file_id": meta.file_id or None,
        "name": meta.name or None,
        "source": meta.source or None,
        "page": meta.page,
        "page_image": links.link(dataset.id if dataset else None, meta.file_id, meta.name, meta.page, hit.id)
        if links
        else None,
        "headers": list(meta.headers) or None,
        "split_id": meta.split_id,
    }


def tenant_out(t: Tenant) -> dict[str, Any]:
    return {"id": t.id, "name": t.name, "created_at": t.created_at}


def key_out(k: ApiKeyInfo) -> dict[str, Any]:
    return {
        "id": k.id,
        "tenant_id": k.tenant_id,
        "role": k.role,
        "name": k.name,
        "prefix": k.prefix,
        "created_at": k.created_at,
    }
