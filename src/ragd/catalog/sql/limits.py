"""Per-tenant limits over the settings' defaults."""

from __future__ import annotations

from ragd.catalog.sql.engine import Database


class SqlLimits:
    _db: Database
