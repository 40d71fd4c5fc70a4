"""Datasets: create, list, read, update what does not invalidate vectors, delete with their points."""

from __future__ import annotations

import asyncio
import re
import shutil
import time
import uuid
from collections.abc import Sequence
from dataclasses import replace

from ragd.errors import Conflict, InvalidRequest
from ragd.kb import audit
from ragd.kb.access import owning_tenant, readable, require_writer, writable
from ragd.kb.context import KbContext
from ragd.kb.files import cancel_active_jobs
from ragd.kb_types import ChunkingSpec, Dataset, DatasetStats, Principal
from ragd.retrieve.pipeline import unknown_reranker
from ragd.types import PointFilter

ROLE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
MAX_NAME = 200
#: a dataset's fields an update may change (its audit record lists those it changed)
_FIELDS = ("name", "description", "chunking", "allowed_roles", "reranker", "embedding")


def collection_name_for(dataset_id: str) -> str:
    """A dataset's tenant key in the shared physical collection."""
    return f"kb-{uuid.UUID(dataset_id).hex}"


def clean_name(name: str) -> str:
    text = name.strip()
    if not text or len(text) > MAX_NAME or any(ord(ch) < 32 for ch in text):
        raise InvalidRequest(f"a dataset name is 1-{MAX_NAME} printable characters")
    return text


def clean_roles(roles: tuple[str, ...]) -> tuple[str, ...]:
    for role in roles:
        if not ROLE_NAME.fullmatch(role):
            raise InvalidRequest(f"invalid role name {role[:70]!r}: letters, digits, '_', '.', '-'")
    return tuple(sorted(set(roles)))


@audit.audited("dataset.create", "dataset")
async def create_dataset(
    ctx: KbContext,
    principal: Principal,
    *,
    name: str,
    description: str = "",
    chunking: ChunkingSpec | None = None,
    allowed_roles: tuple[str, ...] = (),
    tenant_id: str | None = None,
    reranker: str | None = None,
    embedding: str | None = None,
) -> Dataset:
    require_writer(principal)
    tenant = owning_tenant(principal, tenant_id)
    audit.note(tenant_id=tenant, name=name[:MAX_NAME])
    chunking = chunking or ChunkingSpec()
    model = dataset_embedding(ctx, embedding)
    ctx.chunker_for(chunking, model)  # refuse sizes the model window cannot hold, before anything is stored
    dataset_id = str(uuid.uuid4())
    audit.note(target_id=dataset_id)
    now = time.time()
    return await ctx.catalog.create_dataset(
        Dataset(
            id=dataset_id,
            tenant_id=tenant,
            name=clean_name(name),
            collection_name=collection_name_for(dataset_id),
            description=description,
            chunking=chunking,
            allowed_roles=clean_roles(allowed_roles),
            reranker=dataset_reranker(ctx, reranker),
            embedding=model,
            created_at=now,
            updated_at=now,
        )
    )


def dataset_reranker(ctx: KbContext, choice: str | None) -> str | None:
    """A dataset's stored reranker: a configured name or "none"; None (or "default"): the service's."""
    if choice is None or choice == "default":
        return None
    if choice != "none" and choice not in ctx.reranker_names:
        raise unknown_reranker(choice, ctx.reranker_names)
    return choice


def dataset_embedding(ctx: KbContext, choice: str | None) -> str | None:
    """A dataset's stored dense model: a RAGD_EMBEDDERS name; None (or "default"): the service's."""
    if choice is None or choice == "default":
        return None
    if choice not in ctx.embedding_names:
        raise InvalidRequest(
            f"unknown embedding model {choice[:64]!r} (configured: {', '.join(ctx.embedding_names)})",
            hint="a configured name: RAGD_EMBEDDING__* is 'default', more in RAGD_EMBEDDERS",
        )
    return choice


async def list_datasets(ctx: KbContext, principal: Principal) -> list[Dataset]:
    return [d for d in await ctx.catalog.list_datasets(principal.tenant_id) if principal.can_read(d)]


async def get_dataset(ctx: KbContext, principal: Principal, dataset_id: str) -> Dataset:
    return await readable(principal, ctx.catalog, dataset_id)


async def dataset_stats(ctx: KbContext, datasets: Sequence[Dataset]) -> dict[str, DatasetStats]:
    """Each dataset's file counts (one catalog query for them all), by id; pass readable ones."""
    found = await ctx.catalog.dataset_stats([d.id for d in datasets]) if datasets else {}
    return {d.id: found.get(d.id, DatasetStats()) for d in datasets}


@audit.audited("dataset.update", "dataset", "dataset_id")
async def update_dataset(
    ctx: KbContext,
    principal: Principal,
    dataset_id: str,
    *,
    name: str | None = None,
    description: str | None = None,
    chunking: ChunkingSpec | None = None,
    allowed_roles: tuple[str, ...] | None = None,
    reranker: str | None = None,
    embedding: str | None = None,
) -> Dataset:
    """Chunking and the dense model may change only while the dataset has no files (its chunks
    would otherwise be stale).  ``reranker``, ``embedding``: None leaves it, "default" goes back
    to the service's default."""
    current = await writable(principal, ctx.catalog, dataset_id)
    audit.note(tenant_id=current.tenant_id)
    model = current.embedding if embedding is None else dataset_embedding(ctx, embedding)
    new_chunking = chunking is not None and chunking != current.chunking
    if new_chunking or model != current.embedding:
        if await ctx.catalog.list_files(dataset_id, limit=1):
            what = "chunking" if new_chunking else "embedding model"
            raise Conflict(
                f"the {what} of a dataset with files cannot change (its chunks were made with the old one)",
                hint=f"move the dataset to the new {what} with a migration "
                "(POST /api/v1/datasets/{id}/migrations, ragd migrate): it keeps serving meanwhile",
            )
        ctx.chunker_for(chunking or current.chunking, model)
    updated = replace(
        current,
        name=clean_name(name) if name is not None else current.name,
        description=description if description is not None else current.description,
        chunking=chunking if chunking is not None else current.chunking,
        allowed_roles=clean_roles(allowed_roles) if allowed_roles is not None else current.allowed_roles,
        reranker=dataset_reranker(ctx, reranker) if reranker is not None else current.reranker,
        embedding=model,
        updated_at=time.time(),
    )
    audit.note(changed=[f for f in _FIELDS if getattr(updated, f) != getattr(current, f)])
    return await ctx.catalog.update_dataset(updated)


@audit.audited("dataset.delete", "dataset", "dataset_id")
async def delete_dataset(ctx: KbContext, principal: Principal, dataset_id: str) -> int:
    """Cancel its jobs, remove its points, its stored uploads and its records; returns points removed."""
    dataset = await writable(principal, ctx.catalog, dataset_id)
    audit.note(tenant_id=dataset.tenant_id, name=dataset.name)
    await cancel_active_jobs(ctx, dataset, lambda _job: True)
    removed = await ctx.store.delete(PointFilter(collection_names=(dataset.collection_name,)))
    await ctx.catalog.delete_dataset(dataset_id)
    await asyncio.to_thread(shutil.rmtree, ctx.files_dir / dataset_id, True)
    audit.note(points_removed=removed)
    return removed
