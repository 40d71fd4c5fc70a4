"""Knowledge-base records: tenants -> datasets -> files -> chunks; sources; jobs.

Kernel records like :mod:`ragd.types` (frozen, no I/O), kept apart from the search pipeline's:
the catalog, the knowledge-base use-cases and their HTTP schemas share them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ragd.types import ChunkStrategy, ParsedEnum

# -- knowledge bases: tenants -> datasets -> files -> chunks; sources; jobs -------------------------

#: built-in roles: admins manage a tenant (datasets, sources, keys), editors manage datasets and
#: files; ``ingest`` keys are scoped to ingestion: an editor's writes, but nothing that reads chunks
#: (search, chat, chunk inspection, export); every other role name only reads the datasets whose
#: ``allowed_roles`` name it (or all datasets with no ``allowed_roles``).
ADMIN_ROLE = "admin"
EDITOR_ROLE = "editor"
INGEST_ROLE = "ingest"


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a request acts for, from its API key; never from names the caller sends.

    ``tenant_id`` None is the service-wide key (``server.api_key``): the Open WebUI contract's
    one shared key, admin of every tenant and of the raw collections.
    """

    tenant_id: str | None
    role: str
    key_id: str | None = None

    @property
    def is_service(self) -> bool:
        return self.tenant_id is None

    @property
    def can_write(self) -> bool:
        return self.is_service or self.role in (ADMIN_ROLE, EDITOR_ROLE, INGEST_ROLE)

    @property
    def can_read_chunks(self) -> bool:
        """False for an ingestion-only key: it feeds datasets, never reads what they hold."""
        return self.is_service or self.role != INGEST_ROLE

    @property
    def can_admin(self) -> bool:
        return self.is_service or self.role == ADMIN_ROLE

    def can_read(self, dataset: Dataset) -> bool:
        if not self.is_service and dataset.tenant_id != self.tenant_id:
            return False
        return self.can_write or not dataset.allowed_roles or self.role in dataset.allowed_roles


@dataclass(frozen=True, slots=True)
class Tenant:
    id: str
    name: str
    created_at: float


@dataclass(frozen=True, slots=True)
class ApiKeyInfo:
    """A tenant-scoped key as listed (the secret is shown once, at creation, and stored hashed)."""

    id: str
    tenant_id: str
    role: str
    name: str
    prefix: str
    created_at: float


@dataclass(frozen=True, slots=True)
class UiSession:
    """A web UI sign-in held server-side: the browser's cookie holds a random secret (only its
    SHA-256 is stored), never the key.  ``key_id`` None: signed in with the service key."""

    id: str
    key_id: str | None
    tenant_id: str | None
    #: the key's role (``admin`` for the service key), read with the key on every resolve
    role: str
    created_at: float
    #: fixed at sign-in (the TTL does not slide); ``last_seen_at`` does
    expires_at: float
    last_seen_at: float
    user_agent: str | None = None

    @property
    def principal(self) -> Principal:
        return Principal(tenant_id=self.tenant_id, role=self.role, key_id=self.key_id)


@dataclass(frozen=True, slots=True)
class ChunkingSpec:
    """A dataset's chunking; None fields fall back to the service's settings."""

    strategy: ChunkStrategy | None = None
    size: int | None = None
    overlap: int | None = None


