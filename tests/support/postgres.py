"""A PostgreSQL server for tests, and throwaway databases on it.

Where the server comes from, in order:

1. ``RAGD_TEST_POSTGRES_URL`` (e.g. ``postgresql://ragd:secret@127.0.0.1:5432/postgres``): a running
   server whose user may ``CREATE DATABASE``;
2. Debian's server binaries (``/usr/lib/postgresql/<version>/bin``): a private throwaway cluster for
   the test session (``initdb`` in a temporary folder, a random loopback port, its unix socket in
   that folder, fsync off), stopped with ``pg_ctl -m immediate stop`` and deleted at the end.  As
   root the binaries run as the ``postgres`` OS user (``runuser -u postgres --``);
3. neither: :func:`find_server` returns None and the postgres cases skip with :data:`UNAVAILABLE`.

Every database handed out has a random name and is dropped when its test is done.
"""

from __future__ import annotations

import asyncio
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import asyncpg
from sqlalchemy.engine import URL, make_url

ENV_URL = "RAGD_TEST_POSTGRES_URL"
UNAVAILABLE = "PostgreSQL not available: install Debian's postgresql or set RAGD_TEST_POSTGRES_URL"


class PostgresServer:
    """A server on which tests create and drop databases."""

    def __init__(self, admin_url: URL, cluster: PrivateCluster | None = None) -> None:
        self.admin_url = admin_url.set(drivername="postgresql+asyncpg")
        self._cluster = cluster

    def url(self, database: str) -> str:
        """The SQLAlchemy (asyncpg) URL of one database on this server."""
        return self.admin_url.set(database=database).render_as_string(hide_password=False)

    def create_database(self) -> str:
        """A fresh empty database; returns its SQLAlchemy URL."""
        name = f"ragd_test_{uuid.uuid4().hex[:12]}"
        self._admin(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def drop_database(self, url: str) -> None:
        name = make_url(url).database
        self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        if self._cluster is not None:
            self._cluster.stop()

    def _admin(self, sql: str) -> None:
        """Run one statement on the maintenance database, on a thread of its own so that its
        event loop never meets the test's."""
        with ThreadPoolExecutor(1, thread_name_prefix="pg-admin") as pool:
            pool.submit(asyncio.run, self._admin_async(sql)).result(timeout=60)

    async def _admin_async(self, sql: str) -> None:
        dsn = self.admin_url.set(drivername="postgresql").render_as_string(hide_password=False)
        conn = await asyncpg.connect(dsn, timeout=10)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()


class PrivateCluster:
    """A throwaway cluster run from the server binaries in ``bindir``."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="ragd-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self._as_postgres = os.geteuid() == 0
        if self._as_postgres:
            user = pwd.getpwnam("postgres")
            os.chown(self.root, user.pw_uid, user.pw_gid)

    def start(self) -> URL:
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
            " -c synchronous_commit=off -c full_page_writes=off -c max_connections=100"
        )
        log = str(self.root / "server.log")
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", log, "-w", "-t", "60", "start")
        return URL.create("postgresql+asyncpg", username="postgres", host="127.0.0.1", port=self.port)

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def _run(self, tool: str, *args: str) -> None:
        command = [str(self.bindir / tool), *args]
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed ({done.returncode}): {done.stderr.strip() or done.stdout}")


def find_server() -> PostgresServer | None:
    """A started server (see the module docstring), or None when there is none to use."""
    env_url = os.environ.get(ENV_URL)
    if env_url:
        return PostgresServer(make_url(env_url))
    bindir = _server_bindir()
    if bindir is None:
        return None
    if os.geteuid() == 0 and (shutil.which("runuser") is None or not _has_user("postgres")):
        return None
    cluster = PrivateCluster(bindir)
    try:
        admin_url = cluster.start()
    except BaseException:
        cluster.stop()
        raise
    return PostgresServer(admin_url, cluster)


def _server_bindir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version_key)
    return Path(found[-1]).parent if found else None


def _version_key(path: str) -> int:
    version = Path(path).parts[-3]
    return int(version) if version.isdigit() else 0


def _has_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
