"""The job worker: claims jobs from the shared queue, runs them, renews their leases, retries.

Runs inside ``ragd serve`` (``worker.enabled``) or alone; several processes
sharing a PostgreSQL catalog never run one job twice (see JobQueue.claim).
A worker that dies leaves its jobs RUNNING with a lease that lapses; the
next claim picks them up and finished items are skipped (ingest is
idempotent, so an item cut short is simply done again).

Outcomes: ran to the end -> SUCCEEDED, PARTIAL (some items failed) or FAILED (every item
failed), as the catalog counts them (:meth:`JobStatus.completed`);
cancel requested -> CANCELLED between items (no new item starts, the ones in flight
finish whole: :class:`ragd.kb.runs.CancelSignal`); a request-level error
(4xx: dataset or source gone) -> FAILED at once; any other error -> retried
after backoff (doubling) until ``max_attempts``, then FAILED.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import socket
import time
import uuid
from contextlib import suppress

from ragd.errors import RagError
from ragd.kb.context import KbContext
from ragd.kb.datasets import collection_name_for
from ragd.kb.migrations import run_migration, tidy_migrations
from ragd.kb.runs import CancelRequested, CancelSignal, run_job
from ragd.kb_types import Job, JobKind, JobStatus
from ragd.observe.logging import sanitize
from ragd.observe.metrics import Metrics
from ragd.settings import WorkerSettings
from ragd.types import PointFilter

log = logging.getLogger(__name__)

LOST, STOPPING = "lost", "stopping"


#: the queue's counts (the ``kb_jobs`` gauge) are read at most this often
COUNT_EVERY_S = 5.0
#: migrations are tidied (ended, retained versions removed) at most this often
TIDY_EVERY_S = 2.0


class Worker:
    def __init__(
        self,
        ctx: KbContext,
        settings: WorkerSettings,
        *,
        worker_id: str | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self._ctx = ctx
        self._settings = settings
        self._metrics = metrics
        self._counted_at = -COUNT_EVERY_S
        self._tidied_at = -TIDY_EVERY_S
        if metrics is not None:
            metrics.jobs_running_here.set_function(lambda: len(self._running))
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._wake = asyncio.Event()
        self._running: dict[str, asyncio.Task[None]] = {}
        self._why: dict[str, str] = {}

    def wake(self) -> None:
        """A job was queued: look now instead of at the next poll."""
        self._wake.set()

    async def run(self, stop: asyncio.Event) -> None:
        log.info("job worker %s started (concurrency %d)", self.worker_id, self._settings.concurrency)
        try:
            while not stop.is_set():
                await self._fill()
                await self.count_jobs()
                await self.tidy()
                self._wake.clear()
                waiters = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(self._wake.wait())]
                await asyncio.wait(
                    [*waiters, *self._running.values()],
                    timeout=self._settings.poll_s,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                for waiter in waiters:
                    waiter.cancel()
        finally:
            await self._stop_all()

    async def count_jobs(self, *, now: float | None = None) -> None:
        """Refresh the ``kb_jobs{status}`` gauge from the catalog (at most every COUNT_EVERY_S)."""
        now = time.monotonic() if now is None else now
        if self._metrics is None or now - self._counted_at < COUNT_EVERY_S:
            return
        self._counted_at = now
        try:
            counts = await self._ctx.catalog.count_jobs()
        except RagError as exc:
            log.warning("job worker cannot count jobs: %s", exc)
            return
        for status, n in counts.items():
            self._metrics.jobs.labels(status.value).set(n)

    async def tidy(self, *, now: float | None = None) -> None:
        """Migrations' housekeeping (at most every TIDY_EVERY_S): end those whose job ended, remove
        versions whose retention is over."""
        now = time.monotonic() if now is None else now
        if now - self._tidied_at < TIDY_EVERY_S:
            return
        self._tidied_at = now
        try:
            await tidy_migrations(self._ctx)
        except RagError as exc:
            log.warning("job worker cannot tidy migrations: %s", exc)

    async def _fill(self) -> None:
        while len(self._running) < self._settings.concurrency:
            try:
                bound = self._ctx.limits.defaults.max_concurrent_jobs
                job = await self._ctx.catalog.claim(self.worker_id, self._settings.lease_s, max_running=bound)
            except RagError as exc:
                log.warning("job worker cannot claim: %s", exc)
                return
            if job is None:
                return
            task = asyncio.create_task(self._execute(job), name=f"ragd-job-{job.id}")
            self._running[job.id] = task
            task.add_done_callback(functools.partial(self._forget, job.id))

    def _forget(self, job_id: str, _task: asyncio.Task[None]) -> None:
        self._running.pop(job_id, None)

    async def _stop_all(self) -> None:
        for job_id, task in list(self._running.items()):
            self._why[job_id] = STOPPING
            task.cancel()
        await asyncio.gather(*self._running.values(), return_exceptions=True)

    async def _execute(self, job: Job) -> None:
        log.info("job %s (%s) attempt %d started", job.id, job.kind.value, job.attempts)
        current = asyncio.current_task()
        assert current is not None
        cancel = CancelSignal(functools.partial(self._cancel_requested, job.id))
        beat = asyncio.create_task(self._heartbeat(job.id, current, cancel))
        try:
            if job.kind is JobKind.MIGRATE:
                await run_migration(self._ctx, job, cancel)
            else:
                await run_job(self._ctx, job, cancel)
        except CancelRequested:
            await self._finish(job, JobStatus.CANCELLED, "CANCELLED", "cancelled on request")
            log.info("job %s cancelled", job.id)
        except asyncio.CancelledError:
            await self._after_cancel(job)
            if self._why.pop(job.id, None) == STOPPING:
                raise
            return
        except Exception as exc:
            await self._after_error(job, exc)
        else:
            ended = await self._finish(job, JobStatus.SUCCEEDED)
            log.info("job %s %s", job.id, ended.status.value if ended else "ran to the end")
        finally:
            beat.cancel()
            with suppress(asyncio.CancelledError):
                await beat
            await self._drop_orphans(job)

    async def _heartbeat(self, job_id: str, task: asyncio.Task[None], cancel: CancelSignal) -> None:
        """Renew the lease; a cancel request raises the job's flag (it stops between items), a
        lost lease stops the job at once (another worker owns it now)."""
        interval = max(0.2, self._settings.lease_s / 3)
        while True:
            await asyncio.sleep(interval)
            try:
                job = await self._ctx.catalog.heartbeat(job_id, self.worker_id, self._settings.lease_s)
            except RagError as exc:
                log.warning("job %s heartbeat failed: %s", job_id, exc)
                continue
            if job is None:
                self._why[job_id] = LOST
                task.cancel()
                return
            if job.cancel_requested:
                cancel.raise_flag()

    async def _cancel_requested(self, job_id: str) -> bool:
        try:
            job = await self._ctx.catalog.get_job(job_id)
        except RagError as exc:
            log.warning("job %s: cannot read its cancel flag: %s", job_id, exc)
            return False
        return job is not None and job.cancel_requested

    async def _after_cancel(self, job: Job) -> None:
        why = self._why.get(job.id)
        if why == STOPPING:
            # back to the queue at once rather than after the lease lapses
            await self._finish(job, JobStatus.FAILED, "INTERRUPTED", "the worker stopped", retry_in_s=0.0)
        else:
            log.warning("job %s: lease lost to another worker; stopped here", job.id)

    async def _after_error(self, job: Job, exc: Exception) -> None:
        code = exc.code if isinstance(exc, RagError) else "PIPELINE_FAILED"
        final = isinstance(exc, RagError) and exc.http_status < 500
        if not isinstance(exc, RagError):
            log.error("job %s failed unexpectedly", job.id, exc_info=exc)
        delay = None if final else self._settings.backoff_s * 2 ** max(0, job.attempts - 1)
        log.warning(
            "job %s failed (%s: %s)%s", job.id, code, sanitize(str(exc)), "" if final else "; retrying"
        )
        await self._finish(job, JobStatus.FAILED, code, str(exc)[:2000], retry_in_s=delay)

    async def _finish(
        self,
        job: Job,
        status: JobStatus,
        code: str | None = None,
        message: str | None = None,
        *,
        retry_in_s: float | None = None,
    ) -> Job | None:
        try:
            return await asyncio.shield(
                self._ctx.catalog.finish(
                    job.id,
                    self.worker_id,
                    status,
                    error_code=code,
                    error_message=message,
                    retry_in_s=retry_in_s,
                )
            )
        except RagError as exc:
            log.warning("job %s: could not record its end (%s); its lease will lapse", job.id, exc)
            return None

    async def _drop_orphans(self, job: Job) -> None:
        """Points a job wrote into a dataset deleted meanwhile are removed."""
        if job.dataset_id is None:
            return
        try:
            if await self._ctx.catalog.get_dataset(job.dataset_id) is None:
                names = (collection_name_for(job.dataset_id),)
                await self._ctx.store.delete(PointFilter(collection_names=names))
        except (RagError, ValueError) as exc:
            log.warning("job %s: orphan clean-up failed: %s", job.id, exc)
