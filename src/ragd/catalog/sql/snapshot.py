"""A consistent copy of the catalog database while it is in use, and putting one back.

SQLite: the online backup API (``sqlite3.Connection.backup``), which copies pages under the
database's own locks, so writers (the server, its worker) go on and the copy is one committed state.
PostgreSQL: not done here; ``pg_dump`` / ``pg_restore`` are the database's own tools
(docs/operations.md, "Backup and restore"), and both verbs refuse with that hint.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from ragd.errors import ConfigurationError, Conflict

PG_HINT = (
    "back a PostgreSQL catalog up with `pg_dump -Fc` and restore it with `pg_restore` "
    "(docs/operations.md, Backup and restore)"
)


def sqlite_path(url: str) -> Path:
    """The file of a SQLite catalog URL; CONFLICT (409) for any other database, with the hint of its
    own tools (a request to back up such a server is not a server error)."""
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ConfigurationError("catalog.url is not a database URL") from exc
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        raise Conflict(
            f"ragd backs up and restores a SQLite catalog file only, not {parsed.get_backend_name()}",
            hint=PG_HINT,
        )
    return Path(parsed.database)


def copy_catalog(url: str, dest: Path) -> None:
    """Copy the live catalog at ``url`` into the new file ``dest`` (one committed state)."""
    source = sqlite_path(url)
    if not source.is_file():
        raise ConfigurationError(f"no catalog database at {source}")
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=30)
    try:
        out = sqlite3.connect(dest)
        try:
            src.backup(out)
        finally:
            out.close()
    finally:
        src.close()


def install_catalog(url: str, copy: Path) -> None:
    """Put a backed-up catalog file in place as the catalog of ``url`` (which must not exist yet)."""
    target = sqlite_path(url)
    if target.exists():
        raise ConfigurationError(
            f"a catalog database already exists at {target}", hint="restore into an empty data dir"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    src = sqlite3.connect(f"file:{copy}?mode=ro", uri=True)
    try:
        out = sqlite3.connect(target)
        try:
            src.backup(out)
        finally:
            out.close()
    finally:
        src.close()
