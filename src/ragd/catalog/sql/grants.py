"""Source grants: what folder roots and S3 bucket/prefixes a tenant's sources may reach."""

from __future__ import annotations

from ragd.catalog.sql.engine import Database


class SqlGrants:
    _db: Database
