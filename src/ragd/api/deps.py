"""What every route module shares: the services and metrics dependencies, upload limits, readiness.

Route modules (one per surface: retrieval, ingestion, knowledge bases, chat, …) import from here and
never from each other (an import-linter contract), so a surface can be added or removed alone.
"""

from __future__ import annotations

import asyncio
import logging

from fastapi import Request

from ragd.api.state import AppState
from ragd.bootstrap import Services
from ragd.catalog.base import Catalog
from ragd.errors import PayloadTooLarge
from ragd.observe.metrics import Metrics

log = logging.getLogger(__name__)

#: room for the multipart framing around an upload's bytes
MULTIPART_OVERHEAD = 256 * 1024


async def services(request: Request) -> Services:
    return request.app.state.ragd.ready_services()  # type: ignore[no-any-return]


async def metrics(request: Request) -> Metrics:
    return request.app.state.ragd.metrics  # type: ignore[no-any-return]


def check_length(request: Request, limit: int) -> None:
    """Refuse a body whose declared Content-Length is over ``limit`` before reading it."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(
            f"upload exceeds max_upload_bytes={limit} (Content-Length {declared})",
            hint="raise RAGD_EXTRACT__MAX_FILE_BYTES",
        )


READY_PROBE_TIMEOUT_S = 5.0


async def readiness(state: AppState) -> str | None:
    """None when ragd can serve (services up, store and catalog answering), else why not: what
    ``/health/ready`` answers (``GET /api/v1/system`` shows it too)."""
    services = state.services
    if services is None:
        return "pipeline failed to start" if state.startup_error else "pipeline not warmed up yet"
    if state.pending is not None and (waiting := state.pending()) is not None:
        return waiting
    try:
        async with asyncio.timeout(READY_PROBE_TIMEOUT_S):
            answering = await services.store.ready()
    except Exception as exc:  # a probe must answer, whatever the store raised
        log.warning("readiness probe: store check failed: %s", type(exc).__name__)
        answering = False
    if not answering:
        return "qdrant unreachable"
    if services.kb is not None and not await _catalog_answers(services.kb.catalog):
        return "catalog unreachable"
    return None


async def _catalog_answers(catalog: Catalog) -> bool:
    """One cheap read (a dataset that cannot exist) against the catalog's database."""
    try:
        async with asyncio.timeout(READY_PROBE_TIMEOUT_S):
            await catalog.get_dataset("ragd-readiness-probe")
    except Exception as exc:  # a probe must answer, whatever the database raised
        log.warning("readiness probe: catalog check failed: %s", type(exc).__name__)
        return False
    return True
