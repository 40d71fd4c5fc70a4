"""User metadata on files (issue 34 §1): ``files.tags`` (a JSON list of strings) and ``files.fields``
(a JSON ``{name: value}`` object), and ``datasets.field_types`` (each field's type in the dataset's
files, so a field keeps one type).  Existing files get none; existing datasets declare none.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("files") as batch:
        batch.add_column(sa.Column("tags", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("fields", sa.JSON(), nullable=True))
    with op.batch_alter_table("datasets") as batch:
        batch.add_column(sa.Column("field_types", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("datasets") as batch:
        batch.drop_column("field_types")
    with op.batch_alter_table("files") as batch:
        batch.drop_column("fields")
        batch.drop_column("tags")
