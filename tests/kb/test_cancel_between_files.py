"""Cancelling a running job takes effect between files: the file in flight finishes whole, no new
file starts, the job ends ``cancelled`` and a sync stopped early removes nothing it did not see.
A source removed while it syncs leaves nothing behind: not the file its sync was indexing.

Real services and the real job worker; the cancel is requested while the third file is being
indexed (through the catalog, as ``POST /api/v1/jobs/{id}/cancel`` does).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from ragd.bootstrap import open_services
from ragd.kb import runs
from ragd.kb import sources as kb_sources
from ragd.kb.datasets import create_dataset
from ragd.kb.files import list_files
from ragd.kb.sources import add_source, list_sources, remove_source, sync_source
from ragd.kb_types import JobStatus, Principal, SourceKind
from ragd.settings import EmbeddingSettings, Settings
from ragd.types import PointFilter
from tests.kb.conftest import run_to_end

SERVICE = Principal(tenant_id=None, role="admin")


def note(folder: Path, name: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(f"# {name}\n\nThe {name} memo explains the travel policy.\n")


async def test_cancel_stops_between_files_and_keeps_what_the_scan_did_not_see(
    tmp_path: Path, model_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "docs"
    note(folder, "a-old.md")
    settings = Settings(data_dir=tmp_path / "data", embedding=EmbeddingSettings(cache_dir=model_cache))
    async with open_services(settings) as services:
        kb = services.knowledge()
        tenant = await kb.catalog.create_tenant("t")
        ds = await create_dataset(kb, SERVICE, name="folder", tenant_id=tenant.id)
        spec, job = await add_source(
            kb, SERVICE, ds.id, SourceKind.FOLDER, {"path": str(folder)}, folder_roots=[], allow_private=False
        )
        assert (await run_to_end(kb, job)).status is JobStatus.SUCCEEDED

        # a-old.md disappears and 12 files arrive; the cancel comes while the third is indexed
        (folder / "a-old.md").unlink()
        for i in range(12):
            note(folder, f"n{i:02d}.md")
        monkeypatch.setattr(runs, "ITEM_CONCURRENCY", 1)
        real_index = runs.index_content
        started: list[str] = []
        job = await sync_source(kb, SERVICE, ds.id, spec.id)

        async def index_and_cancel_third(ctx: Any, dataset: Any, entry: Any, content: Any) -> Any:
            started.append(entry.name)
            if len(started) == 3:
                await kb.catalog.request_cancel(job.id)
            return await real_index(ctx, dataset, entry, content)

        monkeypatch.setattr(runs, "index_content", index_and_cancel_third)
        done = await run_to_end(kb, job)

        assert done.status is JobStatus.CANCELLED
        assert done.error_code == "CANCELLED"
        assert len(started) == 3, f"files started after the cancel: {started[3:]}"
        files = {f.name: f for f in await list_files(kb, SERVICE, ds.id)}
        indexed = sorted(n for n, f in files.items() if f.status.value == "indexed")
        # the third file finished whole; the vanished a-old.md stays: the scan never reached its end
        assert indexed == sorted(["a-old.md", *started])
        assert all(f.status.value in ("indexed", "failed") for f in files.values())
        for name in started:
            chunks = await services.store.count(
                PointFilter(collection_names=(ds.collection_name,), file_id=files[name].id)
            )
            assert chunks == files[name].chunks > 0, name
        items = {i.key: (i.stage.value, i.error_code) for i in await kb.catalog.items(done.id)}
        assert not [k for k, (stage, _) in items.items() if stage in ("queued", "fetching", "indexing")]


@pytest.mark.parametrize("waits_s", [10.0, 0.0], ids=["removal-waits", "sync-ends-later"])
async def test_a_source_removed_mid_sync_leaves_no_file_behind(
    tmp_path: Path, model_cache: Path, monkeypatch: pytest.MonkeyPatch, waits_s: float
) -> None:
    """The removal waits for the sync to end (up to REMOVAL_WAITS_S); a sync that outlasts the wait
    removes the file it wrote after the source went when it ends (0 s: it always outlasts it)."""
    monkeypatch.setattr(kb_sources, "REMOVAL_WAITS_S", waits_s)
    folder = tmp_path / "docs"
    for name in ("a.md", "b.md", "c.md"):
        note(folder, name)
    settings = Settings(data_dir=tmp_path / "data", embedding=EmbeddingSettings(cache_dir=model_cache))
    async with open_services(settings) as services:
        kb = services.knowledge()
        tenant = await kb.catalog.create_tenant("t")
        ds = await create_dataset(kb, SERVICE, name="folder", tenant_id=tenant.id)
        monkeypatch.setattr(runs, "ITEM_CONCURRENCY", 1)
        real_index = runs.index_content
        started: list[str] = []
        removal: list[asyncio.Task[int]] = []

        # DELETE .../sources/{id} comes after b.md's record is written, before its chunks: the
        # removal's first sweep and the source's record are gone before b.md is indexed
        async def remove_source_at_second(ctx: Any, dataset: Any, entry: Any, content: Any) -> Any:
            started.append(entry.name)
            if len(started) == 2:
                removal.append(asyncio.create_task(remove_source(kb, SERVICE, ds.id, entry.source_id)))
                while await kb.catalog.get_source(entry.source_id) is not None:
                    await asyncio.sleep(0.01)
            return await real_index(ctx, dataset, entry, content)

        monkeypatch.setattr(runs, "index_content", remove_source_at_second)
        spec, job = await add_source(
            kb, SERVICE, ds.id, SourceKind.FOLDER, {"path": str(folder)}, folder_roots=[], allow_private=False
        )
        done = await run_to_end(kb, job)
        removed = await removal[0]  # it waited for the sync to end

        assert started == ["a.md", "b.md"], "no file starts once the source is being removed"
        assert removed == 2  # a.md indexed, b.md recorded; b.md written again is the sync's to remove
        assert done.status is JobStatus.CANCELLED, done
        assert await list_files(kb, SERVICE, ds.id) == []
        assert await services.store.count(PointFilter(collection_names=(ds.collection_name,))) == 0
        assert await list_sources(kb, SERVICE, ds.id) == []
        assert await kb.catalog.ledger(spec.id) == {}
