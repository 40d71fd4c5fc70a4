"""Backup and restore wired to the configured backends (docs/operations.md, "Backup and restore").

:func:`backup_services` backs up the services of this process (a running server's, or a CLI's
own); :func:`restore_into` restores a verified backup into the empty data dir of ``settings``.
A SQLite catalog is copied with SQLite's backup API, a PostgreSQL one with ``pg_dump`` /
``pg_restore`` (:mod:`ragd.catalog.sql.snapshot`); a backup restores only into a catalog of its kind.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragd.bootstrap import Services, build_store
from ragd.bootstrap.knowledge import open_catalog_only
from ragd.catalog.sql.snapshot import (
    POSTGRESQL,
    catalog_kind,
    copy_catalog,
    dump_postgres,
    install_catalog,
    pg_tool,
    postgres_tables,
    restore_postgres,
    sqlite_path,
)
from ragd.errors import Conflict, Forbidden
from ragd.kb import audit
from ragd.kb import backup_format as fmt
from ragd.kb.backup import BackupReport, take_backup
from ragd.kb.restore import (
    PointPlan,
    apply_fixes,
    catalog_files,
    plan_points,
    read_points,
    recover_snapshot,
    write_points,
)
from ragd.kb_types import AuditOutcome, AuditQuery, FileEntry, Principal
from ragd.settings import Settings
from ragd.store.base import VectorStore
from ragd.store.manifest_io import manifest_from_dict, manifest_to_dict
from ragd.store.qdrant_snapshots import QdrantSnapshots
from ragd.types import PointFilter

log = logging.getLogger(__name__)

#: scheduled backups are the folders of the backup dir named so (others are never pruned)
SCHEDULED = "scheduled-"


@dataclass(frozen=True, slots=True)
class RestoreReport:
    points: int
    dropped: int
    files_to_reindex: tuple[str, ...]
    uploads: int


async def backup_services(
    services: Services, dest: Path, *, principal: Principal = audit.OPERATOR, client: str | None = None
) -> BackupReport:
    """A backup of the open services into ``dest`` for the service key (``principal``), recorded as
    ``system.backup`` (ok, failed, or denied for any other key) when there is a catalog."""
    if not principal.is_service:
        await _record(services, principal, dest, {"code": Forbidden.code}, client, AuditOutcome.DENIED)
        raise Forbidden("backups are for the service key (RAGD_SERVER__API_KEY)")
    settings = services.settings
    url, bin_dir = settings.catalog_url, settings.backup.pg_bin_dir
    kind = catalog_kind(url)  # another database, or a PostgreSQL one without pg_dump: refused
    if kind == POSTGRESQL:  # before anything is written
        pg_tool("pg_dump", bin_dir)
    try:
        report = await take_backup(
            dest,
            store=services.store,
            index_manifest=manifest_to_dict(services.manifest),
            copy_catalog=lambda path: (
                dump_postgres(url, path, bin_dir) if kind == POSTGRESQL else copy_catalog(url, path)
            ),
            files_dir=settings.files_dir,
            catalog_kind=kind,
            snapshots=QdrantSnapshots.from_settings(settings.store),  # a Qdrant server: its snapshot
        )
    except Exception as exc:
        services.metrics.backups.labels("failed").inc()
        detail = {"code": getattr(exc, "code", "PIPELINE_FAILED"), "error": str(exc)[:300]}
        await _record(services, principal, dest, detail, client, AuditOutcome.FAILED)
        raise
    services.metrics.backups.labels("ok").inc()
    services.metrics.backup_last_ok.set(time.time())
    detail = {"points": report.points, "bytes": report.bytes, "uploads": report.files}
    await _record(services, principal, dest, detail, client, AuditOutcome.OK)
    return report


async def _record(
    services: Services,
    principal: Principal,
    dest: Path,
    detail: Mapping[str, object],
    client: str | None,
    outcome: AuditOutcome,
) -> None:
    if services.kb is None:
        return
    await audit.record(
        services.kb.catalog,
        principal,
        "system.backup",
        outcome=outcome,
        target_kind="backup",
        target_id=dest.name,
        detail=detail,
        client=client,
    )


async def restore_into(settings: Settings, src: Path) -> RestoreReport:
    """Verify every part of the backup at ``src``, then restore it into the empty data dir (and,
    for a PostgreSQL catalog, the empty database of ``RAGD_CATALOG__URL``)."""
    kind = catalog_kind(settings.catalog_url)
    bin_dir = settings.backup.pg_bin_dir
    if kind == POSTGRESQL:
        pg_tool("pg_restore", bin_dir)
    await _require_empty(settings, kind)
    info = fmt.verify_backup(src)  # nothing is written before this passes
    if info.catalog != kind:
        raise Conflict(
            f"the backup holds a {info.catalog} catalog and RAGD_CATALOG__URL names a {kind} one",
            hint="restore into a catalog of the backup's kind (docs/operations.md, Backup and restore)",
        )
    snapshots = QdrantSnapshots.from_settings(settings.store)
    if info.index == fmt.QDRANT_SNAPSHOT and snapshots is None:
        raise Conflict(
            "the backup holds a Qdrant server's snapshot and RAGD_STORE__URL names no Qdrant server",
            hint="restore it with RAGD_STORE__BACKEND=qdrant and RAGD_STORE__URL of a Qdrant server",
        )
    manifest = manifest_from_dict(info.index_manifest, str(src / fmt.MANIFEST))
    if kind == POSTGRESQL:
        await asyncio.to_thread(restore_postgres, settings.catalog_url, src / info.catalog_part, bin_dir)
    else:
        install_catalog(settings.catalog_url, src / info.catalog_part)
    async with open_catalog_only(settings) as catalog:
        files, collections = await catalog_files(catalog)
        store = build_store(settings)
        await store.open(manifest)
        try:
            if await store.count(PointFilter()):
                raise Conflict(
                    "the index to restore into is not empty", hint="restore into an empty collection"
                )
            if info.index == fmt.QDRANT_SNAPSHOT and snapshots is not None:
                sha256 = next(p.sha256 for p in info.parts if p.path == fmt.SNAPSHOT)
                snapshot = src / fmt.SNAPSHOT
                written, plan = await recover_snapshot(store, snapshots, snapshot, sha256, files, collections)
            else:
                async with store.bulk():
                    written, plan = await _write_jsonl(store, src / fmt.INDEX, files, collections)
            await store.optimize()
        finally:
            await store.close()
        uploads = _restore_uploads(src / fmt.FILES, settings.files_dir)
        await apply_fixes(catalog, plan.fixes)
        await audit.record(
            catalog,
            audit.OPERATOR,
            "system.restore",
            target_kind="backup",
            target_id=str(src),
            detail={"points": written, "dropped": plan.dropped, "reindex": len(plan.fixes)},
            client=audit.CLI_CLIENT,
        )
    return RestoreReport(written, plan.dropped, tuple(e.id for e in plan.fixes), uploads)


async def _write_jsonl(
    store: VectorStore, index: Path, files: Mapping[str, FileEntry], collections: frozenset[str]
) -> tuple[int, PointPlan]:
    plan = plan_points(read_points(index), files, collections)
    return await write_points(store, index, plan.keep), plan


async def _require_empty(settings: Settings, kind: str) -> None:
    if kind == POSTGRESQL:
        tables = await postgres_tables(settings.catalog_url)
        if tables:
            raise Conflict(
                f"the PostgreSQL catalog database to restore into is not empty (it has {', '.join(tables)})",
                hint="restore into a new, empty database (CREATE DATABASE) named by RAGD_CATALOG__URL",
            )
    else:
        catalog = sqlite_path(settings.catalog_url)
        if catalog.exists():
            raise Conflict(f"a catalog already exists at {catalog}", hint="restore into an empty data dir")
    shard = settings.data_dir / "qdrant" / settings.store.collection
    if settings.store.backend == "edge" and shard.is_dir() and any(shard.iterdir()):
        raise Conflict(f"an index already exists at {shard}", hint="restore into an empty data dir")
    files = settings.files_dir
    if files.is_dir() and any(files.iterdir()):
        raise Conflict(f"stored uploads already exist in {files}", hint="restore into an empty data dir")


def _restore_uploads(source: Path, target: Path) -> int:
    if not source.is_dir():
        return 0
    shutil.copytree(source, target, dirs_exist_ok=True)
    return sum(1 for p in source.rglob("*") if p.is_file())


async def run_schedule(services: Services, stop: asyncio.Event) -> None:
    """``ragd serve`` with ``backup.interval_s``: a backup every interval (``scheduled-<UTC time>``
    in the backup dir, audited as ``system.backup`` with client ``scheduler``), then only the
    newest ``backup.keep`` scheduled ones are kept.  A failure is logged and counted, and the next
    interval tries again."""
    settings = services.settings.backup
    folder = services.settings.backup_dir
    while True:
        try:
            await asyncio.wait_for(stop.wait(), settings.interval_s)
            return
        except TimeoutError:
            pass
        now = time.time()
        name = f"{SCHEDULED}{time.strftime('%Y%m%dT%H%M%S', time.gmtime(now))}.{int(now * 1000) % 1000:03d}Z"
        try:
            await backup_services(services, folder / name, client="scheduler")
        except Exception:
            log.exception("the scheduled backup %s failed", name)
        await asyncio.to_thread(prune, folder, settings.keep, keep_name=name)


def prune(folder: Path, keep: int, *, keep_name: str | None = None) -> list[str]:
    """Delete all but the newest ``keep`` complete scheduled backups, and scheduled folders left
    without a ``backup.json`` (a failed run's); returns the names deleted."""
    if not folder.is_dir():
        return []
    scheduled = sorted(p for p in folder.iterdir() if p.is_dir() and p.name.startswith(SCHEDULED))
    complete = [p for p in scheduled if (p / fmt.MANIFEST).is_file()]
    doomed = complete[:-keep] + [p for p in scheduled if p not in complete and p.name != keep_name]
    for path in doomed:
        shutil.rmtree(path, ignore_errors=True)
    return [p.name for p in doomed]


async def backup_status(services: Services) -> dict[str, Any]:
    """The backup settings and the newest backup's outcome (from the audit trail, so it outlives
    restarts; a refused tenant request is not one): for the System screen."""
    last = None
    if services.kb is not None:
        query = AuditQuery(tenant_id=None, action="system.backup")
        records, _ = await audit.list_records(services.kb.catalog, audit.OPERATOR, query, limit=20)
        done = next((r for r in records if r.outcome is not AuditOutcome.DENIED), None)
        if done is not None:
            last = {
                "at": done.at,
                "outcome": done.outcome.value,
                "name": done.target_id,
                "client": done.client,
                "code": done.detail.get("code"),
            }
    backup = services.settings.backup
    return {
        "dir": str(services.settings.backup_dir),
        "interval_s": backup.interval_s,
        "keep": backup.keep,
        "last": last,
    }
