"""JobQueue contract, on SQLite and PostgreSQL (one catalog; see test_claims.py for several)."""

from __future__ import annotations

from typing import Any

import pytest

from ragd.catalog.sql import SqlCatalog
from ragd.errors import NotFound
from ragd.kb_types import ItemStage, Job, JobItem, JobKind, JobStatus
from tests.catalog.conftest import START, FakeClock

LEASE = 30.0


def job(job_id: str, tenant: str = "t1", **changes: Any) -> Job:
    fields: dict[str, Any] = {"kind": JobKind.INGEST, "status": JobStatus.QUEUED, "payload": {"n": job_id}}
    return Job(id=job_id, tenant_id=tenant, **{**fields, **changes})


async def test_enqueue_stores_a_queued_job_with_its_items(catalog: SqlCatalog) -> None:
    spec = job("j1", dataset_id="d1", payload={"files": ["a", "b"]}, max_attempts=5, status=JobStatus.RUNNING)
    stored = await catalog.enqueue(spec, ["a", "b", "a"])
    assert stored.status is JobStatus.QUEUED
    assert (stored.total, stored.done, stored.attempts, stored.max_attempts) == (2, 0, 0, 5)
    assert (stored.payload, stored.dataset_id, stored.created_at) == ({"files": ["a", "b"]}, "d1", START)
    assert await catalog.get_job("j1") == stored
    assert await catalog.items("j1") == [JobItem("j1", "a"), JobItem("j1", "b")]
    assert await catalog.get_job("nope") is None


async def test_claim_takes_the_oldest_runnable_job_once(catalog: SqlCatalog, clock: FakeClock) -> None:
    for name in ("first", "second", "third"):
        await catalog.enqueue(job(name))
        clock.advance(1)
    claimed = await catalog.claim("w1", LEASE)
    assert claimed is not None
    assert claimed.id == "first"
    assert (claimed.status, claimed.attempts, claimed.started_at) == (JobStatus.RUNNING, 1, clock.now)
    second = await catalog.claim("w2", LEASE)
    third = await catalog.claim("w1", LEASE)
    assert (second and second.id, third and third.id) == ("second", "third")
    assert await catalog.claim("w3", LEASE) is None


async def test_a_lapsed_lease_is_claimed_again(catalog: SqlCatalog, clock: FakeClock) -> None:
    await catalog.enqueue(job("j1"))
    assert await catalog.claim("w1", LEASE) is not None
    clock.advance(LEASE - 1)
    assert await catalog.claim("w2", LEASE) is None  # still leased
    assert await catalog.heartbeat("j1", "w1", LEASE) is not None  # renewed: due at +2*LEASE-1
    clock.advance(LEASE - 1)
    assert await catalog.claim("w2", LEASE) is None
    clock.advance(2)
    again = await catalog.claim("w2", LEASE)
    assert again is not None
    assert (again.id, again.attempts, again.status) == ("j1", 2, JobStatus.RUNNING)
    assert await catalog.heartbeat("j1", "w1", LEASE) is None  # w1 lost it
    unchanged = await catalog.finish("j1", "w1", JobStatus.SUCCEEDED)
    assert unchanged.status is JobStatus.RUNNING  # a finish by the old owner changes nothing
    beat = await catalog.heartbeat("j1", "w2", LEASE)
    assert beat is not None
    assert beat.updated_at == again.updated_at


async def test_a_failed_attempt_is_retried_after_its_delay(catalog: SqlCatalog, clock: FakeClock) -> None:
    await catalog.enqueue(job("j1", max_attempts=2))
    await catalog.claim("w1", LEASE)
    retried = await catalog.finish(
        "j1", "w1", JobStatus.FAILED, error_code="E", error_message="m", retry_in_s=10
    )
    assert (retried.status, retried.error_code, retried.finished_at) == (JobStatus.QUEUED, "E", None)
    assert await catalog.heartbeat("j1", "w1", LEASE) is None
    clock.advance(9)
    assert await catalog.claim("w1", LEASE) is None
    clock.advance(1)
    again = await catalog.claim("w2", LEASE)
    assert again is not None
    assert again.attempts == 2
    final = await catalog.finish("j1", "w2", JobStatus.FAILED, error_code="E2", retry_in_s=10)
    assert (final.status, final.error_code, final.finished_at) == (JobStatus.FAILED, "E2", clock.now)
    clock.advance(100)
    assert await catalog.claim("w1", LEASE) is None


