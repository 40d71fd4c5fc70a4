"""ragd's one error vocabulary.

Every failure a user can see is a :class:`RagError` with a stable ``code``
(part of the API: scripts match on it) and the HTTP status it maps to.
Adapters translate vendor exceptions at their boundary
(``raise StoreUnavailable(...) from exc``); the HTTP layer renders them in one
exception handler and the CLI prints ``code: message``.

    RagError (PIPELINE_FAILED, 500)
    ├── Unauthorized (UNAUTHORIZED, 401)
    ├── NotReady (NOT_READY, 503)
    ├── RateLimited (RATE_LIMITED, 429)                  a key's requests per minute are used up
    ├── InvalidRequest (INVALID_REQUEST, 400)
    │   ├── Forbidden (FORBIDDEN, 403)
    │   │   ├── SourceNotGranted (SOURCE_NOT_GRANTED, 403)  no grant of the tenant covers a source
    │   │   ├── IngestOnly (INGEST_ONLY, 403)            an ingest-scoped key asked to read chunks
    │   │   ├── HostNotAllowed (HOST_NOT_ALLOWED, 403)      a keyless service asked for by a foreign name
    │   │   ├── OriginNotAllowed (ORIGIN_NOT_ALLOWED, 403)  a browser's cross-site write
    │   │   └── PrivateAddress (PRIVATE_ADDRESS, 403)       a crawl's host resolves to a non-public address
    │   ├── NotFound (NOT_FOUND, 404)
    │   ├── Conflict (CONFLICT, 409)
    │   │   ├── GrantOverlap (GRANT_OVERLAP, 409)      a grant would overlap another tenant's
    │   │   └── SourceDisabled (SOURCE_DISABLED, 409)  a disabled source cannot sync
    │   ├── PayloadTooLarge (FILE_TOO_LARGE, 413)
    │   │   └── InputTooLarge (INPUT_TOO_LARGE, 413)     a model endpoint's inputs past a documented limit
    │   ├── QuotaExceeded (QUOTA_EXCEEDED, 413)          an ingest would take a tenant over its storage limit
    │   ├── InvalidLink (INVALID_LINK, 400)              a crawled page points at a URL no client can fetch
    │   ├── InvalidText (INVALID_TEXT, 422)              a lone surrogate or a NUL in a request's text
    │   ├── BackupInvalid (BACKUP_INVALID, 422)          a backup is incomplete, corrupt or not ragd's
    │   ├── InvalidSchedule (INVALID_SCHEDULE, 422)      a source schedule that cannot be read
    │   ├── InvalidFilter (INVALID_FILTER, 422)          a search filter that cannot be read
    │   ├── InvalidMetadata (INVALID_METADATA, 422)      a file's tags or fields that cannot be stored
    │   ├── ArchiveInvalid (ARCHIVE_INVALID, 422)        a dataset archive to import is corrupt or unsafe
    │   ├── InvalidEvalQuery (INVALID_EVAL_QUERY, 422)   a labelled query that cannot be stored
    │   ├── EvalSetFull (EVALSET_FULL, 409)              a dataset's evaluation set holds its maximum
    │   ├── EvalRunTooLarge (EVAL_RUN_TOO_LARGE, 413)    an eval run over more queries than a run may
    │   ├── RequestTimeout (REQUEST_TIMEOUT, 408)        a request body stalled past server.body_timeout_s
    │   ├── UnsupportedMediaType (UNSUPPORTED_MEDIA_TYPE, 415)  the request's Content-Type
    │   ├── UnsupportedType (UNSUPPORTED_TYPE, 415)             a file ragd cannot read
    │   └── NotPaged (NOT_PAGED, 422)                    a page image of a file without pages
    ├── ExtractionError (EXTRACTION_FAILED, 422)
    │   ├── EncryptedDocument (ENCRYPTED_DOCUMENT, 422)
    │   ├── EmptyDocument (EMPTY_DOCUMENT, 422)
    │   ├── ExtractionUnusable (EXTRACTION_UNUSABLE, 422)  the "text" is mostly markup
    │   ├── ExtractionCrashed (EXTRACTION_CRASHED, 422)    the reader died or hung on the file
    │   ├── OcrUnavailable (OCR_UNAVAILABLE, 422)
    │   ├── VisionUnavailable (VISION_UNAVAILABLE, 422)    the vision model's endpoint failed
    │   ├── VisionOutputTooLong (VISION_OUTPUT_TOO_LONG, 422)  its answer reached the token cap
    │   └── ConverterUnavailable (CONVERTER_UNAVAILABLE, 422)  no Office-to-PDF converter
    ├── ConfigurationError (CONFIGURATION_ERROR, 500)
    │   ├── IndexMismatch (INDEX_MISMATCH, 409)
    │   └── MissingDependency (MISSING_DEPENDENCY, 500)
    ├── EmbeddingFailed (EMBEDDING_FAILED, 502)
    ├── RerankFailed (RERANK_FAILED, 502)
    ├── UpstreamFailed (UPSTREAM_FAILED, 502)
    ├── ObjectFetchFailed (S3_FETCH_FAILED, 502)
    ├── PageFetchFailed (FETCH_FAILED, 502)          a crawled web page
    │   └── RenderTimeout (RENDER_TIMEOUT, 504)      a rendered page did not settle in time
    ├── RenderUnavailable (RENDER_UNAVAILABLE, 503)  no Playwright or no Chromium to render with
    ├── SparseEmbeddingFailed (SPARSE_EMBEDDING_FAILED, 500)
    └── StoreError (QDRANT_WRITE_FAILED, 503)
        ├── StoreReadFailed (QDRANT_READ_FAILED, 503)    a search, count, scroll or facet failed
        ├── StoreUnavailable (STORE_UNAVAILABLE, 503)
        ├── StorageFull (STORAGE_FULL, 507)              the data disk is (nearly) full: writes refused
        └── StoreLocked (STORE_LOCKED, 409)

Extraction failures are the *file's* fault, so they are 4xx (422) rather
than the reference ingestion-service's 500 (see docs/errors.md).

A file's failure is **permanent** when the same bytes on the same server fail the same way
again (``permanent = True``: an unsupported type, an empty, encrypted, corrupt or oversized
file, scanned pages without OCR, stored bytes that are gone); retrying a job skips those
(:func:`is_permanent`), and the fix is a new file or a server change followed by a re-index.
A crash, a timeout, a cancelled or interrupted job, a backend's 5xx are worth another try.
"""

