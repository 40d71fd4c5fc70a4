"""The web UI's server-side sessions."""

from __future__ import annotations

from ragd.catalog.sql.engine import Database


class SqlUiSessions:
    _db: Database
