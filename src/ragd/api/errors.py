"""The one place a :class:`RagError` becomes an HTTP response.

Every error body is the ingestion-service envelope, nested under ``detail``::

    {"detail": {"status": false, "error": "<message>", "code": "<CODE>", "hint": "..."}}

On the ingestion-service surface (``/api/v1/…``) the status and ``code`` follow
that service (``contracts.md`` §2.2): its eight codes and its
400/403/413/415/500 statuses, with ragd's finer code kept in ``reason``
(``EMPTY_DOCUMENT``, ``ENCRYPTED_DOCUMENT`` …).  One deliberate difference:
a file ragd cannot read is the file's fault, so ``EXTRACTION_FAILED`` is a
422, not the reference's 500 (Open WebUI fails the upload on any non-2xx, so
it behaves the same; monitoring no longer pages on users' broken files).  Elsewhere ragd's own code and
status apply (docs/errors.md).  Unexpected exceptions are logged with their
traceback and answered ``500 PIPELINE_FAILED`` without internals.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from ragd.errors import (
    EmbeddingFailed,
    ExtractionError,
    Forbidden,
    InvalidRequest,
    MissingDependency,
    NotReady,
    ObjectFetchFailed,
    PayloadTooLarge,
    RagError,
    SparseEmbeddingFailed,
    StoreError,
    UnsupportedMediaType,
    UnsupportedType,
)

log = logging.getLogger(__name__)

COMPAT_PREFIX = "/api/v1/"

# (error class, status, code) in lookup order: the first isinstance match wins.
_COMPAT: tuple[tuple[type[RagError], int, str], ...] = (
    (PayloadTooLarge, 413, "INVALID_REQUEST"),
    (UnsupportedMediaType, 415, "INVALID_REQUEST"),
    (UnsupportedType, 422, "EXTRACTION_FAILED"),
    (Forbidden, 403, "INVALID_REQUEST"),
    (InvalidRequest, 400, "INVALID_REQUEST"),
    (MissingDependency, 400, "INVALID_REQUEST"),
    (ExtractionError, 422, "EXTRACTION_FAILED"),
    (EmbeddingFailed, 500, "EMBEDDING_FAILED"),
    (SparseEmbeddingFailed, 500, "SPARSE_EMBEDDING_FAILED"),
    (ObjectFetchFailed, 500, "S3_FETCH_FAILED"),
    (NotReady, 503, "PIPELINE_FAILED"),
    (StoreError, 500, "QDRANT_WRITE_FAILED"),
)


def compat_status(exc: RagError, method: str) -> tuple[int, str]:
    """Status and code of ``exc`` on the ingestion-service surface."""
    for cls, status, code in _COMPAT:
        if isinstance(exc, cls):
            if cls is StoreError and method == "DELETE":
                return status, "DELETE_FAILED"
            if isinstance(exc, InvalidRequest) and exc.http_status == 404:
                return 404, "INVALID_REQUEST"
            return status, code
    return 500, "PIPELINE_FAILED"


def error_body(
    exc: RagError, code: str, *, reason: str | None = None, debug: bool = False
) -> dict[str, object]:
    detail: dict[str, object] = {"status": False, "error": exc.message, "code": code}
    if exc.hint:
        detail["hint"] = exc.hint
    if reason and reason != code:
        detail["reason"] = reason
    if debug and exc.__cause__ is not None:
        detail["debug"] = f"{type(exc.__cause__).__name__}: {exc.__cause__}"
    return {"detail": detail}


async def _rag_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RagError)
    debug = request.app.state.ragd.settings.server.debug
    if request.url.path.startswith(COMPAT_PREFIX):
        status, code = compat_status(exc, request.method)
    else:
        status, code = exc.http_status, exc.code
    if status >= 500:
        log.warning("%s %s failed: %s %s", request.method, request.url.path, exc.code, exc)
    body = error_body(exc, code, reason=exc.code, debug=debug)
    headers = {"Retry-After": "5"} if isinstance(exc, NotReady) else None
    return JSONResponse(body, status_code=status, headers=headers)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    wrapped = RagError("internal error; see the server log")
    return JSONResponse(error_body(wrapped, "PIPELINE_FAILED"), status_code=500)


def install(app: FastAPI) -> None:
    app.add_exception_handler(RagError, _rag_error)
    app.add_exception_handler(Exception, _unexpected)
