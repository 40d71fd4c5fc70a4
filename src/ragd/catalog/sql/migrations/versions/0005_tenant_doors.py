"""The tenant doors (issue 30, docs/security.md): source grants, server-side UI sessions, per-tenant
limits and the append-only audit trail; ``sources.disabled_reason`` (a source outside its tenant's
grants stops syncing, with the reason).  ``audit_log`` refuses UPDATE and DELETE by trigger on
both engines, so no code path (and no API) can change or remove a record.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-28
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None

APPEND_ONLY = "the audit trail is append-only"


def _text(name: str, nullable: bool = False) -> sa.Column[Any]:
    return sa.Column(name, sa.String(), nullable=nullable)


def _float(name: str, nullable: bool = False) -> sa.Column[Any]:
    return sa.Column(name, sa.Float(), nullable=nullable)


def _tenant_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["tenant_id"], ["tenants.id"], name=f"fk_{table}_tenant_id_tenants", ondelete="CASCADE"
    )


def upgrade() -> None:
    with op.batch_alter_table("sources") as batch:
        batch.add_column(sa.Column("disabled_reason", sa.String(), nullable=True))
    op.create_table(
        "source_grants",
        _text("id"),
        _text("tenant_id"),
        _text("kind"),
        _text("target"),
        sa.Column("shared", sa.Boolean(), nullable=False),
        _float("created_at"),
        _text("created_by"),
        _float("revoked_at", nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_source_grants"),
        _tenant_fk("source_grants"),
    )
    op.create_index("ix_source_grants_tenant_id", "source_grants", ["tenant_id"])
    op.create_table(
        "ui_sessions",
        _text("id"),
        _text("secret_hash"),
        _text("key_id", nullable=True),
        _text("tenant_id", nullable=True),
        _float("created_at"),
        _float("expires_at"),
        _float("last_seen_at"),
        _float("revoked_at", nullable=True),
        _text("user_agent", nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_ui_sessions"),
        _tenant_fk("ui_sessions"),
        sa.UniqueConstraint("secret_hash", name="uq_ui_sessions_secret_hash"),
    )
    op.create_index("ix_ui_sessions_key_id", "ui_sessions", ["key_id"])
    op.create_index("ix_ui_sessions_tenant_id", "ui_sessions", ["tenant_id"])
    op.create_table(
        "tenant_limits",
        _text("tenant_id"),
        sa.Column("limits", sa.JSON(), nullable=False),
        _float("updated_at"),
        sa.PrimaryKeyConstraint("tenant_id", name="pk_tenant_limits"),
        _tenant_fk("tenant_limits"),
    )
    op.create_table(
        "audit_log",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        _text("id"),
        _float("at"),
        _text("tenant_id", nullable=True),
        _text("actor"),
        _text("actor_role", nullable=True),
        _text("action"),
        _text("target_kind", nullable=True),
        _text("target_id", nullable=True),
        _text("outcome"),
        sa.Column("detail", sa.JSON(), nullable=False),
        _text("client", nullable=True),
        sa.PrimaryKeyConstraint("seq", name="pk_audit_log"),
        sa.UniqueConstraint("id", name="uq_audit_log_id"),
    )
    op.create_index("ix_audit_log_tenant_id_at", "audit_log", ["tenant_id", "at"])
    op.create_index("ix_audit_log_at", "audit_log", ["at"])
    op.create_index("ix_audit_log_actor", "audit_log", ["actor"])
    op.create_index("ix_audit_log_action", "audit_log", ["action"])
    _append_only()


def _append_only() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "CREATE FUNCTION ragd_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS "
            f"$$ BEGIN RAISE EXCEPTION '{APPEND_ONLY}'; END $$"
        )
        op.execute(
            "CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log "
            "FOR EACH ROW EXECUTE FUNCTION ragd_audit_append_only()"
        )
        return
    for event in ("UPDATE", "DELETE"):
        op.execute(
            f"CREATE TRIGGER audit_log_no_{event.lower()} BEFORE {event} ON audit_log "
            f"BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}'); END"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS audit_log_append_only ON audit_log")
        op.execute("DROP FUNCTION IF EXISTS ragd_audit_append_only()")
    for table in ("audit_log", "tenant_limits", "ui_sessions", "source_grants"):
        op.drop_table(table)
    with op.batch_alter_table("sources") as batch:
        batch.drop_column("disabled_reason")
