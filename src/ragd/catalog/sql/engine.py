"""The async engine, its SQLite set-up, and transactions that speak ragd's errors.

SQLite: foreign keys on, WAL journal (readers never wait for the writer), a busy
timeout, and SQLAlchemy (not the driver) emitting ``BEGIN``: write transactions
start with ``BEGIN IMMEDIATE`` so they take the database's one write lock up
front and never fail to upgrade a read lock half-way; read transactions use a
plain deferred ``BEGIN``.  PostgreSQL: a pre-pinged pool so a restarted server
costs one failed request at most.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, InvalidRequestError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from ragd.errors import CatalogUnavailable, ConfigurationError, Conflict, NotFound, RagError

logger = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 30_000
_READ_ONLY = "ragd_read_only"


def create_engine(url: str) -> AsyncEngine:
    """An async engine for ``url`` (``sqlite+aiosqlite://…`` or ``postgresql+asyncpg://…``)."""
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ConfigurationError("catalog.url is not a database URL") from exc
    unsupported = ConfigurationError(
        f"catalog.url names an unsupported database or driver {parsed.drivername!r}",
        hint="use sqlite+aiosqlite:///path or postgresql+asyncpg://user:pass@host/db",
    )
    if parsed.get_backend_name() not in ("sqlite", "postgresql"):
        raise unsupported
    try:
        if parsed.get_backend_name() == "sqlite":
            engine = create_async_engine(parsed)
            _configure_sqlite(engine)
            return engine
        return create_async_engine(parsed, pool_pre_ping=True)
    except (ArgumentError, InvalidRequestError, ImportError) as exc:  # no such driver, or not async
        raise unsupported from exc


def _configure_sqlite(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # SQLAlchemy emits BEGIN itself, below
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Connection) -> None:
        read_only = conn.get_execution_options().get(_READ_ONLY, False)
        conn.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")


class Database:
    """One engine and the two ways in: :meth:`write` and :meth:`read` transactions."""

    def __init__(self, engine: AsyncEngine, clock: Callable[[], float]) -> None:
        self.engine = engine
        self.now = clock
        # SQLite has one write lock per database: writers of this process queue here rather than
        # on the file lock (whose busy handler is skipped in some lock upgrades -> "locked")
        self._writing = asyncio.Lock() if engine.dialect.name == "sqlite" else None

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @asynccontextmanager
    async def write(self, *, conflict: str = "", missing: str = "") -> AsyncIterator[AsyncConnection]:
        """A write transaction, committed on success.  A unique-constraint violation becomes
        Conflict(``conflict``), a foreign-key violation NotFound(``missing``)."""
        try:
            async with self._write_turn(), self.engine.begin() as conn:
                yield conn
        except IntegrityError as exc:
            raise _integrity_error(exc, conflict, missing) from exc
        except (DBAPIError, OSError, TimeoutError) as exc:
            raise _unavailable(exc) from exc

    @asynccontextmanager
    async def _write_turn(self) -> AsyncIterator[None]:
        if self._writing is None:
            yield
            return
        async with self._writing:
            yield

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        """A read-only transaction (rolled back at the end)."""
        try:
            async with self.engine.connect() as conn:
                await conn.execution_options(**{_READ_ONLY: True})
                async with conn.begin():
                    yield conn
        except (DBAPIError, OSError, TimeoutError) as exc:
            raise _unavailable(exc) from exc

    async def aclose(self) -> None:
        await self.engine.dispose()


def _integrity_error(exc: IntegrityError, conflict: str, missing: str) -> Exception:
    text = str(exc.orig).lower()
    if "foreign key" in text and missing:
        return NotFound(missing)
    if ("unique" in text or "duplicate key" in text) and conflict:
        return Conflict(conflict)
    logger.error("catalog write rejected: %s", type(exc.orig).__name__)
    return RagError("the catalog database rejected a write", hint=type(exc.orig).__name__)


def unavailable_error(exc: BaseException) -> CatalogUnavailable:
    """The error for a database that cannot be reached, queried or migrated."""
    return _unavailable(exc)


def _unavailable(exc: BaseException) -> CatalogUnavailable:
    kind = type(getattr(exc, "orig", None) or exc).__name__
    logger.warning("catalog database error: %s", kind)
    return CatalogUnavailable(
        "the catalog database cannot be reached or failed", hint=f"{kind}; see the server log"
    )