from __future__ import annotations


class RagError(Exception):
    code: str = "PIPELINE_FAILED"
    http_status: int = 500
    #: a file failing with this code fails the same way on a retry (module docstring)
    permanent: bool = False

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class Unauthorized(RagError):
    code = "UNAUTHORIZED"
    http_status = 401


class NotReady(RagError):
    code = "NOT_READY"
    http_status = 503


class RateLimited(RagError):
    """A key used up its requests per minute on one surface; ``retry_after_s``: whole seconds until
    the next request would be taken (sent as ``Retry-After``)."""

    code = "RATE_LIMITED"
    http_status = 429

    def __init__(self, message: str, *, retry_after_s: int, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.retry_after_s = retry_after_s


class InvalidRequest(RagError):
    code = "INVALID_REQUEST"
    http_status = 400


class Forbidden(InvalidRequest):
    code = "FORBIDDEN"
    http_status = 403


class NotFound(InvalidRequest):
    code = "NOT_FOUND"
    http_status = 404
    permanent = True


class Conflict(InvalidRequest):
    code = "CONFLICT"
    http_status = 409


class MigrationRunning(Conflict):
    """A dataset already has a migration that has not switched or ended: one at a time."""

    code = "MIGRATION_RUNNING"


class WrongMigrationState(Conflict):
    """The migration is not in a state that allows this (a switch before it is complete, a
    rollback of one that never switched, a rollback after the old version was removed)."""

    code = "MIGRATION_STATE"


class MigrationHeld(Conflict):
    """The new version scored worse than the old one on the dataset's evaluation set by more than
    the migration's ``max_regression``: a switch must say ``override``."""

    code = "MIGRATION_HELD"


class SourceNotGranted(Forbidden):
    """A tenant's folder or S3 source reaches beyond every live grant of that tenant."""

    code = "SOURCE_NOT_GRANTED"


class IngestOnly(Forbidden):
    """A key of the built-in ``ingest`` role (scoped to ingestion) asked for something that reads
    chunks: a search, the chat proxy, MCP ``search``/``read``, chunk inspection or a dataset export."""

    code = "INGEST_ONLY"


class HostNotAllowed(Forbidden):
    """A service without a key was asked for by a ``Host`` that is neither loopback nor listed in
    ``server.allowed_hosts``: a DNS-rebinding page, or a name the operator has not listed."""

    code = "HOST_NOT_ALLOWED"


class OriginNotAllowed(Forbidden):
    """A state-changing request from a browser page of another origin (``Origin`` not this service's
    and not in ``server.cors_origins``), on a service without a key or with the UI's session cookie."""

    code = "ORIGIN_NOT_ALLOWED"


class PrivateAddress(Forbidden):
    """A crawl's host resolves, at this connection, to a loopback, private, link-local or reserved
    address, and the source may reach only public ones (:mod:`ragd.sources.address_guard`)."""

    code = "PRIVATE_ADDRESS"


class GrantOverlap(Conflict):
    """A grant would overlap another tenant's live grant and does not say ``shared``."""

    code = "GRANT_OVERLAP"


class SourceDisabled(Conflict):
    """The source is disabled (no live grant covers it): it is not watched and does not sync."""

    code = "SOURCE_DISABLED"
    permanent = True


class PayloadTooLarge(InvalidRequest):
    code = "FILE_TOO_LARGE"
    http_status = 413
    permanent = True


class QuotaExceeded(InvalidRequest):
    """Storing a file would take its tenant over ``max_chunks`` or ``max_bytes`` (checked before
    anything is written).  413, not 403: the key may do this, the content is too large for the room
    left; the fix is a smaller file, deleting files, or a higher limit, then a re-index."""

    code = "QUOTA_EXCEEDED"
    http_status = 413
    permanent = True


class InputTooLarge(PayloadTooLarge):
    """A model endpoint's request past a limit: too many inputs, or too many characters in one
    input or in all of them (``RAGD_SERVER__MAX_EMBED_INPUTS`` and its siblings)."""

    code = "INPUT_TOO_LARGE"
    permanent = False


class InvalidLink(InvalidRequest):
    """A crawled page redirects to a URL that cannot be fetched (``javascript:…``, a malformed URL)."""

    code = "INVALID_LINK"
    permanent = True


class InvalidText(InvalidRequest):
    """A request's text no store can hold: not UTF-8, a lone UTF-16 surrogate, a NUL."""

    code = "INVALID_TEXT"
    http_status = 422


class InvalidSchedule(InvalidRequest):
    """A source schedule ragd cannot run: not one of an interval and a cron expression, an interval
    under ``worker.schedule_min_interval_s``, a cron expression that does not parse, an unknown
    time zone."""

    code = "INVALID_SCHEDULE"
    http_status = 422


class InvalidFilter(InvalidRequest):
    """A search filter ragd cannot run: not the documented shape, an unknown key, a value of the
    wrong type, too deep or too large.  The message names the field path (``filter.must[0].key``)."""

    code = "INVALID_FILTER"
    http_status = 422


class InvalidMetadata(InvalidRequest):
    """A file's user metadata ragd cannot store: a tag or field name outside the pattern, too many
    tags or fields, a value too long or of no supported type, a field whose type differs from the
    one it has in the dataset.  The message names the tag or field."""

    code = "INVALID_METADATA"
    http_status = 422


class ArchiveInvalid(InvalidRequest):
    """A dataset archive to import is truncated, tampered with (a part's size or SHA-256), not ragd's,
    or unsafe (a member that is not a regular file, a name outside the format, too many members)."""

    code = "ARCHIVE_INVALID"
    http_status = 422


class BackupInvalid(InvalidRequest):
    """A backup to restore is incomplete, corrupt (a part's size or SHA-256) or not a ragd backup."""

    code = "BACKUP_INVALID"
    http_status = 422


class InvalidEvalQuery(InvalidRequest):
    """A labelled query ragd cannot store: no expected file or chunk, a file that is not the
    dataset's, a text past its size limit, a JSONL line that is not the documented shape."""

    code = "INVALID_EVAL_QUERY"
    http_status = 422


class EvalSetFull(InvalidRequest):
    """Adding would take a dataset's evaluation set past ``evaluation.max_queries``: delete some
    labelled queries first (nothing of the request was stored)."""

    code = "EVALSET_FULL"
    http_status = 409


class EvalRunTooLarge(InvalidRequest):
    """An eval run would search more queries than ``evaluation.max_run_queries``: run a slice of the
    set (``offset``/``limit``), as ``ragd eval --dataset`` does."""

    code = "EVAL_RUN_TOO_LARGE"
    http_status = 413


class RequestTimeout(InvalidRequest):
    """A request's body stopped arriving: no piece of it came for ``server.body_timeout_s``."""

    code = "REQUEST_TIMEOUT"
    http_status = 408


class UnsupportedMediaType(InvalidRequest):
    code = "UNSUPPORTED_MEDIA_TYPE"
    http_status = 415


class UnsupportedType(InvalidRequest):
    code = "UNSUPPORTED_TYPE"
    http_status = 415
    permanent = True


class NotPaged(InvalidRequest):
    """A page image was asked of a file that has no pages to draw (text, Markdown, HTML, e-mail)."""

    code = "NOT_PAGED"
    http_status = 422


class ExtractionError(RagError):
    code = "EXTRACTION_FAILED"
    http_status = 422
    permanent = True


class EncryptedDocument(ExtractionError):
    code = "ENCRYPTED_DOCUMENT"


class EmptyDocument(ExtractionError):
    code = "EMPTY_DOCUMENT"


class ExtractionUnusable(ExtractionError):
    """The extracted text is mostly markup (raw RTF, tags, base64, PDF operators): nothing is indexed."""

    code = "EXTRACTION_UNUSABLE"


class ExtractionCrashed(ExtractionError):
    """The reader's process died (native crash, out of memory) or hung on this file; others carry on."""

    code = "EXTRACTION_CRASHED"
    permanent = False  # a reader killed by memory pressure or a slow moment may succeed later


class OcrUnavailable(ExtractionError):
    code = "OCR_UNAVAILABLE"


class VisionUnavailable(ExtractionError):
    """The vision model's endpoint failed, timed out or refused the call (docs/formats.md#vision-engines)."""

    code = "VISION_UNAVAILABLE"
    permanent = False  # the endpoint may be back on the next try


class VisionOutputTooLong(ExtractionError):
    """The vision model's answer reached RAGD_VISION__MAX_TOKENS: the file fails rather than being cut."""

    code = "VISION_OUTPUT_TOO_LONG"


class ConverterUnavailable(ExtractionError):
    """An Office file must become PDF pages and no converter (LibreOffice, Gotenberg) is configured
    or reachable."""

    code = "CONVERTER_UNAVAILABLE"
    permanent = False  # a Gotenberg service may be back, LibreOffice installed, on the next try


class ConfigurationError(RagError):
    code = "CONFIGURATION_ERROR"
    http_status = 500


class IndexMismatch(ConfigurationError):
    code = "INDEX_MISMATCH"
    http_status = 409


class MissingDependency(ConfigurationError):
    code = "MISSING_DEPENDENCY"


class PgToolMissing(RagError):
    """``pg_dump`` / ``pg_restore`` (backup and restore of a PostgreSQL catalog) is not installed."""

    code = "PG_TOOL_MISSING"
    http_status = 503


class PgToolFailed(RagError):
    """``pg_dump`` / ``pg_restore`` ran and failed (server unreachable, version mismatch, …)."""

    code = "PG_TOOL_FAILED"
    http_status = 503


class EmbeddingFailed(RagError):
    code = "EMBEDDING_FAILED"
    http_status = 502


class RerankFailed(RagError):
    """A reranker (remote endpoint or local model) failed; search fails open past it."""

    code = "RERANK_FAILED"
    http_status = 502


class UpstreamFailed(RagError):
    """An upstream LLM (OpenAI-compatible endpoint) failed, timed out or answered nonsense."""

    code = "UPSTREAM_FAILED"
    http_status = 502


class ObjectFetchFailed(RagError):
    """An object store (S3/MinIO) could not be read: missing key, auth, network."""

    code = "S3_FETCH_FAILED"
    http_status = 502


class PageFetchFailed(RagError):
    """A web page could not be fetched: network error, timeout or a non-2xx answer."""

    code = "FETCH_FAILED"
    http_status = 502

    def __init__(self, message: str, *, hint: str | None = None, status: int | None = None) -> None:
        super().__init__(message, hint=hint)
        #: the HTTP status of a non-2xx answer; None for a network failure
        self.status = status


class RenderTimeout(PageFetchFailed):
    """A page loaded in headless Chromium did not settle (its network never went quiet) within
    ``crawl.render_timeout_s``: that page's failure, the crawl goes on."""

    code = "RENDER_TIMEOUT"
    http_status = 504


class RenderUnavailable(RagError):
    """A source asks for JavaScript rendering and Playwright for Python or Chromium is missing, or
    Chromium would not start."""

    code = "RENDER_UNAVAILABLE"
    http_status = 503


class SparseEmbeddingFailed(RagError):
    code = "SPARSE_EMBEDDING_FAILED"
    http_status = 500


class CatalogUnavailable(RagError):
    """The metadata database (SQLite file or PostgreSQL) cannot be reached or migrated."""

    code = "CATALOG_UNAVAILABLE"
    http_status = 503


class StoreError(RagError):
    code = "QDRANT_WRITE_FAILED"
    http_status = 503


class StoreReadFailed(StoreError):
    """A read (search, count, scroll, facet) failed in the engine: not a write."""

    code = "QDRANT_READ_FAILED"


#: the store operations that only read: a failure there is QDRANT_READ_FAILED
STORE_READS = frozenset({"search", "count", "scroll", "facet", "info"})


def store_failure(what: str, message: str) -> StoreError:
    """The error for a failed store operation ``what``: a read or a write."""
    return StoreReadFailed(message) if what in STORE_READS else StoreError(message)


class StoreUnavailable(StoreError):
    code = "STORE_UNAVAILABLE"


class StorageFull(StoreError):
    """The data disk has less free space than ragd keeps free: writes are refused, searches go on."""

    code = "STORAGE_FULL"
    http_status = 507


class StoreLocked(StoreError):
    code = "STORE_LOCKED"
    http_status = 409


def _codes(root: type[RagError]) -> dict[str, type[RagError]]:
    found = {root.code: root}
    for sub in root.__subclasses__():
        found |= _codes(sub)
    return found


#: the code of every error in the tree, to its class
ERRORS_BY_CODE = _codes(RagError)


def is_permanent(code: str) -> bool:
    """Whether a file that failed with ``code`` fails the same way again (module docstring);
    False for a code outside the tree (``CANCELLED``, ``WORKER_LOST``, ``INTERRUPTED``)."""
    error = ERRORS_BY_CODE.get(code)
    return error is not None and error.permanent


def missing_extra(package: str, extra: str) -> MissingDependency:
    """The error raised when an optional engine's package is not installed."""
    return MissingDependency(
        f"the optional package {package!r} is not installed",
        hint=f"install it with: pip install 'ragd[{extra}]'",
    )
