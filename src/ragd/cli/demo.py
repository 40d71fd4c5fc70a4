"""``ragd demo``: ragd's own docs indexed once, into the dataset the web UI then shows.

The docs go into the dataset "ragd docs" of a tenant "demo" (:func:`ragd.kb.seed.seed_dataset`,
the first time only), indexed here by a job worker of this process with a progress bar (a job a
run stopped with Ctrl+C left unfinished is finished the next time); the search is answered from
that dataset's collection, and ``--serve`` serves the same index.  Each chunk is embedded once:
there is no second collection of the same files.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from ragd.bootstrap import Services
from ragd.cli.progress import RateProgress
from ragd.cli.runner import run_job_here
from ragd.errors import RagError
from ragd.kb.datasets import collection_name_for
from ragd.kb.seed import seed_dataset
from ragd.kb_types import Dataset, Job, JobStatus

TENANT, DATASET = "demo", "ragd docs"


async def index_docs(services: Services, files: Sequence[Path], console: Console) -> str:
    """The docs' dataset, its files indexed (the first time); its collection's name."""
    ctx = services.knowledge()
    seeded = await seed_dataset(
        ctx, files, tenant=TENANT, dataset=DATASET, description="ragd's own documentation (ragd demo)"
    )
    queued = seeded.job or await _unfinished(services, seeded.dataset)
    if queued is not None:
        started = time.perf_counter()
        job = await _run_job(services, seeded.dataset, queued, console)
        noun = "file" if job.done == 1 else "files"
        console.print(
            f"\n[bold]{job.done}[/bold] {noun} indexed ({job.chunks} chunks), "
            f"[{'red' if job.failed else 'green'}]{job.failed} failed[/] "
            f"in {time.perf_counter() - started:.1f} s"
        )
        if job.done == 0:
            raise RagError(f"the demo's indexing job ended {job.status.value} with no file indexed")
    else:
        console.print(f"The dataset {DATASET!r} (tenant {TENANT!r}) is indexed already.")
    return collection_name_for(seeded.dataset.id)


async def _unfinished(services: Services, dataset: Dataset) -> Job | None:
    """The dataset's job an earlier run left unfinished (stopped with Ctrl+C), if any."""
    waiting = (JobStatus.QUEUED, JobStatus.RUNNING)
    jobs = await services.knowledge().catalog.list_jobs(dataset.tenant_id, statuses=waiting)
    return next((job for job in jobs if job.dataset_id == dataset.id), None)


async def _run_job(services: Services, dataset: Dataset, queued: Job, console: Console) -> Job:
    """Run a job worker here until ``queued`` has finished, following its counts."""
    label = f"Indexing ragd's docs into the dataset {dataset.name!r}"
    with RateProgress(console, label, queued.total or 1) as bar:

        def counts(job: Job) -> None:
            bar.update_to(done=job.done + job.failed, total=job.total, chunks=job.chunks, failed=job.failed)

        return await run_job_here(services, queued.id, "the demo's indexing job", counts)
