"""The initial catalog: tenants and keys, datasets, files, sources and ledger, jobs.

Revision ID: 0001
Revises:
Create Date: 2026-11-23
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None


def _pk(table: str, *columns: str) -> sa.PrimaryKeyConstraint:
    return sa.PrimaryKeyConstraint(*columns, name=f"pk_{table}")


def _fk(table: str, column: str, target: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column], [f"{target}.id"], name=f"fk_{table}_{column}_{target}", ondelete="CASCADE"
    )


def _text(name: str, nullable: bool = False) -> sa.Column[Any]:
    return sa.Column(name, sa.String(), nullable=nullable)


def _float(name: str, nullable: bool = False) -> sa.Column[Any]:
    return sa.Column(name, sa.Float(), nullable=nullable)


def _int(name: str, nullable: bool = False) -> sa.Column[Any]:
    return sa.Column(name, sa.Integer(), nullable=nullable)


def upgrade() -> None:
    _tenants()
    _datasets()
    _files_and_sources()
    _jobs()


def _tenants() -> None:
    op.create_table(
        "tenants",
        _text("id"),
        _text("name"),
        _float("created_at"),
        _pk("tenants", "id"),
        sa.UniqueConstraint("name", name="uq_tenants_name"),
    )
    op.create_table(
        "api_keys",
        _text("id"),
        _text("tenant_id"),
        _text("role"),
        _text("name"),
        _text("prefix"),
        _text("secret_hash"),
        _float("created_at"),
        _float("revoked_at", nullable=True),
        _pk("api_keys", "id"),
        _fk("api_keys", "tenant_id", "tenants"),
        sa.UniqueConstraint("secret_hash", name="uq_api_keys_secret_hash"),
    )
    op.create_index("ix_api_keys_tenant_id", "api_keys", ["tenant_id"])


def _datasets() -> None:
    op.create_table(
        "datasets",
        _text("id"),
        _text("tenant_id"),
        _text("name"),
        _text("collection_name"),
        _text("description"),
        _text("chunk_strategy", nullable=True),
        _int("chunk_size", nullable=True),
        _int("chunk_overlap", nullable=True),
        sa.Column("allowed_roles", sa.JSON(), nullable=False),
        _float("created_at"),
        _float("updated_at"),
        _pk("datasets", "id"),
        _fk("datasets", "tenant_id", "tenants"),
        sa.UniqueConstraint("collection_name", name="uq_datasets_collection_name"),
    )
    op.create_index("uq_datasets_tenant_id_name", "datasets", ["tenant_id", "name"], unique=True)


def _files_and_sources() -> None:
    op.create_table(
        "files",
        _text("id"),
        _text("dataset_id"),
        _text("name"),
        _text("status"),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        _int("chunks"),
        _int("size"),
        _text("content_hash", nullable=True),
        _text("source_id", nullable=True),
        _text("item_key", nullable=True),
        _text("error_code", nullable=True),
        _text("error_message", nullable=True),
        _float("created_at"),
        _float("updated_at"),
        _pk("files", "id"),
        _fk("files", "dataset_id", "datasets"),
    )
    op.create_index("ix_files_dataset_id_name", "files", ["dataset_id", "name"])
    op.create_index("ix_files_source_id_item_key", "files", ["source_id", "item_key"])
    op.create_table(
        "sources",
        _text("id"),
        _text("dataset_id"),
        _text("kind"),
        sa.Column("config", sa.JSON(), nullable=False),
        _float("created_at"),
        _float("last_synced_at", nullable=True),
        _text("last_error", nullable=True),
        _pk("sources", "id"),
        _fk("sources", "dataset_id", "datasets"),
    )
    op.create_index("ix_sources_dataset_id", "sources", ["dataset_id"])
    op.create_table(
        "ledger",
        _text("source_id"),
        _text("key"),
        _text("fingerprint"),
        _text("file_id"),
        _text("status"),
        _float("last_seen"),
        _text("error_code", nullable=True),
        _text("error_message", nullable=True),
        _pk("ledger", "source_id", "key"),
        _fk("ledger", "source_id", "sources"),
    )


def _jobs() -> None:
    op.create_table(
        "jobs",
        _text("id"),
        _text("tenant_id"),
        _text("kind"),
        _text("status"),
        _text("dataset_id", nullable=True),
        sa.Column("payload", sa.JSON(), nullable=False),
        _text("dedupe_key"),
        _int("attempts"),
        _int("max_attempts"),
        sa.Column("cancel_requested", sa.Boolean(), nullable=False),
        _float("run_after"),
        _text("lease_owner", nullable=True),
        _float("lease_expires", nullable=True),
        _text("error_code", nullable=True),
        _text("error_message", nullable=True),
        _float("created_at"),
        _float("started_at", nullable=True),
        _float("finished_at", nullable=True),
        _float("updated_at"),
        _int("total"),
        _int("done"),
        _int("failed"),
        _int("chunks"),
        _pk("jobs", "id"),
    )
    op.create_index("ix_jobs_dedupe_key", "jobs", ["dedupe_key"])
    op.create_index("ix_jobs_status_run_after", "jobs", ["status", "run_after"])
    op.create_index("ix_jobs_tenant_id_updated_at", "jobs", ["tenant_id", "updated_at"])
    op.create_index("ix_jobs_updated_at", "jobs", ["updated_at"])
    op.create_table(
        "job_items",
        _text("job_id"),
        _text("key"),
        _text("stage"),
        _text("file_id", nullable=True),
        _int("chunks"),
        _text("error_code", nullable=True),
        _text("error_message", nullable=True),
        _pk("job_items", "job_id", "key"),
        _fk("job_items", "job_id", "jobs"),
    )
    clock = op.create_table(
        "job_clock",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        _float("value"),
        _pk("job_clock", "id"),
    )
    op.bulk_insert(clock, [{"id": 1, "value": 0.0}])


def downgrade() -> None:
    dependents_first = ("job_clock", "job_items", "jobs", "ledger", "sources", "files", "datasets")
    for table in (*dependents_first, "api_keys", "tenants"):
        op.drop_table(table)