async def test_finish_succeeds_clears_the_error_and_rejects_non_final_statuses(catalog: SqlCatalog) -> None:
    await catalog.enqueue(job("j1"))
    await catalog.claim("w1", LEASE)
    with pytest.raises(ValueError, match="final status"):
        await catalog.finish("j1", "w1", JobStatus.QUEUED)
    done = await catalog.finish("j1", "w1", JobStatus.SUCCEEDED)
    assert (done.status, done.error_code) == (JobStatus.SUCCEEDED, None)
    with pytest.raises(NotFound):
        await catalog.finish("nope", "w1", JobStatus.SUCCEEDED)


@pytest.mark.parametrize(
    ("stages", "ended"),
    [
        ((ItemStage.DONE, ItemStage.UNCHANGED, ItemStage.DELETED), JobStatus.SUCCEEDED),
        ((ItemStage.DONE,) + (ItemStage.FAILED,) * 5, JobStatus.PARTIAL),
        ((ItemStage.FAILED,) * 3, JobStatus.FAILED),
        ((), JobStatus.SUCCEEDED),
    ],
)
async def test_a_job_that_ran_to_the_end_ends_as_its_items_say(
    catalog: SqlCatalog, stages: tuple[ItemStage, ...], ended: JobStatus
) -> None:
    keys = [f"f{n}" for n in range(len(stages))]
    await catalog.enqueue(job("j1"), keys)
    await catalog.claim("w1", LEASE)
    for key, stage in zip(keys, stages, strict=True):
        code = "UNSUPPORTED_TYPE" if stage is ItemStage.FAILED else None
        await catalog.update_item("j1", key, stage, error_code=code)
    finished = await catalog.finish("j1", "w1", JobStatus.SUCCEEDED)
    assert (finished.status, finished.error_code, finished.finished_at is not None) == (ended, None, True)
    assert finished.status.finished
    assert await catalog.get_job("j1") == finished
    assert (await catalog.count_jobs())[ended] == 1


async def test_jobs_are_listed_by_status(catalog: SqlCatalog) -> None:
    for name, stage in (("ok", ItemStage.DONE), ("some", ItemStage.FAILED), ("none", ItemStage.FAILED)):
        keys = ["a", "b"] if name == "some" else ["a"]
        await catalog.enqueue(job(name), keys)
        await catalog.claim("w1", LEASE)
        await catalog.update_item(name, "a", ItemStage.DONE if name != "none" else stage)
        if name == "some":
            await catalog.update_item(name, "b", stage, error_code="EMPTY_DOCUMENT")
        await catalog.finish(name, "w1", JobStatus.SUCCEEDED)
    await catalog.enqueue(job("waiting"))
    statuses = {j.id: j.status for j in await catalog.list_jobs(None)}
    assert statuses == {
        "ok": JobStatus.SUCCEEDED,
        "some": JobStatus.PARTIAL,
        "none": JobStatus.FAILED,
        "waiting": JobStatus.QUEUED,
    }
    failing = await catalog.list_jobs(None, statuses=[JobStatus.PARTIAL, JobStatus.FAILED])
    assert sorted(j.id for j in failing) == ["none", "some"]
    assert [j.id for j in await catalog.list_jobs("t1", statuses=[JobStatus.QUEUED])] == ["waiting"]
    assert await catalog.list_jobs("t1", statuses=[JobStatus.CANCELLED]) == []


