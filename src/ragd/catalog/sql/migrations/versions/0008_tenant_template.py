"""Standard datasets per tenant, per-file chunking, source labels (issue 34 §2, Leadmetrics rows).

* ``tenant_template``: one row (``id`` 1) holding the datasets every new tenant is created with, as
  set by the service key (``PUT /api/v1/tenants/template``); no row: the settings' default
  (``RAGD_TENANTS__DATASETS``).
* ``files.chunk_strategy`` / ``chunk_size`` / ``chunk_overlap``: a file's own chunking, given at
  upload, over its dataset's (None: the dataset's); kept on re-index.
* ``files.source_label``: a user-given label for where the file came from (None: none).

Existing files get no override and no label; existing tenants are not changed.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | None = None
depends_on: str | None = None

_FILE_COLUMNS = ("chunk_strategy", "chunk_size", "chunk_overlap", "source_label")


def upgrade() -> None:
    op.create_table(
        "tenant_template",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("datasets", sa.JSON(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tenant_template")),
    )
    with op.batch_alter_table("files") as batch:
        batch.add_column(sa.Column("chunk_strategy", sa.String(), nullable=True))
        batch.add_column(sa.Column("chunk_size", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("chunk_overlap", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("source_label", sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("files") as batch:
        for column in reversed(_FILE_COLUMNS):
            batch.drop_column(column)
    op.drop_table("tenant_template")
