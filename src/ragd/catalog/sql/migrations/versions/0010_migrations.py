"""Dataset migrations (issue 31 §1): ``migrations`` holds each move of a dataset to another model or
chunking (its source and target versions, state, evaluation reports, retention), and ``datasets``
gets the version its searches read (``generation``, "" for the untagged one every existing dataset
has) and the versions no read sees (``hidden``).  Deleting a dataset deletes its migrations.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("datasets") as batch:
        batch.add_column(sa.Column("generation", sa.String(), server_default="", nullable=False))
        batch.add_column(sa.Column("hidden", sa.JSON(), nullable=True))
    op.create_table(
        "migrations",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("dataset_id", sa.String(), nullable=False),
        sa.Column("tenant_id", sa.String(), nullable=False),
        sa.Column("state", sa.String(), nullable=False),
        sa.Column("source", sa.JSON(), nullable=False),
        sa.Column("target", sa.JSON(), nullable=False),
        sa.Column("job_id", sa.String(), nullable=True),
        sa.Column("auto_switch", sa.Boolean(), nullable=False),
        sa.Column("max_regression", sa.Float(), nullable=False),
        sa.Column("reports", sa.JSON(), nullable=False),
        sa.Column("held", sa.String(), nullable=True),
        sa.Column("failed_files", sa.Integer(), nullable=False),
        sa.Column("error_code", sa.String(), nullable=True),
        sa.Column("error_message", sa.String(), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.Column("switched_at", sa.Float(), nullable=True),
        sa.Column("rolled_back_at", sa.Float(), nullable=True),
        sa.Column("retain_until", sa.Float(), nullable=True),
        sa.Column("removed_at", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["dataset_id"],
            ["datasets.id"],
            name=op.f("fk_migrations_dataset_id_datasets"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_migrations")),
    )
    op.create_index(
        "ix_migrations_dataset_id_created_at", "migrations", ["dataset_id", "created_at"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_migrations_dataset_id_created_at", table_name="migrations")
    op.drop_table("migrations")
    with op.batch_alter_table("datasets") as batch:
        batch.drop_column("hidden")
        batch.drop_column("generation")
