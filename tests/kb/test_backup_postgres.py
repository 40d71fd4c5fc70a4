"""Backup and restore of a PostgreSQL catalog (pg_dump / pg_restore) on the real PostgreSQL server
of the test session: the catalog URL's password is on no command line, in no backup.json, log or
error message; a non-empty target database, a backup of another catalog kind, and missing tools
are refused with nothing written.  (The whole round trip of a live service: test_backup_catalogs.)"""

from __future__ import annotations

import asyncio
import logging
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from ragd.bootstrap import open_services
from ragd.bootstrap.backups import backup_services, restore_into
from ragd.catalog.sql.snapshot import dump_postgres, postgres_tables
from ragd.errors import CatalogUnavailable, Conflict, PgToolFailed, PgToolMissing
from ragd.kb import backup_format as fmt
from ragd.settings import BackupSettings, CatalogSettings, EmbeddingSettings, Settings
from tests.support.postgres import PostgresServer


def with_password(url: str) -> tuple[str, str]:
    """``url`` with a password (the test cluster trusts loopback, so any will do), and that password."""
    parsed = make_url(url)
    if parsed.password:
        return url, str(parsed.password)
    secret = f"pw-{uuid.uuid4().hex}"
    return parsed.set(password=secret).render_as_string(hide_password=False), secret


@pytest.fixture
def database(postgres_server: PostgresServer) -> Iterator[tuple[str, str]]:
    """A fresh empty database's URL, with a password, and the password."""
    url = postgres_server.create_database()
    yield with_password(url)
    postgres_server.drop_database(url)


def pg_settings(data_dir: Path, url: str, model_cache: Path, pg_bin_dir: Path | None = None) -> Settings:
    return Settings(
        data_dir=data_dir,
        catalog=CatalogSettings(url=url),
        embedding=EmbeddingSettings(cache_dir=model_cache),
        backup=BackupSettings(pg_bin_dir=pg_bin_dir),
    )