async def test_a_job_that_keeps_losing_its_worker_fails_for_good(
    catalog: SqlCatalog, clock: FakeClock
) -> None:
    await catalog.enqueue(job("j1", max_attempts=2))
    await catalog.enqueue(job("j2"))
    for _ in range(2):
        claimed = await catalog.claim("w", LEASE)
        assert claimed is not None
        assert claimed.id == "j1"
        clock.advance(LEASE + 1)
    instead = await catalog.claim("w", LEASE)
    assert instead is not None
    assert instead.id == "j2"
    lost = await catalog.get_job("j1")
    assert lost is not None
    assert (lost.status, lost.error_code, lost.attempts) == (JobStatus.FAILED, "WORKER_LOST", 2)


async def test_cancel(catalog: SqlCatalog, clock: FakeClock) -> None:
    await catalog.enqueue(job("queued"))
    await catalog.enqueue(job("running"))
    cancelled = await catalog.request_cancel("queued")
    assert cancelled is not None
    assert (cancelled.status, cancelled.finished_at) == (JobStatus.CANCELLED, START)
    running = await catalog.claim("w1", LEASE)
    assert running is not None
    assert running.id == "running"
    flagged = await catalog.request_cancel("running")
    assert flagged is not None
    assert (flagged.status, flagged.cancel_requested) == (JobStatus.RUNNING, True)
    beat = await catalog.heartbeat("running", "w1", LEASE)
    assert beat is not None
    assert beat.cancel_requested
    stopped = await catalog.finish("running", "w1", JobStatus.FAILED, retry_in_s=1)
    assert stopped.status is JobStatus.FAILED  # no retry once a cancel was asked for
    assert await catalog.request_cancel("nope") is None
    again = await catalog.request_cancel("queued")
    assert again is not None
    assert again.updated_at == cancelled.updated_at


async def test_a_flagged_job_whose_worker_died_ends_cancelled(catalog: SqlCatalog, clock: FakeClock) -> None:
    await catalog.enqueue(job("j1"))
    await catalog.claim("w1", LEASE)
    await catalog.request_cancel("j1")
    clock.advance(LEASE + 1)
    assert await catalog.claim("w2", LEASE) is None
    ended = await catalog.get_job("j1")
    assert ended is not None
    assert ended.status is JobStatus.CANCELLED


async def test_items_and_counts(catalog: SqlCatalog) -> None:
    await catalog.enqueue(job("j1"), ["a", "b"])
    await catalog.set_items("j1", ["b", "c", "d"])
    await catalog.update_item("j1", "a", ItemStage.INDEXING, file_id="fa")
    await catalog.update_item("j1", "a", ItemStage.DONE, chunks=4)
    await catalog.update_item("j1", "b", ItemStage.UNCHANGED, file_id="fb")
    await catalog.update_item("j1", "c", ItemStage.FAILED, error_code="EMPTY_DOCUMENT", error_message="empty")
    await catalog.update_item("j1", "e", ItemStage.DELETED)  # an item the job had not listed
    await catalog.set_items("j1", ["a"])  # present: keeps its stage
    counted = await catalog.get_job("j1")
    assert counted is not None
    assert (counted.total, counted.done, counted.failed, counted.chunks) == (5, 3, 1, 4)
    assert await catalog.items("j1") == [
        JobItem("j1", "a", ItemStage.DONE, "fa", 4),
        JobItem("j1", "b", ItemStage.UNCHANGED, "fb"),
        JobItem("j1", "c", ItemStage.FAILED, None, 0, "EMPTY_DOCUMENT", "empty"),
        JobItem("j1", "d"),
        JobItem("j1", "e", ItemStage.DELETED),
    ]
    with pytest.raises(NotFound):
        await catalog.update_item("nope", "a", ItemStage.DONE)
    with pytest.raises(NotFound):
        await catalog.set_items("nope", ["a"])


