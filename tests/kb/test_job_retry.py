"""Retrying a job (ragd.kb.jobs.retry_job) on the catalog, SQLite and PostgreSQL: what is queued
again, and what is refused."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import pytest

from ragd.catalog.sql import SqlCatalog, open_catalog
from ragd.errors import Conflict, Forbidden, NotFound
from ragd.kb.context import KbContext
from ragd.kb.files import new_job
from ragd.kb.jobs import retry_job
from ragd.kb_types import (
    Dataset,
    FileEntry,
    FileStatus,
    ItemStage,
    JobKind,
    JobStatus,
    Principal,
    SourceKind,
    SourceSpec,
)

LEASE = 30.0


@pytest.fixture
async def kb(catalog_url: str, tmp_path: Path) -> AsyncIterator[KbContext]:
    catalog: SqlCatalog = await open_catalog(catalog_url)
    unused = ("store", "ingestor", "chunker_for", "reader_for", "max_upload_bytes")
    yield KbContext(catalog=catalog, files_dir=tmp_path, **cast(dict[str, Any], dict.fromkeys(unused)))
    await catalog.aclose()


async def _dataset(kb: KbContext) -> tuple[Dataset, Principal]:
    tenant = await kb.catalog.create_tenant("acme")
    ds = await kb.catalog.create_dataset(
        Dataset(id="ds1", tenant_id=tenant.id, name="docs", collection_name="kb-ds1")
    )
    return ds, Principal(tenant_id=tenant.id, role="editor")


async def test_a_finished_jobs_failed_and_unfinished_files_go_into_a_new_job(kb: KbContext) -> None:
    ds, editor = await _dataset(kb)
    for name in ("a", "b", "c", "d"):
        await kb.catalog.put_file(FileEntry(id=name, dataset_id=ds.id, name=f"{name}.md"))
    job = await kb.catalog.enqueue(new_job(ds, JobKind.INGEST, {"file_ids": list("abcd")}, 3), list("abcd"))
    with pytest.raises(Conflict):  # queued
        await retry_job(kb, editor, job.id)
    await kb.catalog.claim("w1", LEASE)
    with pytest.raises(Conflict):  # running
        await retry_job(kb, editor, job.id)
    await kb.catalog.update_item(job.id, "a", ItemStage.DONE, file_id="a", chunks=2)
    await kb.catalog.update_item(job.id, "b", ItemStage.FAILED, error_code="EXTRACTION_CRASHED")
    await kb.catalog.delete_file("d")  # deleted since: not retried
    ended = await kb.catalog.finish(job.id, "w1", JobStatus.FAILED, error_code="STORE_UNAVAILABLE")
    assert ended.status is JobStatus.FAILED
    retry = await retry_job(kb, editor, job.id)
    assert (retry.retried, retry.skipped) == (2, {})
    retried = retry.job
    assert retried.id != job.id
    assert (retried.kind, retried.status, retried.dataset_id) == (JobKind.INGEST, JobStatus.QUEUED, ds.id)
    assert sorted(retried.payload["file_ids"]) == ["b", "c"]  # failed, and never started
    assert sorted(i.key for i in await kb.catalog.items(retried.id)) == ["b", "c"]
    for name in ("b", "c"):
        entry = await kb.catalog.get_file(name)
        assert entry is not None
        assert entry.status is FileStatus.QUEUED
    assert (await kb.catalog.get_job(job.id)) == ended  # the old job stays as it ended


async def test_retry_is_refused_when_there_is_nothing_to_do_or_no_right(kb: KbContext) -> None:
    ds, editor = await _dataset(kb)
    await kb.catalog.put_file(FileEntry(id="a", dataset_id=ds.id, name="a.md"))
    job = await kb.catalog.enqueue(new_job(ds, JobKind.REINDEX, {"file_ids": ["a"]}, 3), ["a"])
    await kb.catalog.claim("w1", LEASE)
    await kb.catalog.update_item(job.id, "a", ItemStage.DONE, file_id="a", chunks=1)
    await kb.catalog.finish(job.id, "w1", JobStatus.SUCCEEDED)
    with pytest.raises(Conflict, match="nothing to retry"):
        await retry_job(kb, editor, job.id)
    with pytest.raises(Forbidden):
        await retry_job(kb, Principal(tenant_id=ds.tenant_id, role="reader"), job.id)
    with pytest.raises(NotFound):
        await retry_job(kb, Principal(tenant_id="someone-else", role="admin"), job.id)
    cancelled = await kb.catalog.enqueue(new_job(ds, JobKind.REINDEX, {"file_ids": ["a"]}, 3), ["a"])
    await kb.catalog.request_cancel(cancelled.id)
    again = (await retry_job(kb, Principal(tenant_id=None, role="admin"), cancelled.id)).job
    assert (again.kind, again.payload) == (JobKind.REINDEX, {"file_ids": ["a"]})


async def test_files_that_would_fail_the_same_way_again_are_skipped_and_counted(kb: KbContext) -> None:
    ds, editor = await _dataset(kb)
    names = ("ok", "png", "empty", "crashed", "cut")
    for name in names:
        status = FileStatus.INDEXED if name == "ok" else FileStatus.FAILED
        await kb.catalog.put_file(FileEntry(id=name, dataset_id=ds.id, name=f"{name}.bin", status=status))
    job = await kb.catalog.enqueue(new_job(ds, JobKind.INGEST, {"file_ids": list(names)}, 3), list(names))
    await kb.catalog.claim("w1", LEASE)
    await kb.catalog.update_item(job.id, "ok", ItemStage.DONE, file_id="ok", chunks=3)
    await kb.catalog.update_item(job.id, "png", ItemStage.FAILED, error_code="UNSUPPORTED_TYPE")
    await kb.catalog.update_item(job.id, "empty", ItemStage.FAILED, error_code="EMPTY_DOCUMENT")
    await kb.catalog.update_item(job.id, "crashed", ItemStage.FAILED, error_code="EXTRACTION_CRASHED")
    await kb.catalog.update_item(job.id, "cut", ItemStage.FAILED, error_code="WORKER_LOST")
    ended = await kb.catalog.finish(job.id, "w1", JobStatus.SUCCEEDED)
    assert (ended.status, ended.done, ended.failed) == (JobStatus.PARTIAL, 1, 4)
    retry = await retry_job(kb, editor, job.id)
    assert retry.retried == 2
    assert retry.skipped == {"UNSUPPORTED_TYPE": 1, "EMPTY_DOCUMENT": 1}
    assert sorted(retry.job.payload["file_ids"]) == ["crashed", "cut"]
    # the skipped files keep their record as it was; only the retried ones are queued again
    statuses = {n: e.status for n in names if (e := await kb.catalog.get_file(n)) is not None}
    assert statuses == {
        "ok": FileStatus.INDEXED,
        "png": FileStatus.FAILED,
        "empty": FileStatus.FAILED,
        "crashed": FileStatus.QUEUED,
        "cut": FileStatus.QUEUED,
    }


async def test_a_job_whose_failures_are_all_permanent_has_nothing_to_retry(kb: KbContext) -> None:
    ds, editor = await _dataset(kb)
    for name in ("a", "b", "c"):
        await kb.catalog.put_file(FileEntry(id=name, dataset_id=ds.id, name=f"{name}.png"))
    job = await kb.catalog.enqueue(new_job(ds, JobKind.INGEST, {"file_ids": list("abc")}, 3), list("abc"))
    await kb.catalog.claim("w1", LEASE)
    for name, code in (("a", "UNSUPPORTED_TYPE"), ("b", "UNSUPPORTED_TYPE"), ("c", "EMPTY_DOCUMENT")):
        await kb.catalog.update_item(job.id, name, ItemStage.FAILED, error_code=code)
    ended = await kb.catalog.finish(job.id, "w1", JobStatus.SUCCEEDED)
    assert (ended.status, ended.error_code) == (JobStatus.FAILED, None)  # nothing done: failed
    with pytest.raises(Conflict, match="2 UNSUPPORTED_TYPE, 1 EMPTY_DOCUMENT") as refused:
        await retry_job(kb, editor, job.id)
    assert "3 failed files would fail the same way again" in str(refused.value)
    assert [j.id for j in await kb.catalog.list_jobs(ds.tenant_id)] == [job.id]  # none queued


async def test_a_sync_is_retried_as_a_new_sync_of_its_source(kb: KbContext) -> None:
    ds, editor = await _dataset(kb)
    source = await kb.catalog.create_source(
        SourceSpec(id="s1", dataset_id=ds.id, kind=SourceKind.FOLDER, config={"path": "/srv"})
    )
    job = await kb.catalog.enqueue(new_job(ds, JobKind.SYNC, {"source_id": source.id}, 3))
    await kb.catalog.request_cancel(job.id)
    retry = await retry_job(kb, editor, job.id)
    retried = retry.job
    assert (retried.kind, retried.payload, retried.status) == (
        JobKind.SYNC,
        {"source_id": "s1"},
        JobStatus.QUEUED,
    )
    assert (await retry_job(kb, editor, job.id)).job.id == retried.id  # folded into the queued one
    await kb.catalog.delete_source(source.id)
    with pytest.raises(Conflict, match="source"):
        await retry_job(kb, editor, job.id)
