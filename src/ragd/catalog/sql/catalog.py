"""The SQL catalog: every catalog Protocol on one engine, opened (and migrated) by URL."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlalchemy.exc import DBAPIError

from ragd.catalog.sql.audit import SqlAudit
from ragd.catalog.sql.datasets import SqlDatasets
from ragd.catalog.sql.engine import Database, create_engine, unavailable_error
from ragd.catalog.sql.evalsets import SqlEvalSets
from ragd.catalog.sql.files import SqlFiles
from ragd.catalog.sql.grants import SqlGrants
from ragd.catalog.sql.jobs import SqlJobs
from ragd.catalog.sql.leases import SqlLeases
from ragd.catalog.sql.limits import SqlLimits
from ragd.catalog.sql.migrate import upgrade
from ragd.catalog.sql.migrations_repo import SqlMigrations
from ragd.catalog.sql.schedules import SqlSchedules
from ragd.catalog.sql.sources import SqlSources
from ragd.catalog.sql.tenants import SqlTenants
from ragd.catalog.sql.ui_sessions import SqlUiSessions

if TYPE_CHECKING:
    from ragd.catalog.base import Catalog

logger = logging.getLogger(__name__)


class SqlCatalog(
    SqlTenants,
    SqlDatasets,
    SqlFiles,
    SqlSources,
    SqlSchedules,
    SqlJobs,
    SqlLeases,
    SqlGrants,
    SqlUiSessions,
    SqlLimits,
    SqlAudit,
    SqlEvalSets,
    SqlMigrations,
):
    """TenantDirectory, DatasetRepo, FileRepo, SourceRepo and JobQueue over one SQLAlchemy
    engine.  Build it with :func:`open_catalog`; close it with :meth:`aclose`."""

    def __init__(self, db: Database) -> None:
        self._db = db

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self._db.dialect

    async def aclose(self) -> None:
        """Close every pooled connection."""
        await self._db.aclose()


async def open_catalog(url: str, *, clock: Callable[[], float] = time.time) -> SqlCatalog:
    """Connect to ``url`` and migrate the schema to the newest revision.

    ``clock`` (epoch seconds) is for tests.  Raises CatalogUnavailable when the
    database cannot be reached or migrated, ConfigurationError for a bad URL.
    """
    engine = create_engine(url)
    try:
        await upgrade(engine)
    except (DBAPIError, OSError, TimeoutError) as exc:
        await engine.dispose()
        raise unavailable_error(exc) from exc
    except BaseException:
        await engine.dispose()
        raise
    logger.info("catalog open on %s", engine.dialect.name)
    return SqlCatalog(Database(engine, clock))


if TYPE_CHECKING:

    def _implements(c: SqlCatalog) -> Catalog:
        """Never called: the type checker proves here that SqlCatalog is every catalog port."""
        return c