async def test_updated_after_is_a_change_feed(catalog: SqlCatalog) -> None:
    """The clock stands still: every change still gets a later ``updated_at`` than the last."""
    for name in ("a", "b", "c", "d"):
        await catalog.enqueue(job(name, tenant="t2" if name == "d" else "t1"))
    mark = max(j.updated_at for j in await catalog.list_jobs(None))
    assert await catalog.list_jobs(None, updated_after=mark) == []

    await catalog.update_item("c", "x", ItemStage.DONE)
    await catalog.request_cancel("a")
    await catalog.request_cancel("d")
    changed = await catalog.list_jobs("t1", updated_after=mark)
    assert [j.id for j in changed] == ["c", "a"]  # in the order they changed
    assert changed[0].updated_at > mark
    assert [j.id for j in await catalog.list_jobs(None, updated_after=changed[-1].updated_at)] == ["d"]
    assert [j.id for j in await catalog.list_jobs("t1")] == ["c", "b", "a"]  # newest first
    assert len(await catalog.list_jobs(None, limit=2)) == 2


async def test_dedupe_returns_the_queued_twin(catalog: SqlCatalog) -> None:
    first = await catalog.enqueue(
        job("j1", kind=JobKind.SYNC, payload={"source_id": "s", "n": [1, 2]}), ["a"]
    )
    same = job("j2", kind=JobKind.SYNC, payload={"n": [1, 2], "source_id": "s"})
    twin = await catalog.enqueue(same, ["a", "b"], dedupe=True)
    assert twin.id == "j1"
    assert twin.total == 2
    assert twin.updated_at > first.updated_at
    assert await catalog.get_job("j2") is None
    other_tenant = await catalog.enqueue(
        job("j3", tenant="t2", kind=JobKind.SYNC, payload=same.payload), dedupe=True
    )
    other_kind = await catalog.enqueue(job("j4", kind=JobKind.REINDEX, payload=same.payload), dedupe=True)
    undeduped = await catalog.enqueue(job("j5", kind=JobKind.SYNC, payload=same.payload))
    assert (other_tenant.id, other_kind.id, undeduped.id) == ("j3", "j4", "j5")

    await catalog.claim("w1", LEASE)  # j1 runs: no longer a twin to join
    queued_twin = await catalog.enqueue(job("j6", kind=JobKind.SYNC, payload=same.payload), dedupe=True)
    assert queued_twin.id == "j5"


async def test_jobs_are_counted_by_status_across_tenants(catalog: SqlCatalog) -> None:
    assert await catalog.count_jobs() == dict.fromkeys(JobStatus, 0)
    for name, tenant in (("a", "t1"), ("b", "t2"), ("c", "t1")):
        await catalog.enqueue(job(name, tenant))
    await catalog.request_cancel("c")
    counts = await catalog.count_jobs()
    assert (counts[JobStatus.QUEUED], counts[JobStatus.CANCELLED], counts[JobStatus.RUNNING]) == (2, 1, 0)


async def test_jobs_are_counted_for_one_tenant_and_some_datasets(catalog: SqlCatalog) -> None:
    await catalog.enqueue(job("a", "t1", dataset_id="d1"))
    await catalog.enqueue(job("b", "t1", dataset_id="d2"))
    await catalog.enqueue(job("c", "t1"))  # of no dataset: counted whatever the datasets
    await catalog.enqueue(job("d", "t2", dataset_id="d1"))
    await catalog.request_cancel("b")
    mine = await catalog.count_jobs("t1")
    assert (mine[JobStatus.QUEUED], mine[JobStatus.CANCELLED]) == (2, 1)
    some = await catalog.count_jobs("t1", dataset_ids=["d1"])
    assert (some[JobStatus.QUEUED], some[JobStatus.CANCELLED]) == (2, 0)
    assert (await catalog.count_jobs("t1", dataset_ids=[]))[JobStatus.QUEUED] == 1
    assert (await catalog.count_jobs())[JobStatus.QUEUED] == 3
    assert await catalog.count_jobs("nobody") == dict.fromkeys(JobStatus, 0)
