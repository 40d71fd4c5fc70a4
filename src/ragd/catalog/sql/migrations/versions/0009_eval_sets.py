"""Datasets' evaluation sets (issue 31 §2): ``eval_queries`` holds each dataset's labelled queries
(the query, the file ids and/or chunk ids that answer it, an optional answer text, where it came
from).  Deleting a dataset deletes its set.  Existing datasets get an empty set.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "eval_queries",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("dataset_id", sa.String(), nullable=False),
        sa.Column("query", sa.String(), nullable=False),
        sa.Column("files", sa.JSON(), nullable=False),
        sa.Column("chunks", sa.JSON(), nullable=False),
        sa.Column("answer", sa.String(), nullable=True),
        sa.Column("source", sa.String(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["dataset_id"],
            ["datasets.id"],
            name=op.f("fk_eval_queries_dataset_id_datasets"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_eval_queries")),
    )
    op.create_index(
        "ix_eval_queries_dataset_id_created_at", "eval_queries", ["dataset_id", "created_at"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_eval_queries_dataset_id_created_at", table_name="eval_queries")
    op.drop_table("eval_queries")
