"""What every command shares: the consoles, settings read once with clear errors, and running a
coroutine so that a RagError becomes ``error CODE: message`` and exit code 2."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console

from ragd.errors import RagError
from ragd.kb.worker import Worker
from ragd.kb_types import Job

if TYPE_CHECKING:
    from ragd.bootstrap import Services
from ragd.settings import Settings

T = TypeVar("T")
console = Console()
err_console = Console(stderr=True)


def load_settings(data_dir: Path | None = None, **overrides: Any) -> Settings:
    try:
        settings = Settings()
    except ValidationError as exc:
        for err in exc.errors():
            where = "__".join(str(p) for p in err["loc"]).upper()
            err_console.print(f"[red]error[/red] CONFIGURATION_ERROR: RAGD_{where}: {err['msg']}")
        raise typer.Exit(2) from None
    if data_dir is not None:
        settings = settings.model_copy(update={"data_dir": data_dir})
    return settings.model_copy(update=overrides) if overrides else settings


def run_or_exit(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    try:
        return asyncio.run(main())
    except RagError as exc:
        err_console.print(f"[red]error[/red] {exc.code}: {exc}")
        raise typer.Exit(2) from exc


#: how often a job run in this process is read for its counts
JOB_POLL_S = 0.25


async def run_job_here(services: Services, job_id: str, what: str, on_counts: Callable[[Job], None]) -> Job:
    """Run a job worker in this process until job ``job_id`` has finished (as a server's would),
    handing each read of the job to ``on_counts``; ``what`` names the job in errors."""
    kb = services.knowledge()
    stop = asyncio.Event()
    worker = asyncio.create_task(Worker(kb, services.settings.worker).run(stop), name="ragd-cli-worker")
    try:
        while True:
            job = await kb.catalog.get_job(job_id)
            if job is None:
                raise RagError(f"{what} is gone")
            on_counts(job)
            if job.status.finished:
                return job
            if worker.done():
                worker.result()  # the worker stopped: say why
                raise RagError(f"the job worker stopped before {what} finished")
            await asyncio.sleep(JOB_POLL_S)
    finally:
        stop.set()
        with suppress(asyncio.CancelledError):
            await worker
