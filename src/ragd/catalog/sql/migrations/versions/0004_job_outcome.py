"""A job that ran to the end with failed items ends ``partial`` (some items done) or ``failed``
(none done), no longer ``succeeded`` (docs/knowledge-bases.md, "Jobs"): the jobs an older
release ended are given the status their counts say.  No column changes.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.execute("UPDATE jobs SET status = 'partial' WHERE status = 'succeeded' AND failed > 0 AND done > 0")
    op.execute("UPDATE jobs SET status = 'failed' WHERE status = 'succeeded' AND failed > 0 AND done = 0")


def downgrade() -> None:
    # an older release knows no "partial"; its "failed" jobs with no error were "succeeded" then
    op.execute("UPDATE jobs SET status = 'succeeded' WHERE status = 'partial'")
    op.execute(
        "UPDATE jobs SET status = 'succeeded' "
        "WHERE status = 'failed' AND error_code IS NULL AND failed > 0 AND done = 0"
    )
