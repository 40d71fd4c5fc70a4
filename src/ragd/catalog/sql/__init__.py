"""The catalog in SQL: SQLAlchemy async, SQLite by default, PostgreSQL by URL, Alembic migrations.

Open it with ``await open_catalog(settings.catalog_url)`` (which migrates the
schema to head) and close it with ``await catalog.aclose()``.
"""

from ragd.catalog.sql.catalog import SqlCatalog, open_catalog

__all__ = ["SqlCatalog", "open_catalog"]
