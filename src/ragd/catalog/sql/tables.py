"""The catalog's tables (SQLAlchemy Core), portable between SQLite and PostgreSQL.

Times are float epoch seconds; enums are stored as their string values; JSON
columns hold ``allowed_roles``, source ``config`` and job ``payload``.  The
Alembic revisions in ``migrations/versions`` must build exactly this schema
(a test compares them).

``job_clock`` is a one-row table: every job change takes the next value of it
as the job's ``updated_at`` (see ``clock.py``), which makes ``updated_at`` a
change feed that commits in order on both engines.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    false,
)

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
}

metadata = MetaData(naming_convention=NAMING)


def _fk(target: str) -> ForeignKey:
    return ForeignKey(target, ondelete="CASCADE")


tenants = Table(
    "tenants",
    metadata,
    Column("id", String, primary_key=True),
    Column("name", String, nullable=False, unique=True),
    Column("created_at", Float, nullable=False),
)

api_keys = Table(
    "api_keys",
    metadata,
    Column("id", String, primary_key=True),
    Column("tenant_id", String, _fk("tenants.id"), nullable=False, index=True),
    Column("role", String, nullable=False),
    Column("name", String, nullable=False),
    Column("prefix", String, nullable=False),
    Column("secret_hash", String, nullable=False, unique=True),
    Column("created_at", Float, nullable=False),
    Column("revoked_at", Float, nullable=True),
)

datasets = Table(
    "datasets",
    metadata,
    Column("id", String, primary_key=True),
    Column("tenant_id", String, _fk("tenants.id"), nullable=False),
    Column("name", String, nullable=False),
    Column("collection_name", String, nullable=False, unique=True),
    Column("description", String, nullable=False),
    Column("chunk_strategy", String, nullable=True),
    Column("chunk_size", Integer, nullable=True),
    Column("chunk_overlap", Integer, nullable=True),
    Column("allowed_roles", JSON, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    Column("reranker", String, nullable=True),  # 0002
    Column("embedding", String, nullable=True),  # 0003
    #: each user metadata field's type in this dataset's files ({name: string|number|boolean|date}) (0007)
    Column("field_types", JSON, nullable=True),
    #: the version of its chunks searches read ("" the untagged one) and the versions no read sees (0010)
    Column("generation", String, nullable=False, server_default=""),
    Column("hidden", JSON, nullable=True),
    Index("uq_datasets_tenant_id_name", "tenant_id", "name", unique=True),
)

files = Table(
    "files",
    metadata,
    Column("id", String, primary_key=True),
    Column("dataset_id", String, _fk("datasets.id"), nullable=False),
    Column("name", String, nullable=False),
    Column("status", String, nullable=False),
    Column("enabled", Boolean, nullable=False),
    Column("chunks", Integer, nullable=False),
    Column("size", Integer, nullable=False),
    Column("content_hash", String, nullable=True),
    Column("source_id", String, nullable=True),
    Column("item_key", String, nullable=True),
    Column("error_code", String, nullable=True),
    Column("error_message", String, nullable=True),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    #: the file's own chunking over its dataset's, given at upload (None: the dataset's) (0008)
    Column("chunk_strategy", String, nullable=True),
    Column("chunk_size", Integer, nullable=True),
    Column("chunk_overlap", Integer, nullable=True),
    #: a user-given label for where the file came from (0008)
    Column("source_label", String, nullable=True),
    #: user metadata: a list of tags and a {name: value} object (0007); None: none
    Column("tags", JSON, nullable=True),
    Column("fields", JSON, nullable=True),
    Index("ix_files_dataset_id_name", "dataset_id", "name"),
    Index("ix_files_source_id_item_key", "source_id", "item_key"),
)

sources = Table(
    "sources",
    metadata,
    Column("id", String, primary_key=True),
    Column("dataset_id", String, _fk("datasets.id"), nullable=False, index=True),
    Column("kind", String, nullable=False),
    Column("config", JSON, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("last_synced_at", Float, nullable=True),
    Column("last_error", String, nullable=True),
    #: why the source no longer syncs (its grant is gone, or it broke a rule after an upgrade);
    #: None while it is live (0005)
    Column("disabled_reason", String, nullable=True),
    #: when it syncs on its own (0006): {"interval_s": n} or {"cron": "…", "timezone": "…"}, None
    #: for none; a paused source keeps it; ``next_run_at`` is claimed by compare-and-set
    Column("schedule", JSON, nullable=True),
    Column("paused", Boolean, nullable=False, server_default=false()),
    Column("next_run_at", Float, nullable=True),
    Column("last_run_at", Float, nullable=True),
    Index("ix_sources_next_run_at", "next_run_at"),
)

ledger = Table(
    "ledger",
    metadata,
    Column("source_id", String, _fk("sources.id"), primary_key=True),
    Column("key", String, primary_key=True),
    Column("fingerprint", String, nullable=False),
    Column("file_id", String, nullable=False),
    Column("status", String, nullable=False),
    Column("last_seen", Float, nullable=False),
    Column("error_code", String, nullable=True),
    Column("error_message", String, nullable=True),
)

jobs = Table(
    "jobs",
    metadata,
    Column("id", String, primary_key=True),
    Column("tenant_id", String, nullable=False),
    Column("kind", String, nullable=False),
    Column("status", String, nullable=False),
    Column("dataset_id", String, nullable=True),
    Column("payload", JSON, nullable=False),
    Column("dedupe_key", String, nullable=False, index=True),
    Column("attempts", Integer, nullable=False),
    Column("max_attempts", Integer, nullable=False),
    Column("cancel_requested", Boolean, nullable=False),
    Column("run_after", Float, nullable=False),
    Column("lease_owner", String, nullable=True),
    Column("lease_expires", Float, nullable=True),
    Column("error_code", String, nullable=True),
    Column("error_message", String, nullable=True),
    Column("created_at", Float, nullable=False),
    Column("started_at", Float, nullable=True),
    Column("finished_at", Float, nullable=True),
    Column("updated_at", Float, nullable=False, index=True),
    Column("total", Integer, nullable=False),
    Column("done", Integer, nullable=False),
    Column("failed", Integer, nullable=False),
    Column("chunks", Integer, nullable=False),
    Index("ix_jobs_status_run_after", "status", "run_after"),
    Index("ix_jobs_tenant_id_updated_at", "tenant_id", "updated_at"),
)

job_items = Table(
    "job_items",
    metadata,
    Column("job_id", String, _fk("jobs.id"), primary_key=True),
    Column("key", String, primary_key=True),
    Column("stage", String, nullable=False),
    Column("file_id", String, nullable=True),
    Column("chunks", Integer, nullable=False),
    Column("error_code", String, nullable=True),
    Column("error_message", String, nullable=True),
)

job_clock = Table(
    "job_clock",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("value", Float, nullable=False),
)

# 0005: the tenant doors (issue 30) -----------------------------------------------------------

#: what a tenant's sources may reach: a folder root or an S3 bucket/prefix, granted by the service
#: key (docs/security.md, "Sources"); revoked grants stay listed with ``revoked_at``
source_grants = Table(
    "source_grants",
    metadata,
    Column("id", String, primary_key=True),
    Column("tenant_id", String, _fk("tenants.id"), nullable=False, index=True),
    Column("kind", String, nullable=False),  # "folder" | "s3"
    Column("target", String, nullable=False),  # folder: a resolved absolute path; s3: "bucket/prefix"
    Column("shared", Boolean, nullable=False),  # the service key allowed overlap with other tenants
    Column("created_at", Float, nullable=False),
    Column("created_by", String, nullable=False),
    Column("revoked_at", Float, nullable=True),
)

#: the web UI's server-side sessions: the cookie holds a random secret whose hash is ``secret_hash``
ui_sessions = Table(
    "ui_sessions",
    metadata,
    Column("id", String, primary_key=True),
    Column("secret_hash", String, nullable=False, unique=True),
    Column("key_id", String, nullable=True, index=True),  # api_keys.id; None: the service key
    Column("tenant_id", String, _fk("tenants.id"), nullable=True, index=True),
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
    Column("last_seen_at", Float, nullable=False),
    Column("revoked_at", Float, nullable=True),
    Column("user_agent", String, nullable=True),
)

#: a tenant's own limits, over the settings' defaults (rates, storage, concurrent jobs)
tenant_limits = Table(
    "tenant_limits",
    metadata,
    Column("tenant_id", String, _fk("tenants.id"), primary_key=True),
    Column("limits", JSON, nullable=False),
    Column("updated_at", Float, nullable=False),
)

#: the audit trail: append-only (the migration adds triggers that refuse UPDATE and DELETE);
#: no foreign keys, so a deleted tenant's or key's records stay
audit_log = Table(
    "audit_log",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("id", String, nullable=False, unique=True),
    Column("at", Float, nullable=False),
    Column("tenant_id", String, nullable=True),
    Column("actor", String, nullable=False),  # a key id, "service", or "anonymous"
    Column("actor_role", String, nullable=True),
    Column("action", String, nullable=False),
    Column("target_kind", String, nullable=True),
    Column("target_id", String, nullable=True),
    Column("outcome", String, nullable=False),  # "ok" | "denied" | "failed"
    Column("detail", JSON, nullable=False),
    Column("client", String, nullable=True),
    Index("ix_audit_log_tenant_id_at", "tenant_id", "at"),
    Index("ix_audit_log_at", "at"),
    Index("ix_audit_log_actor", "actor"),
    Index("ix_audit_log_action", "action"),
)

# 0008: the datasets every new tenant is created with (issue 34 §2) ----------------------------

#: one row (``id`` 1) set by the service key; no row: the settings' default (RAGD_TENANTS__DATASETS)
tenant_template = Table(
    "tenant_template",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("datasets", JSON, nullable=False),
    Column("updated_at", Float, nullable=False),
)

# 0009: datasets' evaluation sets (issue 31 §2) ----------------------------------------------------

#: a dataset's labelled queries: the query, the file ids and/or chunk ids that answer it
eval_queries = Table(
    "eval_queries",
    metadata,
    Column("id", String, primary_key=True),
    Column("dataset_id", String, _fk("datasets.id"), nullable=False),
    Column("query", String, nullable=False),
    Column("files", JSON, nullable=False),  # [file id, ...]
    Column("chunks", JSON, nullable=False),  # [chunk id, ...]
    Column("answer", String, nullable=True),
    Column("source", String, nullable=False),  # "api" | "import" | "sandbox" | "chat"
    Column("created_at", Float, nullable=False),
    Index("ix_eval_queries_dataset_id_created_at", "dataset_id", "created_at"),
)

#: a dataset moving to another model or chunking (0010); ``source``/``target``: VersionSpec JSON
migrations = Table(
    "migrations",
    metadata,
    Column("id", String, primary_key=True),
    Column("dataset_id", String, _fk("datasets.id"), nullable=False),
    Column("tenant_id", String, nullable=False),
    Column("state", String, nullable=False),
    Column("source", JSON, nullable=False),
    Column("target", JSON, nullable=False),
    Column("job_id", String, nullable=True),
    Column("auto_switch", Boolean, nullable=False),
    Column("max_regression", Float, nullable=False),
    Column("reports", JSON, nullable=False),
    Column("held", String, nullable=True),
    Column("failed_files", Integer, nullable=False),
    Column("error_code", String, nullable=True),
    Column("error_message", String, nullable=True),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    Column("switched_at", Float, nullable=True),
    Column("rolled_back_at", Float, nullable=True),
    Column("retain_until", Float, nullable=True),
    Column("removed_at", Float, nullable=True),
    Index("ix_migrations_dataset_id_created_at", "dataset_id", "created_at"),
)
