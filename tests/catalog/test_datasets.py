"""DatasetRepo contract, on SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses

import pytest

from ragd.catalog.sql import SqlCatalog
from ragd.catalog.sql.tables import files, ledger, sources
from ragd.errors import Conflict, NotFound
from ragd.kb_types import (
    ChunkingSpec,
    Dataset,
    DatasetState,
    DatasetStats,
    FileEntry,
    FileStatus,
    ItemStatus,
    LedgerEntry,
    SourceKind,
    SourceSpec,
)
from ragd.types import ChunkStrategy
from tests.catalog.conftest import START, FakeClock, table_rows


def _dataset(tenant_id: str, name: str, **changes: object) -> Dataset:
    base = Dataset(
        id=f"{tenant_id}-{name}", tenant_id=tenant_id, name=name, collection_name=f"{tenant_id}-{name}"
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


async def test_a_dataset_round_trips(catalog: SqlCatalog) -> None:
    acme = await catalog.create_tenant("acme")
    spec = _dataset(
        acme.id,
        "docs",
        description="handbook",
        chunking=ChunkingSpec(strategy=ChunkStrategy.MARKDOWN, size=300, overlap=20),
        allowed_roles=("sales", "support"),
    )
    created = await catalog.create_dataset(spec)
    assert created == dataclasses.replace(spec, created_at=START, updated_at=START)
    assert await catalog.get_dataset(spec.id) == created
    assert await catalog.get_dataset("nope") is None


async def test_names_are_unique_per_tenant_only(catalog: SqlCatalog) -> None:
    acme = await catalog.create_tenant("acme")
    zeta = await catalog.create_tenant("zeta")
    await catalog.create_dataset(_dataset(acme.id, "docs"))
    await catalog.create_dataset(_dataset(zeta.id, "docs"))
    with pytest.raises(Conflict):
        await catalog.create_dataset(_dataset(acme.id, "docs", id="other", collection_name="other"))
    with pytest.raises(Conflict):  # collection names are unique across tenants
        await catalog.create_dataset(_dataset(acme.id, "wiki", collection_name=f"{zeta.id}-docs"))
    with pytest.raises(NotFound):
        await catalog.create_dataset(_dataset("no-tenant", "docs"))
    await catalog.create_dataset(_dataset(acme.id, "api"))
    assert [d.name for d in await catalog.list_datasets(acme.id)] == ["api", "docs"]
    assert [d.name for d in await catalog.list_datasets(zeta.id)] == ["docs"]
    assert len(await catalog.list_datasets(None)) == 3


async def test_update_replaces_the_editable_fields(catalog: SqlCatalog, clock: FakeClock) -> None:
    acme = await catalog.create_tenant("acme")
    docs = await catalog.create_dataset(_dataset(acme.id, "docs"))
    await catalog.create_dataset(_dataset(acme.id, "wiki"))
    clock.advance(10)
    changed = dataclasses.replace(
        docs,
        name="manuals",
        description="d",
        chunking=ChunkingSpec(size=100),
        allowed_roles=("x",),
        collection_name="ignored",
    )
    updated = await catalog.update_dataset(changed)
    assert updated == dataclasses.replace(
        changed, collection_name=docs.collection_name, updated_at=START + 10
    )
    assert await catalog.get_dataset(docs.id) == updated
    with pytest.raises(Conflict):
        await catalog.update_dataset(dataclasses.replace(updated, name="wiki"))
    with pytest.raises(NotFound):
        await catalog.update_dataset(dataclasses.replace(updated, id="nope"))


async def test_deleting_a_dataset_deletes_its_files_sources_and_ledger(
    catalog: SqlCatalog, catalog_url: str
) -> None:
    acme = await catalog.create_tenant("acme")
    docs = await catalog.create_dataset(_dataset(acme.id, "docs"))
    wiki = await catalog.create_dataset(_dataset(acme.id, "wiki"))
    for ds in (docs, wiki):
        await catalog.put_file(FileEntry(id=f"f-{ds.name}", dataset_id=ds.id, name="a.md"))
        source = await catalog.create_source(
            SourceSpec(id=f"s-{ds.name}", dataset_id=ds.id, kind=SourceKind.FOLDER, config={"path": "/x"})
        )
        entry = LedgerEntry(source.id, "a.md", "fp", f"f-{ds.name}", ItemStatus.INDEXED, START)
        await catalog.record_item(entry)

    await catalog.delete_dataset(docs.id)
    await catalog.delete_dataset("never-existed")

    assert await catalog.get_dataset(docs.id) is None
    assert [r["id"] for r in await table_rows(catalog_url, files)] == ["f-wiki"]
    assert [r["id"] for r in await table_rows(catalog_url, sources)] == ["s-wiki"]
    assert [r["source_id"] for r in await table_rows(catalog_url, ledger)] == ["s-wiki"]
    assert await catalog.get_file("f-docs") is None
    assert await catalog.ledger("s-docs") == {}


async def test_dataset_stats_count_files_chunks_and_statuses(catalog: SqlCatalog, clock: FakeClock) -> None:
    acme = await catalog.create_tenant("acme")
    docs = await catalog.create_dataset(_dataset(acme.id, "docs"))
    wiki = await catalog.create_dataset(_dataset(acme.id, "wiki"))
    empty = await catalog.create_dataset(_dataset(acme.id, "empty"))
    entries = [
        FileEntry(id="f1", dataset_id=docs.id, name="a", status=FileStatus.INDEXED, chunks=3),
        FileEntry(id="f2", dataset_id=docs.id, name="b", status=FileStatus.INDEXED, chunks=4),
        FileEntry(id="f3", dataset_id=docs.id, name="c", status=FileStatus.FAILED),
        FileEntry(id="f4", dataset_id=wiki.id, name="d", status=FileStatus.QUEUED),
    ]
    for entry in entries:
        clock.advance(1)
        await catalog.put_file(entry)
    stats = await catalog.dataset_stats([docs.id, wiki.id, empty.id])
    assert set(stats) == {docs.id, wiki.id}  # no files: absent
    d = stats[docs.id]
    assert (d.files, d.chunks, d.last_file_update) == (3, 7, START + 3)
    assert d.files_by_status == {FileStatus.INDEXED: 2, FileStatus.FAILED: 1}
    assert d.state is DatasetState.PARTIAL  # a failed file beside searchable ones
    assert stats[wiki.id].state is DatasetState.INDEXING
    assert DatasetStats().state is DatasetState.EMPTY
    assert d.last_update(docs) == START + 3
    assert stats[wiki.id].last_update(dataclasses.replace(wiki, updated_at=START + 99)) == START + 99
    assert set(await catalog.dataset_stats(None)) == {docs.id, wiki.id}
    assert await catalog.dataset_stats([]) == {}
    assert await catalog.dataset_stats([wiki.id]) == {wiki.id: stats[wiki.id]}
    await catalog.put_file(dataclasses.replace(entries[2], status=FileStatus.INDEXED, chunks=1))
    assert (await catalog.dataset_stats([docs.id]))[docs.id].state is DatasetState.READY
    # every file failed: nothing is searchable, an error; unless a failed file kept its old chunks
    for entry in entries[:3]:
        await catalog.put_file(dataclasses.replace(entry, status=FileStatus.FAILED, chunks=0))
    assert (await catalog.dataset_stats([docs.id]))[docs.id].state is DatasetState.ERROR
    await catalog.put_file(dataclasses.replace(entries[0], status=FileStatus.FAILED, chunks=3))
    assert (await catalog.dataset_stats([docs.id]))[docs.id].state is DatasetState.PARTIAL
