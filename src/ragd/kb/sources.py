"""A dataset's sources: add (and sync at once), list, sync again, remove (with their files).

Config per kind (validated here, used by the reader the composition root builds):

    folder  {"path": "/srv/docs", "ignore": ["*.tmp"]}           watched for changes
    web     {"url": "https://site/docs/", "max_depth": 3, "max_pages": 500,
             "path_prefix": "/docs/", "delay_s": 0.5, "render": true}   render: headless Chromium
    s3      {"bucket": "b", "prefix": "team/"}

A folder or S3 source must lie inside a live grant of its dataset's tenant
(``ragd.kb.grants``): a tenant admin gets 403 SOURCE_NOT_GRANTED otherwise; the
service key's source is granted to the tenant as it is added (409 GRANT_OVERLAP
when that would overlap another tenant's grant).  A disabled source (no grant
covers it any more) does not sync: 409 SOURCE_DISABLED.  A tenant admin may
crawl only public addresses unless ``crawl.allow_private`` (403 PRIVATE_ADDRESS, checked
when added and again at every connection of every crawl); the service key may: its web
source on a private address is marked ``"allow_private": true`` in its config.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragd.errors import Forbidden, InvalidRequest, NotFound, PrivateAddress
from ragd.kb import audit, grants
from ragd.kb.access import readable, require_admin, writable
from ragd.kb.context import KbContext
from ragd.kb.files import cancel_active_jobs, new_job, remove_source_files
from ragd.kb.grant_reach import source_reach
from ragd.kb_types import Dataset, Job, JobKind, Principal, SourceKind, SourceSpec
from ragd.objects.base import check_bucket
from ragd.sources.address_guard import public_addresses
from ragd.sources.urls import parse_start_url


class FolderConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str
    ignore: list[str] = Field(default_factory=list, max_length=200)


class WebConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: str = Field(max_length=2000)
    max_depth: int | None = Field(None, ge=0, le=20)
    max_pages: int | None = Field(None, ge=1, le=100_000)
    path_prefix: str | None = Field(None, max_length=500)
    delay_s: float | None = Field(None, ge=0, le=60)
    #: load each page in headless Chromium and read the DOM its scripts leave (ragd[render])
    render: bool | None = None


class S3Config(BaseModel):
    model_config = ConfigDict(extra="forbid")
    bucket: str = Field(min_length=1, max_length=63)
    prefix: str = Field("", max_length=1024)


CONFIGS: dict[SourceKind, type[BaseModel]] = {
    SourceKind.FOLDER: FolderConfig,
    SourceKind.WEB: WebConfig,
    SourceKind.S3: S3Config,
}


def parse_config(kind: SourceKind, config: Mapping[str, Any]) -> dict[str, Any]:
    try:
        return CONFIGS[kind].model_validate(dict(config)).model_dump(exclude_none=True)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'config'}: {e['msg']}" for e in exc.errors())
        raise InvalidRequest(f"invalid {kind.value} source config: {problems}") from exc


def resolve_folder(path: str) -> str:
    """The folder a source's path names, symlinks resolved (what its grant must cover)."""
    if "\x00" in path:
        raise InvalidRequest("a folder path may not hold a NUL character")
    return str(Path(path).expanduser().resolve())


async def bind_to_grant(
    ctx: KbContext,
    principal: Principal,
    dataset: Dataset,
    kind: SourceKind,
    config: Mapping[str, Any],
    *,
    folder_roots: Sequence[Path],
    allowed_buckets: Sequence[str],
) -> None:
    """A folder or S3 source must lie inside a live grant of the dataset's tenant (403
    SOURCE_NOT_GRANTED).  The service key grants what it adds, unless that would overlap another
    tenant's grant (409 GRANT_OVERLAP): two tenants' sources never overlap unless it said so.  As
    before grants, ``catalog.folder_roots`` does not bound the service key's own sources (the
    buckets stay bounded: the reader checks them at every sync)."""
    reach = source_reach(kind, config)
    if reach is None:
        return
    if principal.is_service:
        await grants.grant_for_service(
            ctx.catalog,
            principal,
            dataset.tenant_id,
            kind,
            reach,
            allowed_buckets=allowed_buckets,
            apply=search_visibility(ctx),
        )
    else:
        await grants.check_source(ctx.catalog, dataset.tenant_id, kind, reach)
        roots = [r.resolve() for r in folder_roots]  # the outer bound, should it shrink after a grant
        if kind is SourceKind.FOLDER and roots and not any(Path(reach).is_relative_to(r) for r in roots):
            raise Forbidden(
                "folder sources must lie under a folder the operator allowed (catalog.folder_roots)"
            )


