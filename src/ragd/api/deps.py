"""What every route module shares: the services and metrics dependencies, and upload limits.

Route modules (one per surface: retrieval, ingestion, knowledge bases, chat, …) import from here and
never from each other (an import-linter contract), so a surface can be added or removed alone.
"""

from __future__ import annotations

from fastapi import Request

from ragd.bootstrap import Services
from ragd.errors import PayloadTooLarge
from ragd.observe.metrics import Metrics

#: room for the multipart framing around an upload's bytes
MULTIPART_OVERHEAD = 256 * 1024


def services(request: Request) -> Services:
    return request.app.state.ragd.ready_services()  # type: ignore[no-any-return]


def metrics(request: Request) -> Metrics:
    return request.app.state.ragd.metrics  # type: ignore[no-any-return]


def check_length(request: Request, limit: int) -> None:
    """Refuse a body whose declared Content-Length is over ``limit`` before reading it."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(
            f"upload exceeds max_upload_bytes={limit} (Content-Length {declared})",
            hint="raise RAGD_EXTRACT__MAX_FILE_BYTES",
        )
