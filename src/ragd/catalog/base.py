"""The catalog ports: metadata about knowledge bases, kept apart from the vectors.

Narrow Protocols, one SQL adapter package (``catalog/sql/``: SQLAlchemy,
SQLite in the data directory by default, PostgreSQL by URL, Alembic
migrations).  Records in, records out (``ragd.types``); times are epoch
seconds.  Errors: :class:`ragd.errors.Conflict` for a duplicate name,
:class:`ragd.errors.StoreUnavailable`-style :class:`ragd.errors.CatalogUnavailable`
when the database cannot be reached.  Nothing here checks access: the
use-cases do, with the request's :class:`ragd.kb_types.Principal`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from ragd.kb_types import (
    ApiKeyInfo,
    AuditQuery,
    AuditRecord,
    Dataset,
    DatasetStats,
    DatasetTemplate,
    EvalQuery,
    FieldType,
    FileEntry,
    FileMetadata,
    ItemStage,
    Job,
    JobItem,
    JobStatus,
    LedgerEntry,
    Migration,
    MigrationState,
    Principal,
    SourceGrant,
    SourceSchedule,
    SourceSpec,
    Tenant,
    TenantUsage,
    UiSession,
)
from ragd.types import CollectionVersion


class TenantDirectory(Protocol):
    async def create_tenant(self, name: str, datasets: Sequence[Dataset] = ()) -> Tenant:
        """A new tenant and, in the same transaction, ``datasets`` (their ``tenant_id`` replaced by
        the new tenant's): all or nothing.  Conflict when the name is taken."""
        ...

    async def list_tenants(self) -> list[Tenant]: ...

    async def create_key(self, tenant_id: str, role: str, name: str) -> tuple[ApiKeyInfo, str]:
        """A new key and its secret (returned once; only a hash is stored)."""
        ...

    async def resolve_key(self, secret: str) -> Principal | None:
        """The principal of a live key, or None (unknown or revoked)."""
        ...

    async def list_keys(self, tenant_id: str) -> list[ApiKeyInfo]: ...

    async def revoke_key(self, tenant_id: str, key_id: str) -> bool:
        """False when the tenant has no such key."""
        ...


class TenantTemplates(Protocol):
    """The datasets every new tenant is created with, as the service key set them (issue 34 §2)."""

    async def get_tenant_template(self) -> list[DatasetTemplate] | None:
        """The stored template, or None when none is (the settings' default applies)."""
        ...

    async def set_tenant_template(self, datasets: Sequence[DatasetTemplate] | None) -> None:
        """Store the template (None: remove it, back to the settings' default)."""
        ...


class DatasetRepo(Protocol):
    async def create_dataset(self, dataset: Dataset) -> Dataset:
        """Conflict when the tenant already has a dataset of that name."""
        ...

    async def get_dataset(self, dataset_id: str) -> Dataset | None: ...

    async def list_datasets(self, tenant_id: str | None) -> list[Dataset]:
        """One tenant's datasets by name (None: every tenant's)."""
        ...

    async def update_dataset(self, dataset: Dataset) -> Dataset:
        """Replace name/description/chunking/allowed_roles (``updated_at`` set to now); Conflict
        on a taken name, NotFound for an unknown id."""
        ...

    async def delete_dataset(self, dataset_id: str) -> None:
        """The dataset and its files, sources and ledger (its points are the caller's job)."""
        ...

    async def collection_models(self, collection_names: Sequence[str]) -> dict[str, str]:
        """The dense model of each of ``collection_names`` whose dataset chose a named one."""
        ...

    async def dataset_stats(self, dataset_ids: Sequence[str] | None) -> dict[str, DatasetStats]:
        """Counts over the files of each of ``dataset_ids`` (None: of every dataset), in one
        aggregate query; a dataset without files is absent (its stats are ``DatasetStats()``)."""
        ...


class FileRepo(Protocol):
    async def put_file(self, entry: FileEntry) -> FileEntry:
        """Insert or replace by id (``updated_at`` set to now; a replaced file keeps its
        ``created_at``); NotFound when the dataset does not exist."""
        ...

    async def get_file(self, file_id: str) -> FileEntry | None: ...

    async def list_files(self, dataset_id: str, *, limit: int = 1000, offset: int = 0) -> list[FileEntry]:
        """A dataset's files by name."""
        ...

    async def delete_file(self, file_id: str) -> None: ...

    async def field_types(self, dataset_id: str) -> dict[str, FieldType]:
        """Each user metadata field's type in the dataset's files (none: an unknown dataset)."""
        ...

    async def set_file_metadata(
        self, file_id: str, metadata: FileMetadata, types: Mapping[str, FieldType]
    ) -> FileEntry:
        """Replace a file's tags and fields and record ``types`` in its dataset, in one
        transaction: a field of another type than the dataset recorded is InvalidMetadata, nothing
        written; NotFound when there is no such file.  ``put_file`` never writes metadata."""
        ...


class SourceRepo(Protocol):
    """Sources and their ledger: one record per item, whatever the source."""

    async def create_source(self, spec: SourceSpec) -> SourceSpec: ...

    async def get_source(self, source_id: str) -> SourceSpec | None: ...

    async def list_sources(self, dataset_id: str | None = None) -> list[SourceSpec]:
        """A dataset's sources (None: all, e.g. for the folder watcher at start-up)."""
        ...

    async def delete_source(self, source_id: str) -> None:
        """The source and its ledger (its files are the caller's job)."""
        ...

    async def mark_synced(self, source_id: str, at: float, error: str | None) -> None: ...

    async def set_source_disabled(self, source_id: str, reason: str | None) -> SourceSpec | None:
        """Disable a live source with ``reason`` (None: enable a disabled one again); the source as
        it now stands, or None when nothing changed (an unknown id, or already in that state)."""
        ...

    async def ledger(self, source_id: str) -> dict[str, LedgerEntry]:
        """Every item recorded for the source, by key."""
        ...

    async def record_item(self, entry: LedgerEntry) -> None:
        """Insert or replace the record of (source_id, key)."""
        ...

    async def forget_item(self, source_id: str, key: str) -> None: ...


class SourceSchedules(Protocol):
    """Sources' schedules (:mod:`ragd.kb.schedules`): a due run is fired by one claimer only."""

    async def set_schedule(
        self, source_id: str, schedule: SourceSchedule | None, next_run_at: float | None
    ) -> SourceSpec | None:
        """Replace the schedule and the next run; None for an unknown source."""
        ...

    async def set_paused(self, source_id: str, paused: bool, next_run_at: float | None) -> SourceSpec | None:
        """Pause or resume, keeping the schedule; None for an unknown source."""
        ...

    async def due_sources(self, now: float, limit: int = 100) -> list[SourceSpec]:
        """Scheduled, live, unpaused sources due at ``now``, earliest first."""
        ...

    async def fire_due(self, spec: SourceSpec, next_run_at: float, job: Job) -> Job | None:
        """In one transaction: move the run due at ``spec.next_run_at`` on to ``next_run_at`` (None,
        nothing queued, when another claimer did first or the source is no longer due), then queue
        ``job`` unless a sync of the source is queued or running (that job is returned instead)."""
        ...


class JobQueue(Protocol):
    """Durable jobs shared by every replica.

    ``claim`` hands a job to exactly one worker: on PostgreSQL with
    ``SELECT … FOR UPDATE SKIP LOCKED``, on SQLite inside the database's one
    write transaction.  A running job holds a lease that its worker renews
    (``heartbeat``); a job whose lease lapsed (the worker died) is claimed
    again, which is safe because ingest is idempotent and finished items are
    skipped.
    """

    async def enqueue(self, job: Job, items: Sequence[str] = (), *, dedupe: bool = False) -> Job:
        """Store a queued job (and its item keys).  ``dedupe``: if a job of the same tenant,
        kind, dataset and payload is still queued (not running), return that one instead, with
        ``items`` added to it."""
        ...

    async def claim(self, worker_id: str, lease_s: float, *, max_running: int = 0) -> Job | None:
        """The oldest runnable job (queued and due, or running with a lapsed lease), now
        RUNNING for ``worker_id`` with attempts+1 and ``started_at`` now; None when there is none.
        A lapsed job is not run again when its cancel was requested (it ends CANCELLED) or its
        attempts are used up (it ends FAILED with error code ``WORKER_LOST``).

        A tenant already running its ``max_concurrent_jobs`` (its override in ``tenant_limits``,
        else ``max_running``; 0: no bound) with live leases gets none: its jobs stay queued and
        the next tenant's runnable job is claimed, on every replica alike."""
        ...

    async def heartbeat(self, job_id: str, worker_id: str, lease_s: float) -> Job | None:
        """Extend the lease; None when the worker no longer holds it.  The returned job
        shows ``cancel_requested``.  Not a visible change: ``updated_at`` stays."""
        ...

    async def set_items(self, job_id: str, keys: Sequence[str]) -> None:
        """Add items (keys already present keep their stage) and update the job's total."""
        ...

    async def update_item(
        self,
        job_id: str,
        key: str,
        stage: ItemStage,
        *,
        file_id: str | None = None,
        chunks: int = 0,
        error_code: str | None = None,
        error_message: str | None = None,
    ) -> None:
        """Move one item to ``stage`` (adding it when the job did not list it; ``file_id`` None
        keeps the item's) and recount the job's done/failed/chunks/total; NotFound for an
        unknown job."""
        ...

    async def items(self, job_id: str) -> list[JobItem]: ...

    async def finish(
        self,
        job_id: str,
        worker_id: str,
        status: JobStatus,
        *,
        error_code: str | None = None,
        error_message: str | None = None,
        retry_in_s: float | None = None,
    ) -> Job:
        """End an attempt.  ``retry_in_s`` with a FAILED status and attempts left puts the job
        back to QUEUED, due after the delay (not when a cancel was requested); otherwise the
        status is final.  SUCCEEDED means "ran to the end": the job ends as its item counts say
        (:meth:`JobStatus.completed`: SUCCEEDED, PARTIAL or FAILED), read under the job's lock;
        CANCELLED when its cancel was requested.  A worker that no longer holds the lease
        changes nothing and gets the job as it stands.  NotFound for an unknown job;
        ValueError for a non-final status."""
        ...

    async def request_cancel(self, job_id: str) -> Job | None:
        """Cancel a queued job at once; flag a running one for its worker to stop."""
        ...

    async def get_job(self, job_id: str) -> Job | None: ...

    async def count_jobs(
        self, tenant_id: str | None = None, *, dataset_ids: Sequence[str] | None = None
    ) -> dict[JobStatus, int]:
        """How many jobs are in each status (a status with none: 0): every tenant's, or one
        tenant's (``tenant_id``); ``dataset_ids``: only jobs of those datasets or of none."""
        ...

    async def list_jobs(
        self,
        tenant_id: str | None,
        *,
        updated_after: float | None = None,
        limit: int = 100,
        statuses: Sequence[JobStatus] | None = None,
    ) -> list[Job]:
        """A tenant's jobs (None: all), newest first; ``statuses``: only jobs in one of them.

        ``updated_after``: the jobs changed since, oldest change first.  Every change that a
        user can see (not a heartbeat) gives the job a new ``updated_at``, larger than any
        committed before it, on every replica; so a feed that polls with the largest
        ``updated_at`` it has seen (or the last one of a full page) misses nothing."""
        ...


class SourceGrants(Protocol):
    """What folder roots and S3 bucket/prefixes each tenant's sources may reach (issue 30 §1.1).

    Storage only: the use-cases (``ragd.kb.grants``) check who grants, the targets and overlaps."""

    async def create_grant(
        self, grant: SourceGrant, *, check: Callable[[list[SourceGrant]], None] | None = None
    ) -> SourceGrant:
        """Store a grant (``created_at`` now); NotFound when the tenant does not exist.  ``check``
        sees every live grant first, in the same transaction, and may raise to store nothing; two
        concurrent ``create_grant`` calls never both pass their checks."""
        ...

    async def get_grant(self, grant_id: str) -> SourceGrant | None: ...

    async def list_grants(
        self, tenant_id: str | None = None, *, include_revoked: bool = False
    ) -> list[SourceGrant]:
        """One tenant's grants (None: every tenant's), oldest first; live ones only unless
        ``include_revoked``."""
        ...

    async def revoke_grant(self, grant_id: str) -> SourceGrant | None:
        """Set ``revoked_at`` (now) on a live grant; the grant as it now stands (a revoked one
        unchanged), or None for an unknown id."""
        ...


class UiSessions(Protocol):
    """The web UI's server-side sessions (issue 30 §1.11): the cookie holds a random secret, the
    catalog its SHA-256.  Live = not revoked, not expired, and its key (if any) not revoked."""

    async def create_ui_session(
        self, principal: Principal, ttl_s: float, user_agent: str | None = None
    ) -> tuple[UiSession, str]:
        """A session of ``principal``'s key (None: the service key) expiring in ``ttl_s``, and its
        secret (returned once).  ``user_agent`` is kept trimmed, for the listing."""
        ...

    async def resolve_ui_session(self, secret: str, *, touch_after_s: float = 60.0) -> UiSession | None:
        """The live session of ``secret`` (with its key's role), or None; ``last_seen_at`` is set to
        now when it is older than ``touch_after_s`` (the returned record shows the old one)."""
        ...

    async def list_ui_sessions(self, tenant_id: str | None, key_id: str | None = None) -> list[UiSession]:
        """A tenant's live sessions (None: the service key's), newest first; ``key_id``: one key's."""
        ...

    async def revoke_ui_session(self, session_id: str, tenant_id: str | None) -> bool:
        """False when the tenant (None: the service key) has no such live session."""
        ...

    async def revoke_key_sessions(self, key_id: str | None) -> int:
        """Revoke every session of a key (None: of the service key); how many were live."""
        ...

    async def purge_ui_sessions(self) -> int:
        """Delete expired and revoked sessions; how many."""
        ...


class TenantLimitsRepo(Protocol):
    """Per-tenant limits over the settings' defaults (issue 30 §2): a tenant's row holds only the
    limits it overrides (names from :data:`ragd.kb_types.LIMIT_NAMES`, integers >= 0)."""

    async def get_tenant_limits(self, tenant_id: str) -> dict[str, int]:
        """The tenant's overrides ({}: it follows the settings)."""
        ...

    async def list_tenant_limits(self) -> dict[str, dict[str, int]]:
        """Every tenant's overrides, by tenant id (tenants without any are absent)."""
        ...

    async def set_tenant_limits(self, tenant_id: str, overrides: Mapping[str, int]) -> dict[str, int]:
        """Replace the tenant's overrides (unknown names and negative values dropped; {}: back to the
        settings) and return them as stored; NotFound for an unknown tenant."""
        ...

    async def tenant_usage(
        self, tenant_id: str | None = None, *, exclude_file: str | None = None
    ) -> dict[str, TenantUsage]:
        """What each tenant (or only ``tenant_id``) holds and runs, in one read: chunks over its
        files, bytes of the files that hold chunks, jobs RUNNING with a live lease; a tenant with
        none of these is absent.  ``exclude_file``: leave that file out (what an ingest replaces)."""
        ...


class AuditLog(Protocol):
    """The append-only audit trail (issue 30 §3)."""

    async def append_audit(self, record: AuditRecord) -> AuditRecord:
        """Store ``record`` (a new id and ``at`` = now when they are empty/0); returns it as
        stored, with its ``seq``.  Nothing can change or delete a stored record."""
        ...

    async def list_audit(
        self, query: AuditQuery, *, after_seq: int | None = None, limit: int = 100, newest_first: bool = True
    ) -> list[AuditRecord]:
        """Records matching ``query``, at most ``limit``, ordered by ``seq`` (newest first, or oldest
        first); ``after_seq`` continues a listing after the record of that seq, in that order."""
        ...


class EvalSets(Protocol):
    """A dataset's evaluation set: labelled queries (issue 31 §2), oldest first."""

    async def add_eval_queries(
        self, dataset_id: str, queries: Sequence[EvalQuery], *, max_queries: int
    ) -> list[EvalQuery]:
        """Store ``queries`` (``dataset_id`` and ``created_at`` set, in order), all or none:
        EvalSetFull when the set would then hold more than ``max_queries``; NotFound for an unknown
        dataset."""
        ...

    async def list_eval_queries(
        self, dataset_id: str, *, limit: int = 100, offset: int = 0
    ) -> list[EvalQuery]: ...

    async def count_eval_queries(self, dataset_id: str) -> int: ...

    async def delete_eval_query(self, dataset_id: str, query_id: str) -> bool:
        """False when the dataset has no such labelled query."""
        ...


class MigrationRepo(Protocol):
    """Dataset migrations (issue 31 §1).  Every change of the version a dataset serves or hides is
    one transaction with the migration's record (``ragd.catalog.sql.migrations_repo``)."""

    async def create_migration(self, migration: Migration) -> Migration:
        """Store a BUILDING migration and hide its target; MigrationRunning when one is in flight."""
        ...

    async def get_migration(self, migration_id: str) -> Migration | None: ...

    async def list_migrations(self, dataset_id: str, *, limit: int = 50) -> list[Migration]: ...

    async def migration_of_job(self, job_id: str) -> Migration | None: ...

    async def update_migration(
        self, migration_id: str, *, expect: Sequence[MigrationState] | None = None, **changes: Any
    ) -> Migration: ...

    async def switch_migration(
        self,
        migration_id: str,
        *,
        to_target: bool,
        retain_until: float,
        expect: Sequence[MigrationState],
        file_chunks: Mapping[str, int] | None = None,
    ) -> tuple[Dataset, Migration]: ...

    async def end_migration(self, migration_id: str, state: MigrationState, **changes: Any) -> Migration: ...

    async def removed_version(self, migration_id: str) -> Migration: ...

    async def open_migrations(self) -> list[Migration]: ...

    async def migrations_to_clean(self, now: float) -> list[Migration]: ...

    async def collection_versions(self) -> dict[str, CollectionVersion]: ...


class Catalog(
    TenantDirectory,
    TenantTemplates,
    DatasetRepo,
    FileRepo,
    SourceRepo,
    SourceSchedules,
    JobQueue,
    SourceGrants,
    UiSessions,
    TenantLimitsRepo,
    AuditLog,
    EvalSets,
    MigrationRepo,
    Protocol,
):
    """Every port over one database (what the SQL adapter provides)."""

    async def aclose(self) -> None: ...
