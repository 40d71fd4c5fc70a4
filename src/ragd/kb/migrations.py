"""Move a live dataset to another dense model or chunking with no downtime (issue 31 §1).

A dataset's chunks carry the version they belong to (``meta.generation``; the version built before
any migration has none).  A migration:

    start      the new version gets a tag and is hidden from every read (one catalog transaction);
               a MIGRATE job is queued over the dataset's files
    build      after ``settle_s`` (every replica reads the hidden tag first) and once no search of
               this process still runs on versions read before (:meth:`DenseSpaces.drain`), the
               job writes each file into the new version, from its stored upload or its source,
               through the ordinary ingest pipeline; files written meanwhile land in both versions
               (:mod:`indexing`); a file that fails keeps its old version and is listed among the
               job's failed items
    sweep      files added or missed while it ran are written; every indexed file must have chunks
               in the new version
    evaluate   the dataset's evaluation set runs on both versions (the one search pipeline)
    switch     automatically, unless held: ``manual`` (auto_switch off), ``failed_files``, or
               ``regression`` (nDCG@10 dropped by more than ``max_regression``; only a switch with
               override goes on).  One transaction makes the new version the served one and hides
               the old one, which is kept ``retain_s`` for an instant rollback (no embedding)
    tidy       the worker removes a hidden version whose retention ended, and ends a migration whose
               job ended without it (failed, cancelled)

Searches read the served version of each collection (:meth:`DenseSpaces.versions`): never a
mixture, never a gap.  Crash-safe: a killed worker leaves the served version untouched; its job's
lease lapses and another worker resumes it (finished files are skipped).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import replace
from typing import Any

from ragd.errors import Conflict, MigrationHeld, NotFound, RagError, WrongMigrationState
from ragd.kb import audit
from ragd.kb.access import readable, require_admin, writable
from ragd.kb.context import KbContext
from ragd.kb.datasets import dataset_embedding
from ragd.kb.evalset_run import EvalReport, report_json, score_labels, wins_losses
from ragd.kb.evalsets import all_labels
from ragd.kb.files import new_job
from ragd.kb.indexing import entry_content, index_version
from ragd.kb.runs import CancelRequested, CancelSignal, bounded
from ragd.kb.search import search_datasets
from ragd.kb_types import (
    ChunkingSpec,
    Dataset,
    FileStatus,
    ItemStage,
    Job,
    JobKind,
    JobStatus,
    Migration,
    MigrationState,
    Principal,
    VersionSpec,
)
from ragd.store.payload import FILE_ID_KEY, GENERATION_KEY, IndexKind, PayloadIndex
from ragd.types import CollectionVersion, PointFilter, SearchMode

log = logging.getLogger(__name__)

#: why a complete migration waits for ``switch`` (``Migration.held``)
HELD_MANUAL = "manual"
HELD_FAILED_FILES = "failed_files"
HELD_REGRESSION = "regression"
#: holds only a switch with ``override`` passes
OVERRIDE_NEEDED = (HELD_FAILED_FILES, HELD_REGRESSION)
#: rounds of the final sweep (files added while the last round ran are caught by the next)
SWEEP_ROUNDS = 3
#: the evaluation's k (nDCG@10, recall@10, MRR@10)
EVAL_K = 10
SERVICE = Principal(tenant_id=None, role="admin")
#: the files of one dataset a switch counts chunks for (one facet over the store)
MAX_FILES = 1_000_000


def new_tag() -> str:
    return uuid.uuid4().hex[:12]


async def _migration_of(ctx: KbContext, dataset: Dataset, migration_id: str) -> Migration:
    migration = await ctx.catalog.get_migration(migration_id)
    if migration is None or migration.dataset_id != dataset.id:
        raise NotFound(f"migration {migration_id!r} not found")
    return migration


async def list_migrations(ctx: KbContext, principal: Principal, dataset_id: str) -> list[Migration]:
    dataset = await readable(principal, ctx.catalog, dataset_id)
    return await ctx.catalog.list_migrations(dataset.id)


async def get_migration(
    ctx: KbContext, principal: Principal, dataset_id: str, migration_id: str
) -> Migration:
    dataset = await readable(principal, ctx.catalog, dataset_id)
    return await _migration_of(ctx, dataset, migration_id)


async def _admin_dataset(ctx: KbContext, principal: Principal, dataset_id: str) -> Dataset:
    dataset = await writable(principal, ctx.catalog, dataset_id)
    require_admin(principal, dataset.tenant_id)
    audit.note(tenant_id=dataset.tenant_id)
    return dataset


@audit.audited("dataset.migrate", "dataset", "dataset_id")
async def start_migration(
    ctx: KbContext,
    principal: Principal,
    dataset_id: str,
    *,
    embedding: str | None = None,
    chunking: ChunkingSpec | None = None,
    auto_switch: bool = True,
    max_regression: float | None = None,
) -> Migration:
    """Build the dataset's next version with ``embedding`` (None: keep; "default": the service's)
    and ``chunking`` (None: keep; fields not given keep the dataset's); nothing changed is a
    re-index.  Admins (and the service key)."""
    dataset = await _admin_dataset(ctx, principal, dataset_id)
    model = dataset.embedding if embedding is None else dataset_embedding(ctx, embedding)
    shape = dataset.chunking if chunking is None else over(chunking, dataset.chunking)
    ctx.chunker_for(shape, model)  # a bad chunking or model is refused before anything changes
    if max_regression is not None and not 0 <= max_regression <= 1:
        raise Conflict(f"max_regression is 0 to 1, got {max_regression}")
    await remove_spare_versions(ctx, dataset)
    await ctx.store.ensure_index(PayloadIndex(GENERATION_KEY, IndexKind.KEYWORD))
    job_id = str(uuid.uuid4())
    migration = await ctx.catalog.create_migration(
        Migration(
            id=str(uuid.uuid4()),
            dataset_id=dataset.id,
            tenant_id=dataset.tenant_id,
            state=MigrationState.BUILDING,
            source=VersionSpec(dataset.generation, dataset.embedding, dataset.chunking),
            target=VersionSpec(new_tag(), model, shape),
            job_id=job_id,
            auto_switch=auto_switch,
            max_regression=ctx.migration_max_regression if max_regression is None else max_regression,
        )
    )
    if ctx.spaces is not None:
        ctx.spaces.forget_versions()
    entries = await ctx.catalog.list_files(dataset.id, limit=1_000_000)
    ids = [e.id for e in entries if e.status is FileStatus.INDEXED]
    job = replace(
        new_job(dataset, JobKind.MIGRATE, {"migration_id": migration.id, "file_ids": ids}, ctx.max_attempts),
        id=job_id,
    )
    await ctx.catalog.enqueue(job, ids)
    audit.note(migration_id=migration.id, files=len(ids), embedding=model, chunking=_chunking_note(shape))
    return migration


def over(given: ChunkingSpec, current: ChunkingSpec) -> ChunkingSpec:
    """The chunking a migration moves to: the fields given, the dataset's own for the rest."""
    return ChunkingSpec(
        strategy=given.strategy or current.strategy,
        size=given.size if given.size is not None else current.size,
        overlap=given.overlap if given.overlap is not None else current.overlap,
    )


def _chunking_note(c: ChunkingSpec) -> dict[str, Any]:
    return {"strategy": c.strategy.value if c.strategy else None, "size": c.size, "overlap": c.overlap}


@audit.audited("migration.switch", "dataset", "dataset_id")
async def switch_migration(
    ctx: KbContext, principal: Principal, dataset_id: str, migration_id: str, *, override: bool = False
) -> Migration:
    """Serve the new version (a complete migration, or one rolled back within its retention)."""
    dataset = await _admin_dataset(ctx, principal, dataset_id)
    migration = await _migration_of(ctx, dataset, migration_id)
    audit.note(migration_id=migration.id, override=override)
    if migration.state is MigrationState.READY and migration.held in OVERRIDE_NEEDED and not override:
        raise MigrationHeld(
            f"migration {migration.id} is held ({migration.held}): {migration.error_message or ''}".rstrip(
                ": "
            ),
            hint="look at its reports, then switch with override=true to serve it anyway",
        )
    return await _switch(ctx, migration, to_target=True)


@audit.audited("migration.rollback", "dataset", "dataset_id")
async def rollback_migration(
    ctx: KbContext, principal: Principal, dataset_id: str, migration_id: str
) -> Migration:
    """Serve the old version again, at once: its chunks were retained (no embedding)."""
    dataset = await _admin_dataset(ctx, principal, dataset_id)
    migration = await _migration_of(ctx, dataset, migration_id)
    audit.note(migration_id=migration.id)
    return await _switch(ctx, migration, to_target=False)


async def _switch(
    ctx: KbContext, migration: Migration, *, to_target: bool, automatic: bool = False
) -> Migration:
    """``automatic``: the migration's own job, at the end of a build nothing held."""
    if automatic:
        expect: tuple[MigrationState, ...] = (MigrationState.BUILDING,)
    elif to_target:
        expect = (MigrationState.READY, MigrationState.ROLLED_BACK)
    else:
        expect = (MigrationState.SWITCHED,)
    if migration.state not in expect:
        what = "switched" if to_target else "rolled back"
        raise WrongMigrationState(f"migration {migration.id} is {migration.state.value}: it cannot be {what}")
    serve = migration.target if to_target else migration.source
    dataset = await ctx.catalog.get_dataset(migration.dataset_id)
    if dataset is None:
        raise NotFound(f"dataset {migration.dataset_id!r} not found")
    # each file's chunks in the version about to be served: one facet, no embedding
    counts = await ctx.store.facet(
        FILE_ID_KEY,
        PointFilter(collection_names=(dataset.collection_name,), generation=serve.generation),
        limit=MAX_FILES,
    )
    _, switched = await ctx.catalog.switch_migration(
        migration.id,
        to_target=to_target,
        retain_until=ctx.clock() + ctx.migration_retain_s,
        expect=expect,
        file_chunks=counts,
    )
    if ctx.spaces is not None:
        ctx.spaces.forget_versions()
    log.info("migration %s: dataset %s now serves %s", migration.id, migration.dataset_id, switched.serving)
    return switched


@audit.audited("migration.cancel", "dataset", "dataset_id")
async def cancel_migration(
    ctx: KbContext, principal: Principal, dataset_id: str, migration_id: str
) -> Migration:
    """Stop a migration that has not switched: its job is cancelled, its new version removed."""
    dataset = await _admin_dataset(ctx, principal, dataset_id)
    migration = await _migration_of(ctx, dataset, migration_id)
    audit.note(migration_id=migration.id)
    if not migration.state.in_flight:
        raise WrongMigrationState(f"migration {migration.id} is {migration.state.value}: nothing to cancel")
    if migration.job_id:
        job = await ctx.catalog.get_job(migration.job_id)
        if job is not None and not job.status.finished:
            await ctx.catalog.request_cancel(job.id)
    ended = await ctx.catalog.end_migration(
        migration.id, MigrationState.CANCELLED, error_code="CANCELLED", error_message="cancelled on request"
    )
    await tidy_migrations(ctx)
    return ended


async def retry_migration(ctx: KbContext, job: Job) -> Job:
    """A new MIGRATE job for the files a migration's job left failed or undone (the jobs API's retry)."""
    migration = await ctx.catalog.migration_of_job(job.id)
    if migration is None or migration.state not in (MigrationState.BUILDING, MigrationState.READY):
        raise Conflict(f"job {job.id!r} belongs to a migration that ended: start a new migration instead")
    dataset = await ctx.catalog.get_dataset(migration.dataset_id)
    if dataset is None:
        raise NotFound("the migration's dataset was deleted")
    undone = [
        i.file_id or i.key
        for i in await ctx.catalog.items(job.id)
        if i.stage is ItemStage.FAILED or not i.stage.finished
    ]
    if not undone:
        raise Conflict(f"job {job.id!r} left no file to retry")
    retry = new_job(
        dataset, JobKind.MIGRATE, {"migration_id": migration.id, "file_ids": undone}, ctx.max_attempts
    )
    await ctx.catalog.update_migration(
        migration.id,
        expect=(MigrationState.BUILDING, MigrationState.READY),
        state=MigrationState.BUILDING,
        job_id=retry.id,
        held=None,
    )
    return await ctx.catalog.enqueue(retry, undone)


# -- the job ----------------------------------------------------------------------------------------


async def run_migration(ctx: KbContext, job: Job, cancel: CancelSignal) -> None:
    """Build, sweep, evaluate and (unless held) switch; resumable (finished files are skipped)."""
    migration = await ctx.catalog.get_migration(str(job.payload.get("migration_id", "")))
    if migration is None or migration.state is not MigrationState.BUILDING or migration.job_id != job.id:
        return  # cancelled, ended or superseded meanwhile: nothing to build
    dataset = await ctx.catalog.get_dataset(migration.dataset_id)
    if dataset is None:
        raise NotFound("the migration's dataset was deleted")
    await asyncio.sleep(ctx.migration_settle_s)  # every replica's searches hide the new version first
    if ctx.spaces is not None:  # and no search here still runs on versions it read before that
        await ctx.spaces.drain(time.monotonic())
    try:
        pending = {i.key for i in await ctx.catalog.items(job.id) if not i.stage.finished}
        ids = [str(f) for f in job.payload.get("file_ids", []) if str(f) in pending]
        await bounded(ids, lambda file_id: _build_file(ctx, job, dataset, migration, file_id), cancel)
        cancel.check()
        await _sweep(ctx, job, dataset, migration, cancel)
        cancel.check()
    except CancelRequested:
        with suppress(WrongMigrationState):  # already ended by POST …/cancel
            await ctx.catalog.end_migration(
                migration.id,
                MigrationState.CANCELLED,
                error_code="CANCELLED",
                error_message="cancelled on request",
            )
        raise
    failed = [i for i in await ctx.catalog.items(job.id) if i.stage is ItemStage.FAILED]
    reports = await evaluate_versions(ctx, dataset, migration)
    held, why = _hold(migration, failed_files=len(failed), reports=reports)
    # not held: it switches from BUILDING (never seen READY, which means "waits for a switch")
    state = MigrationState.BUILDING if held is None else MigrationState.READY
    try:
        complete = await ctx.catalog.update_migration(
            migration.id,
            expect=(MigrationState.BUILDING,),
            state=state,
            reports=reports,
            held=held,
            failed_files=len(failed),
            error_message=why,
        )
        if held is None:
            await _switch(ctx, complete, to_target=True, automatic=True)
        else:
            log.info("migration %s is complete and held (%s): %s", migration.id, held, why)
    except WrongMigrationState:
        return  # cancelled while it was evaluated: nothing to switch


async def _build_file(ctx: KbContext, job: Job, dataset: Dataset, migration: Migration, file_id: str) -> None:
    entry = await ctx.catalog.get_file(file_id)
    if entry is None or entry.dataset_id != dataset.id:
        await ctx.catalog.update_item(job.id, file_id, ItemStage.DELETED)
        return
    await ctx.catalog.update_item(job.id, file_id, ItemStage.INDEXING, file_id=file_id)
    try:
        async with entry_content(ctx, entry) as content:
            outcome = await index_version(ctx, dataset, entry, content, migration.target)
    except RagError as exc:
        if exc.http_status >= 500:
            raise  # a backend's fault: the job is retried
        await ctx.catalog.update_item(
            job.id, file_id, ItemStage.FAILED, error_code=exc.code, error_message=str(exc)[:2000]
        )
        return
    await ctx.catalog.update_item(job.id, file_id, ItemStage.DONE, file_id=file_id, chunks=outcome.chunks)


async def _sweep(
    ctx: KbContext, job: Job, dataset: Dataset, migration: Migration, cancel: CancelSignal
) -> None:
    """Every indexed file of the dataset has chunks in the new version: files added, re-written or
    missed while the job ran (an upload that raced the start) are written now."""
    for _ in range(SWEEP_ROUNDS):
        items = {i.key: i for i in await ctx.catalog.items(job.id)}
        missing = []
        for entry in await ctx.catalog.list_files(dataset.id, limit=1_000_000):
            if entry.status is not FileStatus.INDEXED:
                continue
            item = items.get(entry.id)
            if item is not None and item.stage is ItemStage.FAILED:
                continue  # listed as failed; a retry tries it again
            flt = PointFilter(
                collection_names=(dataset.collection_name,),
                file_id=entry.id,
                generation=migration.target.generation,
            )
            if not await ctx.store.count(flt):
                missing.append(entry.id)
        if not missing:
            return
        log.info("migration %s: %d files not yet in the new version", migration.id, len(missing))
        await ctx.catalog.set_items(job.id, missing)
        for file_id in missing:
            await ctx.catalog.update_item(job.id, file_id, ItemStage.PENDING, file_id=file_id)
        await bounded(missing, lambda file_id: _build_file(ctx, job, dataset, migration, file_id), cancel)


def _hold(
    migration: Migration, *, failed_files: int, reports: dict[str, Any]
) -> tuple[str | None, str | None]:
    if failed_files:
        return HELD_FAILED_FILES, f"{failed_files} files failed in the new version (they keep the old one)"
    old, new = reports.get("old"), reports.get("new")
    if old and new:
        drop = float(old["ndcg_at_10"]) - float(new["ndcg_at_10"])
        if drop > migration.max_regression:
            return HELD_REGRESSION, (
                f"nDCG@10 on the evaluation set fell from {old['ndcg_at_10']:.4f} "
                f"to {new['ndcg_at_10']:.4f}, "
                f"more than the {migration.max_regression:g} allowed"
            )
    if not migration.auto_switch:
        return HELD_MANUAL, "waiting for a switch (auto_switch is off)"
    return None, None


def version_view(dataset: Dataset, version: VersionSpec, others: Sequence[str]) -> CollectionVersion:
    """How a search reads ``version`` of ``dataset``: its model, and every other version hidden."""
    hidden = tuple(
        t for t in dict.fromkeys((*others, dataset.generation, *dataset.hidden)) if t != version.generation
    )
    return CollectionVersion(dataset.collection_name, version.embedding, version.generation, hidden)


async def evaluate_versions(ctx: KbContext, dataset: Dataset, migration: Migration) -> dict[str, Any]:
    """The dataset's evaluation set (up to ``max_eval_queries``) on the old and the new version:
    {"old": report, "new": report, "wins": [...], "losses": [...], "queries": n}; {} without a set."""
    if ctx.searcher is None:
        return {}
    labels = await all_labels(ctx, dataset.id, limit=ctx.max_eval_queries)
    if not labels:
        return {}
    searcher = ctx.searcher
    fresh = await ctx.catalog.get_dataset(dataset.id) or dataset

    def on(version: VersionSpec) -> Any:
        view = {dataset.collection_name: version_view(fresh, version, (migration.target.generation,))}

        async def search(query: str, k: int) -> Any:
            found = await search_datasets(
                ctx,
                searcher,
                SERVICE,
                query,
                dataset_ids=(dataset.id,),
                k=k,
                mode=SearchMode.HYBRID,
                versions=view,
            )
            return found.hits

        return search

    old: EvalReport = await score_labels(labels, on(migration.source), EVAL_K)
    new: EvalReport = await score_labels(labels, on(migration.target), EVAL_K)
    wins, losses = wins_losses(new, old)
    return {
        "queries": len(labels),
        "old": report_json(old),
        "new": report_json(new),
        "wins": list(wins),
        "losses": list(losses),
    }


# -- housekeeping (the worker, every few seconds) ---------------------------------------------------


async def remove_spare_versions(ctx: KbContext, dataset: Dataset) -> None:
    """Remove the versions earlier migrations of ``dataset`` retained (a new migration starts from
    the served one alone)."""
    for migration in await ctx.catalog.list_migrations(dataset.id):
        if migration.removed_at is None and not migration.state.in_flight:
            await _remove_spare(ctx, dataset, migration)


async def _remove_spare(ctx: KbContext, dataset: Dataset, migration: Migration) -> None:
    """Delete the migration's spare version, once its job can no longer write into it."""
    if migration.job_id:
        job = await ctx.catalog.get_job(migration.job_id)
        if job is not None and not job.status.finished:
            return  # a cancelled job finishes the files in flight first: removed on a later tidy
    spare = migration.spare.generation
    if spare != dataset.generation:
        flt = PointFilter(collection_names=(dataset.collection_name,), generation=spare)
        removed = await ctx.store.delete(flt)
        log.info("migration %s: removed %d chunks of version %r", migration.id, removed, spare or "untagged")
    await ctx.catalog.removed_version(migration.id)
    if ctx.spaces is not None:
        ctx.spaces.forget_versions()


async def tidy_migrations(ctx: KbContext) -> None:
    """End migrations whose job ended without them; remove versions whose retention is over."""
    now = ctx.clock()
    for migration in await ctx.catalog.open_migrations():
        if migration.state is not MigrationState.BUILDING:
            continue
        job = await ctx.catalog.get_job(migration.job_id) if migration.job_id else None
        if job is not None and not job.status.finished:
            continue
        if job is None and now - migration.created_at < 60:
            continue  # its job is being queued
        cancelled = job is not None and job.status is JobStatus.CANCELLED
        await ctx.catalog.end_migration(
            migration.id,
            MigrationState.CANCELLED if cancelled else MigrationState.FAILED,
            error_code="CANCELLED" if cancelled else (job.error_code if job else "WORKER_LOST") or "FAILED",
            error_message=(job.error_message if job else "its job was never queued") or "its job failed",
        )
    for migration in await ctx.catalog.migrations_to_clean(now):
        dataset = await ctx.catalog.get_dataset(migration.dataset_id)
        if dataset is not None:
            await _remove_spare(ctx, dataset, migration)
