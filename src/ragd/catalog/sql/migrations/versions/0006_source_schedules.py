"""Scheduled source syncs (issue 32 §3): ``sources.schedule`` (an interval or a cron expression with
its time zone), ``paused``, ``next_run_at`` (claimed by compare-and-set, so one replica fires a
run) and ``last_run_at``.  Existing sources get no schedule and are not paused.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("sources") as batch:
        batch.add_column(sa.Column("schedule", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("paused", sa.Boolean(), nullable=False, server_default=sa.false()))
        batch.add_column(sa.Column("next_run_at", sa.Float(), nullable=True))
        batch.add_column(sa.Column("last_run_at", sa.Float(), nullable=True))
    op.create_index("ix_sources_next_run_at", "sources", ["next_run_at"])


def downgrade() -> None:
    op.drop_index("ix_sources_next_run_at", table_name="sources")
    with op.batch_alter_table("sources") as batch:
        for column in ("last_run_at", "next_run_at", "paused", "schedule"):
            batch.drop_column(column)
