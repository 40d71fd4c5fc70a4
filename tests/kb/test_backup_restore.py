"""Backup while an ingest runs, restore into a fresh data dir (issue 32 §1).

Real services (the local model, embedded Qdrant Edge, the SQLite catalog) and the real job worker:
a folder source of 50 files (the issue's) is being indexed when the first backup is taken.
Restored, every file is completely in or completely out and each file's catalog chunk count is
its number of points.
A second backup, taken once the ingest is done, restores to the same hits for 20 queries, the
same counts, tenants and keys.  A truncated or unfinished backup is refused with nothing written.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any, cast

import pytest
from typer.testing import CliRunner

from ragd.bootstrap import Services, open_services
from ragd.bootstrap.backups import backup_services, restore_into
from ragd.cli.app import app
from ragd.errors import BackupInvalid
from ragd.kb import backup as backup_module
from ragd.kb.datasets import create_dataset
from ragd.kb.files import Upload, upload_files
from ragd.kb.indexing import index_entry
from ragd.kb.search import search_datasets
from ragd.kb.sources import add_source
from ragd.kb.worker import Worker
from ragd.kb_types import FileStatus, JobStatus, Principal, SourceKind
from ragd.settings import EmbeddingSettings, Settings, WorkerSettings
from ragd.store.base import VectorStore
from ragd.types import PointFilter
from tests.kb.conftest import run_to_end

SERVICE = Principal(tenant_id=None, role="admin")
TOPICS = [
    "volcanoes", "glaciers", "beekeeping", "sourdough", "chess openings", "tidal energy", "violin making",
    "coral reefs", "railway signalling", "cheese caves", "comet tails", "desert lizards", "tax audits",
    "wind tunnels", "origami", "paper mills", "lighthouses", "quantum dots", "salt marshes", "typefaces",
]  # fmt: skip
QUERIES = [f"how do {t} work" for t in TOPICS]


def write_corpus(folder: Path, n: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        lines = [f"# Note {i} on {topic}", ""]
        lines += [f"Paragraph {j} of note {i} explains {topic} in detail, part {j}." for j in range(80)]
        (folder / f"note-{i:02d}.md").write_text("\n\n".join(lines))


def settings_for(data_dir: Path, model_cache: Path) -> Settings:
    return Settings(
        data_dir=data_dir,
        embedding=EmbeddingSettings(cache_dir=model_cache),
        worker=WorkerSettings(poll_s=0.05),
    )


async def hits_of(services: Services, principal: Principal) -> list[list[str]]:
    kb = services.knowledge()
    out = []
    for query in QUERIES:
        found = await search_datasets(kb, services.pipeline, principal, query, k=5)
        out.append([h.id for h in found.hits])
    return out


async def catalog_agrees_with_index(services: Services) -> tuple[int, int]:
    """Every file completely in (indexed, chunks == its points) or out (0 points); no stray points."""
    kb = services.knowledge()
    total = indexed = 0
    for ds in await kb.catalog.list_datasets(None):
        for entry in await kb.catalog.list_files(ds.id):
            n = await services.store.count(PointFilter(file_id=entry.id))
            assert n == entry.chunks, (entry.name, entry.status, n, entry.chunks)
            if entry.status is FileStatus.INDEXED:
                assert n > 0
                indexed += 1
            total += n
    assert await services.store.count(PointFilter()) == total
    return indexed, total


class SlowScroll:
    """The store, its pages read slowly: the index dump spans many of the ingest's writes."""

    def __init__(self, store: VectorStore) -> None:
        self._store = store

    async def scroll(self, *args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(0.01)
        return await self._store.scroll(*args, **kwargs)


@pytest.mark.slow
async def test_a_backup_during_an_ingest_restores_whole_files_and_a_quiet_one_the_same_hits(
    tmp_path: Path, model_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "docs"
    write_corpus(folder, 50)
    source = settings_for(tmp_path / "a", model_cache)
    async with open_services(source) as services:
        kb = services.knowledge()
        tenant = await kb.catalog.create_tenant("acme")
        key, secret = await kb.catalog.create_key(tenant.id, "admin", "ops")
        ds = await create_dataset(kb, SERVICE, name="notes", tenant_id=tenant.id)
        _, job = await add_source(
            kb, SERVICE, ds.id, SourceKind.FOLDER, {"path": str(folder)}, folder_roots=[], allow_private=False
        )

        async def indexed() -> int:
            return sum(e.status is FileStatus.INDEXED for e in await kb.catalog.list_files(ds.id))

        real_dump = backup_module._dump_index

        async def dump_once_more_are_indexed(store: VectorStore, path: Path) -> Any:
            # the catalog copy is taken; the index is read only after more files went in, and slowly
            seen = await indexed()
            async with asyncio.timeout(120):
                while await indexed() == seen:
                    await asyncio.sleep(0.01)
            return await real_dump(cast(VectorStore, SlowScroll(store)), path)

        monkeypatch.setattr(backup_module, "_dump_index", dump_once_more_are_indexed)
        monkeypatch.setattr(backup_module, "SCROLL_PAGE", 8)
        stop = asyncio.Event()
        worker = asyncio.create_task(Worker(kb, WorkerSettings(concurrency=2, poll_s=0.05)).run(stop))
        try:
            async with asyncio.timeout(120):
                while await indexed() < 3:
                    await asyncio.sleep(0.02)
            during = await backup_services(services, tmp_path / "during")
            running = await kb.catalog.get_job(job.id)
            assert running is not None
            assert not running.status.finished
            monkeypatch.undo()
            async with asyncio.timeout(300):
                while not (done := await kb.catalog.get_job(job.id)) or not done.status.finished:
                    await asyncio.sleep(0.05)
        finally:
            stop.set()
            await worker
        memo = tmp_path / "memo.md"
        memo.write_text("# Upload\n\nThe uploaded memo says the archive room opens at dawn.\n")
        (uploaded,), upload_job = await upload_files(
            kb, SERVICE, ds.id, [Upload(name="memo.md", path=memo, size=memo.stat().st_size)]
        )
        assert (await run_to_end(kb, upload_job)).status is JobStatus.SUCCEEDED
        kept = kb.upload_path(ds.id, uploaded.id).read_bytes()
        principal = (await kb.catalog.resolve_key(secret)) or SERVICE
        before = await hits_of(services, principal)
        assert sum(bool(h) for h in before) == len(QUERIES)
        stats_before = await kb.catalog.dataset_stats([ds.id])
        quiet = await backup_services(services, tmp_path / "quiet")
        assert quiet.points == stats_before[ds.id].chunks
        assert during.points < quiet.points

    await restore_into(settings_for(tmp_path / "r1", model_cache), tmp_path / "during")
    async with open_services(settings_for(tmp_path / "r1", model_cache)) as restored:
        indexed, points = await catalog_agrees_with_index(restored)
        assert 0 < indexed < 50
        assert points > 0

    await restore_into(settings_for(tmp_path / "r2", model_cache), tmp_path / "quiet")
    async with open_services(settings_for(tmp_path / "r2", model_cache)) as restored:
        assert await catalog_agrees_with_index(restored) == (51, quiet.points)
        rkb = restored.knowledge()
        assert [t.id for t in await rkb.catalog.list_tenants()] == [tenant.id]
        assert [k.id for k in await rkb.catalog.list_keys(tenant.id)] == [key.id]
        same_key = await rkb.catalog.resolve_key(secret)
        assert same_key is not None
        assert same_key.tenant_id == tenant.id
        assert await rkb.catalog.dataset_stats([ds.id]) == stats_before
        assert await hits_of(restored, same_key) == before
        assert rkb.upload_path(ds.id, uploaded.id).read_bytes() == kept  # a stored upload re-indexes
        entry = await rkb.catalog.get_file(uploaded.id)
        assert entry is not None
        assert (await index_entry(rkb, ds, entry, force=True)).chunks == entry.chunks


def make_backup(tmp_path: Path) -> Path:
    """A small valid backup of a fresh, empty data dir (no model work: the index is empty)."""
    cli = CliRunner()
    result = cli.invoke(app, ["backup", str(tmp_path / "bk"), "--data-dir", str(tmp_path / "src")])
    assert result.exit_code == 0, result.output
    return tmp_path / "bk"


@pytest.mark.slow
def test_a_truncated_or_unfinished_backup_is_refused_with_nothing_written(
    tmp_path: Path, model_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGD_EMBEDDING__CACHE_DIR", str(model_cache))
    backup = make_backup(tmp_path)
    info = json.loads((backup / "backup.json").read_text())
    assert {p["path"] for p in info["parts"]} >= {"catalog.db", "index.jsonl"}
    with sqlite3.connect(backup / "catalog.db") as db:  # a real catalog, at the newest migration
        assert db.execute("select version_num from alembic_version").fetchone()
    cli = CliRunner()

    catalog = backup / "catalog.db"
    whole = catalog.read_bytes()
    catalog.write_bytes(whole[: len(whole) // 2])
    target = tmp_path / "target"
    result = cli.invoke(app, ["restore", str(backup), "--data-dir", str(target)])
    assert result.exit_code == 2
    assert "BACKUP_INVALID" in result.output
    assert "catalog.db" in result.output
    assert not target.exists()

    catalog.write_bytes(whole)
    (backup / "backup.json").unlink()  # a backup cut short: it never wrote its manifest
    with pytest.raises(BackupInvalid, match="did not finish"):
        asyncio.run(restore_into(settings_for(target, model_cache), backup))
    assert not target.exists()
