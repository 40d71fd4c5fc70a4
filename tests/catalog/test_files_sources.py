"""FileRepo and SourceRepo contracts, on SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses

import pytest

from ragd.catalog.sql import SqlCatalog
from ragd.errors import NotFound
from ragd.kb_types import FileEntry, FileStatus, ItemStatus, LedgerEntry, SourceKind, SourceSpec
from tests.catalog.conftest import START, FakeClock, make_dataset


async def test_files_put_get_list_delete(catalog: SqlCatalog, clock: FakeClock) -> None:
    docs = await make_dataset(catalog)
    other = await make_dataset(catalog, "zeta")
    for name in ("c.md", "a.md", "b.md"):
        await catalog.put_file(FileEntry(id=f"id-{name}", dataset_id=docs.id, name=name))
    await catalog.put_file(FileEntry(id="elsewhere", dataset_id=other.id, name="a.md"))

    listed = await catalog.list_files(docs.id)
    assert [f.name for f in listed] == ["a.md", "b.md", "c.md"]
    assert [f.name for f in await catalog.list_files(docs.id, limit=1, offset=1)] == ["b.md"]
    assert listed[0] == FileEntry(
        id="id-a.md", dataset_id=docs.id, name="a.md", created_at=START, updated_at=START
    )

    clock.advance(5)
    replaced = FileEntry(
        id="id-a.md",
        dataset_id=docs.id,
        name="a.md",
        status=FileStatus.FAILED,
        enabled=False,
        chunks=7,
        size=1234,
        content_hash="h",
        source_id="s1",
        item_key="docs/a.md",
        error_code="EMPTY_DOCUMENT",
        error_message="no text",
    )
    stored = await catalog.put_file(replaced)
    assert stored == dataclasses.replace(replaced, created_at=START, updated_at=START + 5)
    assert await catalog.get_file("id-a.md") == stored

    await catalog.delete_file("id-a.md")
    await catalog.delete_file("id-a.md")
    assert await catalog.get_file("id-a.md") is None
    assert [f.name for f in await catalog.list_files(docs.id)] == ["b.md", "c.md"]
    with pytest.raises(NotFound):
        await catalog.put_file(FileEntry(id="x", dataset_id="no-such-dataset", name="x"))


async def test_sources_and_their_ledger(catalog: SqlCatalog) -> None:
    docs = await make_dataset(catalog)
    other = await make_dataset(catalog, "zeta")
    web = SourceSpec(
        id="web", dataset_id=docs.id, kind=SourceKind.WEB, config={"url": "https://x.test", "depth": 2}
    )
    created = await catalog.create_source(web)
    assert created == dataclasses.replace(web, created_at=START)
    await catalog.create_source(SourceSpec(id="s3", dataset_id=other.id, kind=SourceKind.S3, config={}))
    assert await catalog.get_source("web") == created
    assert [s.id for s in await catalog.list_sources(docs.id)] == ["web"]
    assert {s.id for s in await catalog.list_sources()} == {"web", "s3"}
    with pytest.raises(NotFound):
        await catalog.create_source(dataclasses.replace(web, id="x", dataset_id="nope"))

    await catalog.mark_synced("web", START + 9, "UPSTREAM_FAILED: 503")
    synced = await catalog.get_source("web")
    assert synced is not None
    assert (synced.last_synced_at, synced.last_error) == (START + 9, "UPSTREAM_FAILED: 503")

    page = LedgerEntry("web", "https://x.test/a", "etag-1", "f1", ItemStatus.INDEXED, START)
    broken = LedgerEntry(
        "web", "https://x.test/b", "", "f2", ItemStatus.FAILED, START, "EMPTY_DOCUMENT", "empty"
    )
    await catalog.record_item(page)
    await catalog.record_item(broken)
    assert await catalog.ledger("web") == {page.key: page, broken.key: broken}

    newer = dataclasses.replace(page, fingerprint="etag-2", last_seen=START + 60)
    await catalog.record_item(newer)
    await catalog.forget_item("web", broken.key)
    await catalog.forget_item("web", "never-recorded")
    assert await catalog.ledger("web") == {page.key: newer}
    with pytest.raises(NotFound):
        await catalog.record_item(dataclasses.replace(page, source_id="nope"))

    await catalog.delete_source("web")
    assert await catalog.get_source("web") is None
    assert await catalog.ledger("web") == {}
    assert [s.id for s in await catalog.list_sources()] == ["s3"]
