"""A file's user metadata in the catalog (migration 0007), on SQLite and PostgreSQL: stored apart
from ``put_file`` (a stale record written back never undoes it), one type per field per dataset."""

from __future__ import annotations

import dataclasses

import pytest

from ragd.catalog.sql import SqlCatalog
from ragd.errors import InvalidMetadata, NotFound
from ragd.kb_types import FieldType, FileEntry, FileMetadata, FileStatus
from tests.catalog.conftest import make_dataset

S, N, D, B = FieldType.STRING, FieldType.NUMBER, FieldType.DATE, FieldType.BOOLEAN


async def test_metadata_is_stored_and_put_file_never_overwrites_it(catalog: SqlCatalog) -> None:
    docs = await make_dataset(catalog)
    entry = await catalog.put_file(FileEntry(id="f1", dataset_id=docs.id, name="a.md"))
    assert entry.metadata == FileMetadata()
    meta = FileMetadata(tags=("invoice", "q1"), fields={"customer": "acme", "amount": 12.5, "paid": True})
    stored = await catalog.set_file_metadata("f1", meta, {"customer": S, "amount": N, "paid": B})
    assert stored.metadata == meta
    assert (await catalog.get_file("f1")).metadata == meta  # type: ignore[union-attr]
    assert [f.metadata for f in await catalog.list_files(docs.id)] == [meta]

    # a worker writing back the record it read before the change keeps the metadata
    await catalog.put_file(dataclasses.replace(entry, status=FileStatus.INDEXED, chunks=3))
    again = await catalog.get_file("f1")
    assert again is not None
    assert again.metadata == meta
    assert again.chunks == 3
    assert await catalog.field_types(docs.id) == {"customer": S, "amount": N, "paid": B}


async def test_a_field_keeps_one_type_in_a_dataset(catalog: SqlCatalog) -> None:
    docs = await make_dataset(catalog)
    other = await make_dataset(catalog, "zeta")
    for file_id, ds in (("f1", docs), ("f2", docs), ("g1", other)):
        await catalog.put_file(FileEntry(id=file_id, dataset_id=ds.id, name=f"{file_id}.md"))
    issued = FileMetadata(fields={"issued": "2024-01-01T00:00:00Z"})
    await catalog.set_file_metadata("f1", issued, {"issued": D})
    with pytest.raises(InvalidMetadata, match="'issued' is a date in this dataset, not a number"):
        await catalog.set_file_metadata("f2", FileMetadata(tags=("x",), fields={"issued": 3}), {"issued": N})
    assert (await catalog.get_file("f2")).metadata == FileMetadata()  # type: ignore[union-attr]  # nothing written
    await catalog.set_file_metadata(
        "g1", FileMetadata(fields={"issued": 3}), {"issued": N}
    )  # another dataset
    assert await catalog.field_types(other.id) == {"issued": N}
    await catalog.set_file_metadata(
        "f2", FileMetadata(fields={"issued": "2025-01-01T00:00:00Z"}), {"issued": D}
    )
    assert await catalog.field_types(docs.id) == {"issued": D}
    with pytest.raises(NotFound):
        await catalog.set_file_metadata("nope", FileMetadata(), {})
    assert await catalog.field_types("no-such-dataset") == {}