@dataclass(frozen=True, slots=True)
class DatasetTemplate:
    """One dataset every new tenant is created with (the tenant template: docs/knowledge-bases.md,
    "Standard datasets")."""

    name: str
    description: str = ""
    chunking: ChunkingSpec = ChunkingSpec()
    allowed_roles: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        c = self.chunking
        return {
            "name": self.name,
            "description": self.description,
            "chunking": {
                "strategy": c.strategy.value if c.strategy else None,
                "size": c.size,
                "overlap": c.overlap,
            },
            "allowed_roles": list(self.allowed_roles),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DatasetTemplate:
        raw = data.get("chunking") or {}
        strategy = raw.get("strategy")
        return cls(
            name=str(data["name"]),
            description=str(data.get("description") or ""),
            chunking=ChunkingSpec(
                strategy=ChunkStrategy.parse(strategy) if strategy else None,
                size=raw.get("size"),
                overlap=raw.get("overlap"),
            ),
            allowed_roles=tuple(data.get("allowed_roles") or ()),
        )


@dataclass(frozen=True, slots=True)
class Dataset:
    """A knowledge base: one ``collection_name`` (tenant key) in the shared physical collection."""

    id: str
    tenant_id: str
    name: str
    collection_name: str
    description: str = ""
    chunking: ChunkingSpec = ChunkingSpec()
    allowed_roles: tuple[str, ...] = ()
    #: the reranker its searches run unless a request says otherwise: a configured name, "none",
    #: or None for the service's default
    reranker: str | None = None
    #: the dense model its files are embedded with: a name in RAGD_EMBEDDERS, or None for the
    #: service's default; fixed once the dataset has files
    embedding: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    #: the version of its chunks searches read (``meta.generation``): ``""`` the untagged one built
    #: before any migration, else the tag of the migration that built it (docs, "Migrations")
    generation: str = ""
    #: versions of its chunks in the store that no read sees: one a migration is building, or one
    #: retained after a switch (or a rollback) until its retention ends
    hidden: tuple[str, ...] = ()


class FileStatus(ParsedEnum):
    QUEUED = "queued"
    INDEXING = "indexing"
    INDEXED = "indexed"
    FAILED = "failed"


#: a user metadata field's value: a string, a number, a boolean, or a date (kept as a canonical
#: UTC ISO-8601 string, ``2024-05-01T00:00:00Z``; its type is the dataset's record of the field)
FieldValue = str | int | float | bool


class FieldType(ParsedEnum):
    """The type of a user metadata field, the same for every file of a dataset."""

    STRING = "string"
    NUMBER = "number"
    BOOLEAN = "boolean"
    DATE = "date"


@dataclass(frozen=True, slots=True)
class FileMetadata:
    """A file's user metadata (docs/knowledge-bases.md#metadata), copied into each of its chunks'
    payload as ``meta.tags`` and ``meta.fields`` (a change needs no re-embedding)."""

    tags: tuple[str, ...] = ()
    fields: Mapping[str, FieldValue] = field(default_factory=dict)

    def payload(self) -> dict[str, Any]:
        """The chunk ``meta`` keys this metadata sets (both always: a cleared one is emptied)."""
        return {"tags": list(self.tags), "fields": dict(self.fields)}


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One file of a dataset; ``id`` is the store's ``meta.file_id``."""

    id: str
    dataset_id: str
    name: str
    status: FileStatus = FileStatus.QUEUED
    enabled: bool = True
    chunks: int = 0
    size: int = 0
    content_hash: str | None = None
    #: where it came from: an upload (None) or a source and the item's key there
    source_id: str | None = None
    item_key: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    #: its own chunking, given at upload, over the dataset's (None fields: the dataset's); kept on
    #: re-index
    chunking: ChunkingSpec | None = None
    #: a user-given label for where it came from (an upload's ``source_label``); None: none
    source_label: str | None = None
    #: user metadata (tags, typed fields); written only by ``set_file_metadata``, never by put_file
    metadata: FileMetadata = field(default_factory=FileMetadata)


class DatasetState(ParsedEnum):
    """One word for a dataset's files (none in progress unless INDEXING):

    EMPTY no files; INDEXING some queued or indexing; READY all indexed; PARTIAL some failed
    while others are searchable; ERROR some failed and nothing is searchable.
    """

    EMPTY = "empty"
    INDEXING = "indexing"
    PARTIAL = "partial"
    ERROR = "error"
    READY = "ready"


@dataclass(frozen=True, slots=True)
class DatasetStats:
    """What a dataset holds, counted over its files by the catalog (one aggregate query per list)."""

    files: int = 0
    #: the sum of its files' chunk counts
    chunks: int = 0
    #: files per status; a status no file has may be left out
    files_by_status: Mapping[FileStatus, int] = field(default_factory=dict)
    #: the newest ``updated_at`` of its files (None: no files)
    last_file_update: float | None = None

    @property
    def state(self) -> DatasetState:
        count = self.files_by_status.get
        if not self.files:
            return DatasetState.EMPTY
        if count(FileStatus.QUEUED, 0) or count(FileStatus.INDEXING, 0):
            return DatasetState.INDEXING
        if not count(FileStatus.FAILED, 0):
            return DatasetState.READY
        # a failed file may keep its previous version's chunks: searchable is "has chunks"
        return DatasetState.PARTIAL if self.chunks or count(FileStatus.INDEXED, 0) else DatasetState.ERROR

    def last_update(self, dataset: Dataset) -> float:
        """The newest of the dataset's and its files' ``updated_at``."""
        return max(dataset.updated_at, self.last_file_update or 0.0)


class SourceKind(ParsedEnum):
    FOLDER = "folder"
    WEB = "web"
    S3 = "s3"


@dataclass(frozen=True, slots=True)
class SourceSchedule:
    """When a source syncs on its own: every ``interval_s`` seconds, or at the slots of a 5-field
    ``cron`` expression read in the IANA ``timezone`` (exactly one of the two; see
    :mod:`ragd.kb.schedule_math`)."""

    interval_s: float | None = None
    cron: str | None = None
    timezone: str = "UTC"

    def to_json(self) -> dict[str, Any]:
        if self.cron is not None:
            return {"cron": self.cron, "timezone": self.timezone}
        return {"interval_s": self.interval_s}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SourceSchedule:
        interval = data.get("interval_s")
        return cls(
            interval_s=float(interval) if interval is not None else None,
            cron=data.get("cron"),
            timezone=str(data.get("timezone") or "UTC"),
        )


@dataclass(frozen=True, slots=True)
class SourceSpec:
    """A source feeding a dataset; ``config`` is the kind's own settings (path, url, bucket…).

    ``schedule`` (None: synced by hand or by the folder watcher only) fires at ``next_run_at``
    unless ``paused`` (a paused source keeps its schedule); ``last_run_at`` is when it last fired,
    and the run's result is ``last_synced_at``/``last_error`` as for any sync."""

    id: str
    dataset_id: str
    kind: SourceKind
    config: Mapping[str, Any]
    created_at: float = 0.0
    last_synced_at: float | None = None
    last_error: str | None = None
    #: why it no longer syncs (no live grant of its tenant covers it: docs/security.md, "Sources");
    #: None while it is live
    disabled_reason: str | None = None
    schedule: SourceSchedule | None = None
    paused: bool = False
    next_run_at: float | None = None
    last_run_at: float | None = None

    @property
    def disabled(self) -> bool:
        return self.disabled_reason is not None


class ItemStatus(ParsedEnum):
    INDEXED = "indexed"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """The sync ledger's record of one item of a source (one per key, whatever the source)."""

    source_id: str
    key: str
    fingerprint: str
    file_id: str
    status: ItemStatus
    last_seen: float
    error_code: str | None = None
    error_message: str | None = None


class JobKind(ParsedEnum):
    INGEST = "ingest"  # uploaded files
    SYNC = "sync"  # a source: folder, web, s3
    REINDEX = "reindex"  # files of a dataset, again from their stored bytes or source
    MIGRATE = "migrate"  # a dataset's next version (another model or chunking): ragd.kb.migrations


class JobStatus(ParsedEnum):
    """Where a job is, and once finished how it ended (docs/knowledge-bases.md, "Jobs"):

    queued, running      not finished
    succeeded            every item done (indexed, unchanged or removed); none failed
    partial              it ran to the end, some items done and some failed
    failed               nothing done: every item failed, or the job itself failed (``error``)
    cancelled            stopped on request
    """

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    PARTIAL = "partial"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self not in (JobStatus.QUEUED, JobStatus.RUNNING)

    @classmethod
    def completed(cls, done: int, failed: int) -> JobStatus:
        """How a job that ran to the end ended, from its items' counts."""
        if not failed:
            return cls.SUCCEEDED
        return cls.PARTIAL if done else cls.FAILED


class ItemStage(ParsedEnum):
    PENDING = "pending"
    FETCHING = "fetching"
    INDEXING = "indexing"
    DONE = "done"
    UNCHANGED = "unchanged"
    DELETED = "deleted"
    FAILED = "failed"

    @property
    def finished(self) -> bool:
        return self in (ItemStage.DONE, ItemStage.UNCHANGED, ItemStage.DELETED, ItemStage.FAILED)


@dataclass(frozen=True, slots=True)
class JobItem:
    """One unit of a job (a file, a page, an object) and the stage it reached."""

    job_id: str
    key: str
    stage: ItemStage = ItemStage.PENDING
    file_id: str | None = None
    chunks: int = 0
    error_code: str | None = None
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class Job:
    """Durable work: survives restarts (a lease that lapses is claimed again), retried with backoff."""

    id: str
    tenant_id: str
    kind: JobKind
    status: JobStatus
    dataset_id: str | None = None
    payload: Mapping[str, Any] = field(default_factory=dict)
    attempts: int = 0
    max_attempts: int = 3
    cancel_requested: bool = False
    error_code: str | None = None
    error_message: str | None = None
    created_at: float = 0.0
    started_at: float | None = None
    finished_at: float | None = None
    updated_at: float = 0.0
    #: counts over the job's items, kept up to date while it runs
    total: int = 0
    done: int = 0
    failed: int = 0
    chunks: int = 0


# -- the tenant doors (issue 30, docs/security.md) ------------------------------------------------


class AuditOutcome(ParsedEnum):
    OK = "ok"
    #: refused: no key, a wrong key, a role or tenant that may not
    DENIED = "denied"
    #: allowed, but it did not work (a bad request, a conflict, an error)
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """One administrative action: who (a key id, ``service`` or ``anonymous``; never a secret),
    when, what (``action``: ``dataset.create``, ``key.revoke``, …), on what, and how it ended."""

    id: str
    at: float
    actor: str
    action: str
    outcome: AuditOutcome
    tenant_id: str | None = None
    actor_role: str | None = None
    target_kind: str | None = None
    target_id: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)
    client: str | None = None
    #: the catalog's order of appending (a page's cursor); 0 before it is stored
    seq: int = 0