@pytest.fixture
def commands(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every command line the snapshot module runs (what ``ps`` would show)."""
    seen: list[list[str]] = []
    real = subprocess.run

    def run(command: list[str], **kwargs: Any) -> Any:
        seen.append(list(command))
        return real(command, **kwargs)

    monkeypatch.setattr(subprocess, "run", run)  # the module snapshot runs its tools with
    return seen


@pytest.mark.slow
def test_the_password_is_on_no_command_line_backup_log_or_error_and_a_non_empty_target_is_refused(
    tmp_path: Path,
    model_cache: Path,
    database: tuple[str, str],
    postgres_server: PostgresServer,
    commands: list[list[str]],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, secret = database
    caplog.set_level(logging.DEBUG)
    source = pg_settings(tmp_path / "src", url, model_cache)

    async def back_up() -> None:
        async with open_services(source) as services:
            await services.knowledge().catalog.create_tenant("acme")
            with monkeypatch.context() as without_tools:  # no pg_dump: refused, nothing written
                without_tools.setenv("PATH", str(tmp_path / "no-tools"))
                with pytest.raises(PgToolMissing, match="pg_dump"):
                    await backup_services(services, tmp_path / "never")
            assert not (tmp_path / "never").exists()
            await backup_services(services, tmp_path / "bk")

    asyncio.run(back_up())
    info = fmt.verify_backup(tmp_path / "bk")
    assert info.catalog == "postgresql"
    assert (tmp_path / "bk" / fmt.CATALOG_PG).read_bytes().startswith(b"PGDMP")  # pg_dump's custom format
    assert not (tmp_path / "bk" / fmt.CATALOG).exists()
    assert [Path(c[0]).name for c in commands] == ["pg_dump"]

    # the source database is not empty: refused before anything is written
    target = pg_settings(tmp_path / "target", url, model_cache)
    with pytest.raises(Conflict, match="not empty") as refused:
        asyncio.run(restore_into(target, tmp_path / "bk"))
    assert not (tmp_path / "target").exists()
    assert [Path(c[0]).name for c in commands] == ["pg_dump"]  # no pg_restore ran

    # a database that is not there, and pg_dump failing: clear errors without the password
    missing = make_url(url).set(database=f"ragd_gone_{uuid.uuid4().hex[:8]}")
    gone = missing.render_as_string(hide_password=False)
    with pytest.raises(CatalogUnavailable) as unreachable:
        asyncio.run(restore_into(pg_settings(tmp_path / "t2", gone, model_cache), tmp_path / "bk"))
    with pytest.raises(PgToolFailed, match="does not exist") as failed:
        dump_postgres(gone, tmp_path / "never.pgdump")
    assert not (tmp_path / "t2").exists()

    assert secret in url
    for text in (
        (tmp_path / "bk" / fmt.MANIFEST).read_text(),
        caplog.text,
        str(refused.value),
        str(unreachable.value),
        str(failed.value),
        *(" ".join(c) for c in commands),
    ):
        assert secret not in text
    assert asyncio.run(postgres_tables(url))  # still the source's catalog, untouched


def fake_backup(root: Path, kind: str) -> Path:
    """A backup whose parts verify (empty index, a catalog part of ``kind``)."""
    root.mkdir()
    (root / fmt.CATALOG_PARTS[kind]).write_bytes(b"not restored")
    (root / fmt.INDEX).write_bytes(b"")
    parts = tuple(
        fmt.Part(path=name, bytes=(root / name).stat().st_size, sha256=fmt.sha256_of(root / name))
        for name in (fmt.CATALOG_PARTS[kind], fmt.INDEX)
    )
    info = fmt.BackupInfo(root, 0.0, "test", {}, 0, parts, catalog=kind)
    fmt.write_info(root, info)
    return root


def test_a_backup_restores_only_into_a_catalog_of_its_kind(
    tmp_path: Path, model_cache: Path, database: tuple[str, str]
) -> None:
    url, _ = database
    sqlite_backup = fake_backup(tmp_path / "sq", "sqlite")
    with pytest.raises(Conflict, match="holds a sqlite catalog"):
        asyncio.run(restore_into(pg_settings(tmp_path / "t1", url, model_cache), sqlite_backup))
    assert not (tmp_path / "t1").exists()
    assert asyncio.run(postgres_tables(url)) == []

    pg_backup = fake_backup(tmp_path / "pg", "postgresql")
    sqlite_target = Settings(data_dir=tmp_path / "t2", embedding=EmbeddingSettings(cache_dir=model_cache))
    with pytest.raises(Conflict, match="holds a postgresql catalog"):
        asyncio.run(restore_into(sqlite_target, pg_backup))
    assert not (tmp_path / "t2").exists()


def test_without_pg_dump_or_pg_restore_the_backup_and_restore_are_refused_before_writing(
    tmp_path: Path, model_cache: Path, database: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = database
    backup = fake_backup(tmp_path / "pg", "postgresql")
    tools = Path(shutil.which("pg_dump") or "/usr/bin/pg_dump").parent
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))
    with pytest.raises(PgToolMissing, match="pg_restore") as missing:
        asyncio.run(restore_into(pg_settings(tmp_path / "t", url, model_cache), backup))
    assert missing.value.code == "PG_TOOL_MISSING"
    assert missing.value.http_status == 503
    assert "postgresql-client" in str(missing.value)
    assert not (tmp_path / "t").exists()
    with pytest.raises(PgToolMissing, match="pg_dump"):
        dump_postgres(url, tmp_path / "x.pgdump")
    assert not (tmp_path / "x.pgdump").exists()
    dump_postgres(url, tmp_path / "y.pgdump", tools)  # RAGD_BACKUP__PG_BIN_DIR's folder, not PATH
    assert (tmp_path / "y.pgdump").read_bytes().startswith(b"PGDMP")
    monkeypatch.undo()  # the tools on PATH, but RAGD_BACKUP__PG_BIN_DIR names a folder without them
    empty = tmp_path / "pg-bin"
    empty.mkdir()
    with pytest.raises(PgToolMissing, match=f"not in {empty}"):
        asyncio.run(restore_into(pg_settings(tmp_path / "t", url, model_cache, pg_bin_dir=empty), backup))
    assert not (tmp_path / "t").exists()