def search_visibility(ctx: KbContext) -> grants.Apply:
    """What a source's state means for search: the files of a disabled source leave it (their points
    flagged ``meta.disabled``, nothing re-embedded); once enabled they come back as each file's own
    ``enabled`` says."""

    async def apply(spec: SourceSpec, disabled: bool) -> None:
        dataset = await ctx.catalog.get_dataset(spec.dataset_id)
        if dataset is None:
            return
        for entry in await ctx.catalog.list_files(dataset.id, limit=1_000_000):
            if entry.source_id == spec.id:
                hidden = disabled or not entry.enabled
                await ctx.ingestor.set_disabled(entry.id, hidden, dataset.collection_name)

    return apply


async def check_url(principal: Principal, url: str, *, allow_private: bool) -> bool:
    """Refuse what is no http(s) URL and, for a tenant key (unless ``allow_private``), a host that
    resolves to any non-public address now: 403 PRIVATE_ADDRESS.  This is early feedback only:
    every connection of every crawl checks again (:mod:`ragd.sources.guarded_http`).

    True when the service key names a host that is not public (or does not resolve yet): the
    source is then marked ``allow_private`` in its config, so its crawls may reach it."""
    parts = urlsplit(parse_start_url(url))
    host = str(parts.hostname)
    if allow_private and not principal.is_service:
        return False
    try:
        await public_addresses(host, parts.port or (443 if parts.scheme == "https" else 80))
    except PrivateAddress:
        if principal.is_service:
            return True
        raise
    except OSError as exc:
        if principal.is_service:
            return True
        raise InvalidRequest(f"cannot resolve {host[:200]!r}: {exc}") from exc
    return False


@audit.audited("source.add", "dataset", "dataset_id")
async def add_source(
    ctx: KbContext,
    principal: Principal,
    dataset_id: str,
    kind: SourceKind,
    config: Mapping[str, Any],
    *,
    folder_roots: list[Path],
    allow_private: bool,
    allowed_buckets: Sequence[str] = (),
) -> tuple[SourceSpec, Job]:
    dataset = await writable(principal, ctx.catalog, dataset_id)
    audit.note(tenant_id=dataset.tenant_id, kind=kind.value)
    require_admin(principal, dataset.tenant_id)
    clean = parse_config(kind, config)
    if kind is SourceKind.FOLDER:
        clean["path"] = resolve_folder(clean["path"])
    elif kind is SourceKind.WEB and await check_url(principal, clean["url"], allow_private=allow_private):
        clean["allow_private"] = True  # the service key's source on a private address
    elif kind is SourceKind.S3:
        check_bucket(clean["bucket"], allowed_buckets)  # now, not only at the first sync
    missing = kind is SourceKind.FOLDER and not Path(clean["path"]).is_dir()
    if missing and principal.is_service:  # before it grants anything
        raise NotFound(f"no such folder on the server: {str(config.get('path'))[:200]!r}")
    await bind_to_grant(
        ctx, principal, dataset, kind, clean, folder_roots=folder_roots, allowed_buckets=allowed_buckets
    )
    if missing:  # only now: a tenant learns nothing of folders outside its grants
        raise NotFound(f"no such folder on the server: {str(config.get('path'))[:200]!r}")
    spec = SourceSpec(
        id=str(uuid.uuid4()), dataset_id=dataset.id, kind=kind, config=clean, created_at=time.time()
    )
    spec = await ctx.catalog.create_source(spec)
    audit.note(source_id=spec.id, reach=_reach(kind, clean))
    return spec, await enqueue_sync(ctx, dataset, spec)


def _reach(kind: SourceKind, config: Mapping[str, Any]) -> str:
    """What a source reads, for its audit record (a URL without any user:password in it)."""
    if kind is SourceKind.FOLDER:
        return str(config["path"])
    if kind is SourceKind.S3:
        return f"s3://{config['bucket']}/{config.get('prefix', '')}"
    parts = urlsplit(str(config["url"]))
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


async def enqueue_sync(ctx: KbContext, dataset: Dataset, spec: SourceSpec) -> Job:
    """A sync of the source, folded into one already queued (a burst of changes makes one job);
    409 SOURCE_DISABLED for a disabled source."""
    grants.refuse_disabled(spec)
    job = new_job(dataset, JobKind.SYNC, {"source_id": spec.id}, ctx.max_attempts)
    return await ctx.catalog.enqueue(job, dedupe=True)