@dataclass(frozen=True, slots=True)
class AuditQuery:
    """Which audit records to read; None matches any.  ``action`` is an action (``key.revoke``) or
    its noun (``key``: every ``key.*``); ``since``/``until`` bound ``at`` (epoch seconds,
    inclusive/exclusive)."""

    tenant_id: str | None = None
    actor: str | None = None
    action: str | None = None
    since: float | None = None
    until: float | None = None


@dataclass(frozen=True, slots=True)
class SourceGrant:
    """What one tenant's sources may reach, granted by the service key: a folder (``target`` a
    resolved absolute path; the folder and everything under it) or an S3 bucket/prefix (``target``
    ``bucket/prefix``, the prefix may be empty: the whole bucket).  Grants of two tenants never
    overlap unless the later one is ``shared``.  A revoked grant stays listed with ``revoked_at``."""

    id: str
    tenant_id: str
    kind: SourceKind  # FOLDER or S3
    target: str
    shared: bool = False
    created_at: float = 0.0
    #: who granted it: ``service`` (the service key or the CLI)
    created_by: str = ""
    revoked_at: float | None = None

    @property
    def live(self) -> bool:
        return self.revoked_at is None


# -- limits per tenant and per key (docs/knowledge-bases.md, "Limits") ------------------------------


