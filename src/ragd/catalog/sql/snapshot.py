"""A consistent copy of the catalog database while it is in use, and putting one back.

SQLite: the online backup API (``sqlite3.Connection.backup``), which copies pages under the
database's own locks, so writers (the server, its worker) go on and the copy is one committed state.
PostgreSQL: the database's own tools, run as subprocesses: ``pg_dump --format=custom`` (one
repeatable-read snapshot of the catalog's database) and ``pg_restore --no-owner --no-privileges``
into an empty database in one transaction.  The URL's password reaches them only as ``PGPASSWORD``
in their environment (never their command line, where ``ps`` shows it) and is blanked from any
message of theirs.  The tools are found in ``RAGD_BACKUP__PG_BIN_DIR`` or on ``PATH`` (Debian's
``/usr/bin/pg_dump`` wrapper picks the newest installed client); they must be of a version at least
the server's.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError

from ragd.catalog.sql.engine import create_engine
from ragd.errors import CatalogUnavailable, ConfigurationError, Conflict, PgToolFailed, PgToolMissing

SQLITE = "sqlite"
POSTGRESQL = "postgresql"
PG_INSTALL_HINT = (
    "install the PostgreSQL client tools (pg_dump, pg_restore) of a version at least the server's, "
    "e.g. `apt-get install postgresql-client` (docs/operations.md, Backup and restore)"
)
#: libpq's SSL modes; asyncpg's ``ssl=true`` means ``require``
_SSL_MODES = {"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}


def catalog_kind(url: str) -> str:
    """``sqlite`` (a catalog file) or ``postgresql``; CONFLICT (409) for anything else."""
    parsed = _parse(url)
    backend = parsed.get_backend_name()
    if backend == POSTGRESQL:
        return POSTGRESQL
    sqlite_path(url)
    return SQLITE


def _parse(url: str) -> URL:
    try:
        return make_url(url)
    except ArgumentError as exc:
        raise ConfigurationError("catalog.url is not a database URL") from exc


def sqlite_path(url: str) -> Path:
    """The file of a SQLite catalog URL; CONFLICT (409) for any other (a request to back up such a
    catalog is not a server error)."""
    parsed = _parse(url)
    if parsed.get_backend_name() != SQLITE or not parsed.database or parsed.database == ":memory:":
        raise Conflict(
            "ragd backs up and restores a SQLite catalog file or a PostgreSQL database, "
            f"not {parsed.get_backend_name()} {parsed.database or ''}".rstrip(),
            hint="set RAGD_CATALOG__URL to sqlite+aiosqlite:///file or postgresql+asyncpg://…",
        )
    return Path(parsed.database)


def copy_catalog(url: str, dest: Path) -> None:
    """Copy the live catalog at ``url`` into the new file ``dest`` (one committed state)."""
    source = sqlite_path(url)
    if not source.is_file():
        raise ConfigurationError(f"no catalog database at {source}")
    _sqlite_copy(source, dest)


def install_catalog(url: str, copy: Path) -> None:
    """Put a backed-up catalog file in place as the catalog of ``url`` (which must not exist yet)."""
    target = sqlite_path(url)
    if target.exists():
        raise ConfigurationError(
            f"a catalog database already exists at {target}", hint="restore into an empty data dir"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    _sqlite_copy(copy, target)


def _sqlite_copy(source: Path, dest: Path) -> None:
    """SQLite's online backup of ``source`` (opened read-only) into ``dest``: one committed state,
    even while another connection writes."""
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=30)
    try:
        out = sqlite3.connect(dest)
        try:
            src.backup(out)
        finally:
            out.close()
    finally:
        src.close()


def pg_tool(name: str, bin_dir: Path | None = None) -> str:
    """The path of ``pg_dump`` / ``pg_restore`` in ``bin_dir`` (``RAGD_BACKUP__PG_BIN_DIR``) or on
    PATH; PG_TOOL_MISSING (503) with the install hint."""
    found = shutil.which(name, path=str(bin_dir) if bin_dir is not None else None)
    if found is None:
        where = f"in {bin_dir}" if bin_dir is not None else "on PATH"
        raise PgToolMissing(f"{name} is not installed on this server (not {where})", hint=PG_INSTALL_HINT)
    return found


def dump_postgres(url: str, dest: Path, bin_dir: Path | None = None) -> None:
    """``pg_dump --format=custom`` of the catalog database of ``url`` into the new file ``dest``."""
    tool = pg_tool("pg_dump", bin_dir)
    _run_pg(url, [tool, "--format=custom", "--no-password", f"--file={dest}"])


def restore_postgres(url: str, dump: Path, bin_dir: Path | None = None) -> None:
    """``pg_restore`` a ``pg_dump --format=custom`` file into the (empty) database of ``url``, in
    one transaction: on any error nothing of it stays."""
    tool = pg_tool("pg_restore", bin_dir)
    database = _parse(url).database or ""
    _run_pg(
        url,
        [
            tool,
            "--no-owner",
            "--no-privileges",
            "--single-transaction",
            "--exit-on-error",
            "--no-password",
            f"--dbname={database}",
            str(dump),
        ],
    )


async def postgres_tables(url: str) -> list[str]:
    """The tables of the database of ``url`` (outside the system schemas), at most 5 names;
    CATALOG_UNAVAILABLE (503) when it cannot be reached."""
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            rows = await conn.execute(
                text(
                    "SELECT schemaname || '.' || tablename FROM pg_catalog.pg_tables "
                    "WHERE schemaname NOT IN ('pg_catalog', 'information_schema') "
                    "ORDER BY 1 LIMIT 5"
                )
            )
            return [str(r[0]) for r in rows]
    except (DBAPIError, OSError) as exc:
        password = _parse(url).password
        raise CatalogUnavailable(
            f"cannot reach the PostgreSQL catalog database: {_blank(str(exc), password)[:300]}",
            hint="check RAGD_CATALOG__URL and that the database exists",
        ) from None
    finally:
        await engine.dispose()


def _run_pg(url: str, command: list[str]) -> None:
    password = _parse(url).password
    try:
        done = subprocess.run(command, env=pg_environment(url), capture_output=True, text=True, check=False)
    except OSError as exc:
        raise PgToolFailed(f"{Path(command[0]).name} could not run: {exc}", hint=PG_INSTALL_HINT) from None
    if done.returncode != 0:
        detail = _blank((done.stderr or done.stdout).strip(), password)[:1000]
        raise PgToolFailed(
            f"{Path(command[0]).name} failed ({done.returncode}): {detail}",
            hint="its version must be at least the server's; check RAGD_CATALOG__URL",
        )


def pg_environment(url: str) -> dict[str, str]:
    """This process's environment with the libpq connection of ``url`` (``PGHOST``, ``PGPORT``,
    ``PGUSER``, ``PGPASSWORD``, ``PGDATABASE``, ``PGSSLMODE``), so no secret is on a command line."""
    parsed = _parse(url)
    env = dict(os.environ)
    query = {k: v if isinstance(v, str) else v[-1] for k, v in parsed.query.items()}
    values = {
        "PGHOST": parsed.host or query.get("host"),
        "PGPORT": str(parsed.port) if parsed.port else query.get("port"),
        "PGUSER": parsed.username,
        "PGPASSWORD": parsed.password,
        "PGDATABASE": parsed.database,
    }
    ssl = query.get("sslmode") or query.get("ssl")
    if ssl is not None:
        values["PGSSLMODE"] = "require" if ssl.lower() in ("true", "1") else ssl
        if values["PGSSLMODE"] not in _SSL_MODES:
            raise ConfigurationError(f"catalog.url has an SSL mode libpq does not know: {ssl!r}")
    env.update({k: v for k, v in values.items() if v})
    return env


def _blank(message: str, password: str | None) -> str:
    return message.replace(password, "***") if password else message
