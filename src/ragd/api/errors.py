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

On the OpenAI-compatible surface (``/v1/…``, the chat proxy) every error — ragd's, the auth
gate's 401, a validation 422, an unknown route — is OpenAI's shape instead, which the ``openai``
SDKs and Open WebUI read::

    {"error": {"message": "<message>", "type": "invalid_request_error", "param": null, "code": "<CODE>"}}
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler, request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from ragd.api.openai_wire import error_body as openai_error_body
from ragd.errors import (
    EmbeddingFailed,
    ExtractionError,
    Forbidden,
    InvalidRequest,
    InvalidText,
    MissingDependency,
    NotReady,
    ObjectFetchFailed,
    PayloadTooLarge,
    QuotaExceeded,
    RagError,
    RateLimited,
    SparseEmbeddingFailed,
    StorageFull,
    StoreError,
    StoreReadFailed,
    UnsupportedMediaType,
    UnsupportedType,
)

log = logging.getLogger(__name__)

#: the ingestion-service surface, whose clients read its codes; /api/v1/datasets etc. use ragd's own
COMPAT_PREFIX = ("/api/v1/ingest", "/api/v1/extract", "/api/v1/documents")
OPENAI_PREFIX = "/v1/"
_HTTP_CODES = {
    401: "UNAUTHORIZED",
    403: "FORBIDDEN",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    413: "REQUEST_TOO_LARGE",
}

# (error class, status, code) in lookup order: the first isinstance match wins.
_COMPAT: tuple[tuple[type[RagError], int, str], ...] = (
    (InvalidText, 422, "INVALID_REQUEST"),  # FastAPI's status for a body it cannot take
    (PayloadTooLarge, 413, "INVALID_REQUEST"),
    (QuotaExceeded, 413, "INVALID_REQUEST"),
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
    (StorageFull, 507, "STORAGE_FULL"),
    (StoreReadFailed, 500, "QDRANT_READ_FAILED"),
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


def _openai_surface(request: Request) -> bool:
    return request.url.path.startswith(OPENAI_PREFIX)


def openai_message(exc: RagError) -> str:
    return f"{exc.message} ({exc.hint})" if exc.hint else exc.message


async def _rag_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RagError)
    debug = request.app.state.ragd.settings.server.debug
    headers = {"Retry-After": "5"} if isinstance(exc, NotReady) else None
    if isinstance(exc, RateLimited):
        headers = {"Retry-After": str(exc.retry_after_s)}
    if _openai_surface(request):
        if exc.http_status >= 500:
            log.warning("%s %s failed: %s %s", request.method, request.url.path, exc.code, exc)
        body = openai_error_body(exc.http_status, openai_message(exc), exc.code)
        return JSONResponse(body, status_code=exc.http_status, headers=headers)
    if request.url.path.startswith(COMPAT_PREFIX):
        status, code = compat_status(exc, request.method)
    else:
        status, code = exc.http_status, exc.code
    if status >= 500:
        log.warning("%s %s failed: %s %s", request.method, request.url.path, exc.code, exc)
    body = error_body(exc, code, reason=exc.code, debug=debug)
    return JSONResponse(body, status_code=status, headers=headers)


async def render(request: Request, exc: RagError) -> JSONResponse:
    """``exc`` as the exception handler answers it, for middleware that answers before any route
    runs (:mod:`ragd.api.rates`)."""
    return await _rag_error(request, exc)


async def _http_error(request: Request, exc: Exception) -> Response:
    """FastAPI's own rendering, except on the OpenAI surface (the auth gate's 401, unknown routes)."""
    assert isinstance(exc, HTTPException)
    if not _openai_surface(request):
        return await http_exception_handler(request, exc)
    detail = exc.detail if isinstance(exc.detail, dict) else {"error": exc.detail}
    message = str(detail.get("error") or "request failed")
    code = str(detail.get("code") or _HTTP_CODES.get(exc.status_code, "INVALID_REQUEST"))
    body = openai_error_body(exc.status_code, message, code)
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)


async def _validation_error(request: Request, exc: Exception) -> Response:
    """FastAPI's 422, in OpenAI's shape on the OpenAI surface (``param`` names the first bad field)."""
    assert isinstance(exc, RequestValidationError)
    if not _openai_surface(request):
        return await request_validation_exception_handler(request, _printable(exc))
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error.get("loc", ()) if part != "body")
        problems.append(f"{where}: {error.get('msg', 'invalid')}" if where else str(error.get("msg")))
    first = exc.errors()[0].get("loc", ()) if exc.errors() else ()
    param = ".".join(str(part) for part in first if part != "body") or None
    body = openai_error_body(422, "; ".join(problems) or "invalid request", "INVALID_REQUEST", param)
    return JSONResponse(body, status_code=422)


def _printable(exc: RequestValidationError) -> RequestValidationError:
    """``exc`` with every ``input`` that is bytes (a body of another Content-Type than JSON, read
    raw) as text: FastAPI's handler decodes bytes as UTF-8 and a body that is not was a 500."""
    errors = [
        {**error, "input": error["input"].decode("utf-8", "replace")[:_ECHO_CHARS]}
        if isinstance(error.get("input"), bytes)
        else error
        for error in exc.errors()
    ]
    return RequestValidationError(errors, body=None)


#: how much of a raw body a 422 echoes back
_ECHO_CHARS = 200


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    wrapped = RagError("internal error; see the server log")
    if _openai_surface(request):
        return JSONResponse(openai_error_body(500, wrapped.message, wrapped.code), status_code=500)
    return JSONResponse(error_body(wrapped, "PIPELINE_FAILED"), status_code=500)


def early_response(path: str, exc: RagError, headers: dict[str, str] | None = None) -> JSONResponse:
    """``exc`` answered by a middleware, before any route (and this module's handlers) runs, in the
    shape of the surface ``path`` is on; its status is kept on every surface (a 403 or a 408 is the
    transport's verdict, not the ingestion service's)."""
    if path.startswith(OPENAI_PREFIX):
        body = openai_error_body(exc.http_status, openai_message(exc), exc.code)
    elif path.startswith(COMPAT_PREFIX):
        body = error_body(exc, InvalidRequest.code, reason=exc.code)
    else:
        body = error_body(exc, exc.code)
    return JSONResponse(body, status_code=exc.http_status, headers=headers)


def install(app: FastAPI) -> None:
    app.add_exception_handler(RagError, _rag_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(Exception, _unexpected)