class RateSurface(ParsedEnum):
    """The request families a key's rate limit counts apart (``RAGD_LIMITS__<SURFACE>_PER_MINUTE``)."""

    #: /search, /api/v1/search, a dataset's search, the MCP search tool
    SEARCH = "search"
    #: /v1/chat/completions
    CHAT = "chat"
    #: the model endpoints: /v1/embeddings, /embed, /v1/rerank
    MODELS = "models"


@dataclass(frozen=True, slots=True)
class TenantLimits:
    """One tenant's limits; 0 means no limit.  The settings' ``limits`` group gives the defaults,
    a tenant's overrides (``tenant_limits.limits``, set by the service key) replace single values."""

    #: requests per minute and key, per surface (token buckets, counted by each replica)
    search_per_minute: int = 0
    chat_per_minute: int = 0
    models_per_minute: int = 0
    #: storage over all the tenant's datasets: chunks, and bytes of the files that hold them
    max_chunks: int = 0
    max_bytes: int = 0
    #: ingest jobs of the tenant running at once, over every worker of every replica
    max_concurrent_jobs: int = 0

    def per_minute(self, surface: RateSurface) -> int:
        value: int = getattr(self, f"{surface.value}_per_minute")
        return value


#: the names a tenant's overrides may carry (the fields of :class:`TenantLimits`)
LIMIT_NAMES: tuple[str, ...] = tuple(TenantLimits.__dataclass_fields__)