async def _source_of(ctx: KbContext, dataset: Dataset, source_id: str) -> SourceSpec:
    spec = await ctx.catalog.get_source(source_id)
    if spec is None or spec.dataset_id != dataset.id:
        raise NotFound(f"source {source_id!r} not found in this dataset")
    return spec


async def list_sources(ctx: KbContext, principal: Principal, dataset_id: str) -> list[SourceSpec]:
    dataset = await readable(principal, ctx.catalog, dataset_id)
    return await ctx.catalog.list_sources(dataset.id)


@audit.audited("source.sync", "source", "source_id")
async def sync_source(ctx: KbContext, principal: Principal, dataset_id: str, source_id: str) -> Job:
    dataset = await writable(principal, ctx.catalog, dataset_id)
    audit.note(tenant_id=dataset.tenant_id, dataset_id=dataset.id)
    return await enqueue_sync(ctx, dataset, await _source_of(ctx, dataset, source_id))


async def enable_source(ctx: KbContext, principal: Principal, dataset_id: str, source_id: str) -> SourceSpec:
    """Check a disabled source against its tenant's grants again: enabled, its files back in search
    and a sync queued when one covers it, else 403 SOURCE_NOT_GRANTED.  A live source's files are
    put back in search (``ragd grants`` may have enabled it while the server ran)."""
    dataset = await writable(principal, ctx.catalog, dataset_id)
    require_admin(principal, dataset.tenant_id)
    spec = await _source_of(ctx, dataset, source_id)
    reach = source_reach(spec.kind, spec.config)
    if spec.disabled_reason is None:
        await search_visibility(ctx)(spec, False)
        return spec
    if reach is not None:
        await grants.check_source(ctx.catalog, dataset.tenant_id, spec.kind, reach)
    enabled = await ctx.catalog.set_source_disabled(spec.id, None)
    if enabled is None:  # enabled meanwhile (a grant, another replica): recorded there
        return await _source_of(ctx, dataset, source_id)
    await audit.record(
        ctx.catalog,
        principal,
        "source.enable",
        tenant_id=dataset.tenant_id,
        target_kind="source",
        target_id=spec.id,
        detail={"kind": spec.kind.value, "reach": reach},
    )
    await search_visibility(ctx)(enabled, False)
    await enqueue_sync(ctx, dataset, enabled)
    return enabled


#: how long removing a source waits for its cancelled syncs to end (each finishes the item in hand)
REMOVAL_WAITS_S = 10.0


async def _until_ended(ctx: KbContext, job_ids: Sequence[str], seconds: float) -> None:
    """Wait until none of ``job_ids`` is queued or running, or ``seconds`` have passed."""
    deadline = time.monotonic() + seconds
    pending = list(job_ids)
    while pending:
        jobs = [await ctx.catalog.get_job(job_id) for job_id in pending]
        pending = [job.id for job in jobs if job is not None and not job.status.finished]
        if not pending or time.monotonic() >= deadline:
            return
        await asyncio.sleep(0.1)


@audit.audited("source.remove", "source", "source_id")
async def remove_source(ctx: KbContext, principal: Principal, dataset_id: str, source_id: str) -> int:
    """The source, its ledger and every file it brought in; returns the files removed.

    Its syncs are cancelled first, and again once its record is gone (one queued meanwhile).  One
    in flight finishes the items it has started: a file it writes after the source's record went
    is removed by the sync itself when it ends (``runs.run_sync``), which this waits for (up to
    ``REMOVAL_WAITS_S``); one it wrote before by the second sweep.  A file removed by both sweeps
    counts once."""
    dataset = await writable(principal, ctx.catalog, dataset_id)
    audit.note(tenant_id=dataset.tenant_id, dataset_id=dataset.id)
    require_admin(principal, dataset.tenant_id)
    spec = await _source_of(ctx, dataset, source_id)

    def its_sync(job: Job) -> bool:
        return job.kind is JobKind.SYNC and job.payload.get("source_id") == spec.id

    syncs = await cancel_active_jobs(ctx, dataset, its_sync)
    removed = set(await remove_source_files(ctx, dataset, spec.id))
    await ctx.catalog.delete_source(spec.id)
    # a sync queued meanwhile (the folder watcher's) and started before the record went
    syncs += await cancel_active_jobs(ctx, dataset, its_sync)
    await _until_ended(ctx, syncs, REMOVAL_WAITS_S)
    removed.update(await remove_source_files(ctx, dataset, spec.id))
    audit.note(files_removed=len(removed))
    return len(removed)