@dataclass(frozen=True, slots=True)
class TenantUsage:
    """What a tenant holds and runs now: chunks over its datasets' files, the bytes of the files
    that hold chunks, and its jobs running with a live lease."""

    chunks: int = 0
    bytes: int = 0
    running_jobs: int = 0


# -- evaluation sets (issue 31 §2) ------------------------------------------------------------------


class EvalSource(ParsedEnum):
    """Where a labelled query came from."""

    API = "api"
    IMPORT = "import"
    SANDBOX = "sandbox"
    CHAT = "chat"


@dataclass(frozen=True, slots=True)
class EvalQuery:
    """A labelled query of a dataset's evaluation set: a query and what answers it.

    ``files`` are the dataset's file ids (they survive re-chunking and a new model); ``chunks`` are
    chunk ids, judged only when no file is given.  At least one of them is set."""

    id: str
    dataset_id: str
    query: str
    files: tuple[str, ...] = ()
    chunks: tuple[str, ...] = ()
    answer: str | None = None
    source: EvalSource = EvalSource.API
    created_at: float = 0.0


# -- migrations: a dataset moved to another model or chunking (issue 31 §1) -----------------------


class MigrationState(ParsedEnum):
    """Where a migration is (docs/knowledge-bases.md, "Migrations"):

    building      its job builds the new version beside the serving one (then evaluates both)
    ready         the new version is complete and waits for ``switch`` (held: ``Migration.held``)
    switched      the dataset serves the new version; the old one is retained until ``retain_until``
    rolled_back   the dataset serves the old version again; the new one is retained likewise
    failed        ended without switching (its job failed); the new version is removed
    cancelled     stopped on request before switching; the new version is removed
    """

    BUILDING = "building"
    READY = "ready"
    SWITCHED = "switched"
    ROLLED_BACK = "rolled_back"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def in_flight(self) -> bool:
        """Not switched yet and not ended: the dataset cannot start another migration."""
        return self in (MigrationState.BUILDING, MigrationState.READY)


@dataclass(frozen=True, slots=True)
class VersionSpec:
    """One version of a dataset's chunks: its generation tag, dense model and chunking."""

    generation: str = ""
    embedding: str | None = None
    chunking: ChunkingSpec = ChunkingSpec()


@dataclass(frozen=True, slots=True)
class Migration:
    """A dataset moving from ``source`` to ``target`` (another model, chunking, or a re-index)."""

    id: str
    dataset_id: str
    tenant_id: str
    state: MigrationState
    source: VersionSpec
    target: VersionSpec
    job_id: str | None = None
    #: switch as soon as the new version is complete and passes its evaluation
    auto_switch: bool = True
    #: the largest nDCG@10 drop (old minus new, on the dataset's evaluation set) a switch accepts
    #: without an override
    max_regression: float = 0.02
    #: the evaluation set's reports on both versions: {"old": …, "new": …, "wins": […], "losses": […]}
    reports: Mapping[str, Any] = field(default_factory=dict)
    #: why a complete migration waits for a manual switch (None: it does not)
    held: str | None = None
    #: files whose new version failed (they keep their old one; listed in the job's items)
    failed_files: int = 0
    error_code: str | None = None
    error_message: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    switched_at: float | None = None
    rolled_back_at: float | None = None
    #: when the version not served is removed (after a switch or a rollback)
    retain_until: float | None = None
    #: when the version not served was removed (None: still in the store)
    removed_at: float | None = None

    @property
    def serving(self) -> VersionSpec:
        """The version the dataset serves while this migration is its latest."""
        return self.target if self.state is MigrationState.SWITCHED else self.source

    @property
    def spare(self) -> VersionSpec:
        """The version kept out of every read (being built, retained, or to be removed)."""
        return self.source if self.state is MigrationState.SWITCHED else self.target
