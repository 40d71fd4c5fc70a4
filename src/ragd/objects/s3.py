"""S3 and S3-compatible servers (MinIO, Ceph, ...) as an :class:`ObjectStore`, over aiobotocore.

aiobotocore is the optional extra ``s3`` (``pip install 'ragd[s3]'``).  It and
botocore are imported here only, and only when a store is opened: importing
this module never needs them, opening a store without them raises
:func:`ragd.errors.missing_extra`.

One client per store, made by :meth:`S3ObjectStore.open` and closed by
:meth:`S3ObjectStore.aclose`.  Requests make up to 3 attempts (botocore's
"standard" retry mode: throttling, 5xx, dropped connections), and connecting
and every read are bounded by ``timeout_s``.  Opening makes no request.

:meth:`S3ObjectStore.download` sends HEAD first and refuses an object over
``max_bytes`` before any body is fetched, then GET with ``If-Match`` on that
ETag (an object replaced in between fails instead of mixing versions), and
streams the body to disk in :data:`CHUNK_BYTES` chunks, counting bytes.  A
partial file is removed on any failure, cancellation included.

Errors are translated at this boundary.  Messages name the bucket, the key
and the S3 error code (or the failure's kind), never the endpoint,
credentials or botocore's text, which carries URLs; the botocore exception
stays as ``__cause__`` and is logged at DEBUG.

    missing key or bucket, access denied, unknown access key,   -> ObjectFetchFailed (S3_FETCH_FAILED, 502)
    bad signature, any other S3 error code, connection refused,
    timeouts, a cut-short or corrupt body, no credentials found
    object over max_bytes (by HEAD, or while streaming)         -> PayloadTooLarge (FILE_TOO_LARGE, 413)
    bucket outside ``allowed_buckets`` (no request is made)     -> Forbidden (FORBIDDEN, 403)
    a bucket name or key botocore refuses before sending        -> InvalidRequest (INVALID_REQUEST, 400)
    half the credentials, an endpoint or region botocore refuses -> ConfigurationError (at open)
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterable, AsyncIterator, Iterator
from contextlib import AsyncExitStack, aclosing, contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from ragd.errors import (
    ConfigurationError,
    InvalidRequest,
    ObjectFetchFailed,
    PayloadTooLarge,
    missing_extra,
)
from ragd.objects.base import ObjectInfo, check_bucket
from ragd.settings import S3Settings

__all__ = ["CHUNK_BYTES", "S3ObjectStore", "write_chunks"]

logger = logging.getLogger(__name__)

CHUNK_BYTES = 1 << 20  # one read from the body, one write to disk
MAX_ATTEMPTS = 3
MAX_PAGE_SIZE = 1000  # ListObjectsV2 never returns more per page

_SIZE_HINT = "raise RAGD_EXTRACT__MAX_FILE_BYTES or split the file"
_KEYS_HINT = "check RAGD_S3__ACCESS_KEY_ID and RAGD_S3__SECRET_ACCESS_KEY"
_REGION_HINT = "set RAGD_S3__REGION to the bucket's region"
_NOT_FOUND = ("no such key", "check the key and the bucket name")
_DENIED = ("access denied", f"grant these credentials read access to the bucket, or {_KEYS_HINT}")
_CHANGED = ("the object changed while it was being downloaded", "retry")

# S3 error code (HEAD answers carry only the HTTP status) -> (what went wrong, what to do).
_CLIENT_ERRORS: dict[str, tuple[str, str]] = {
    "NoSuchKey": _NOT_FOUND,
    "404": ("no such key, or no such bucket", "check the key and the bucket name"),
    "NoSuchBucket": ("no such bucket", "check the bucket name"),
    "AccessDenied": _DENIED,
    "403": _DENIED,
    "AllAccessDisabled": _DENIED,
    "InvalidAccessKeyId": ("the S3 server does not know the access key", "check RAGD_S3__ACCESS_KEY_ID"),
    "SignatureDoesNotMatch": ("the secret key does not match the access key", _KEYS_HINT),
    "ExpiredToken": ("the credentials have expired", "renew them"),
    "PreconditionFailed": _CHANGED,
    "412": _CHANGED,
    "PermanentRedirect": ("the bucket is in another region", _REGION_HINT),
    "301": ("the bucket is in another region", _REGION_HINT),
    "AuthorizationHeaderMalformed": ("the region does not match the bucket's", _REGION_HINT),
    "SlowDown": ("the S3 server is throttling requests", "retry later"),
    "InternalError": ("the S3 server failed", "retry later"),
    "ServiceUnavailable": ("the S3 server is unavailable", "retry later"),
    "500": ("the S3 server failed", "retry later"),
    "503": ("the S3 server is unavailable", "retry later"),
    "InvalidObjectState": ("the object is archived (restore it first)", "restore it, then retry"),
}
_OTHER_CLIENT_ERROR = ("the S3 server refused the request", "retry later; if it persists, see its logs")


class S3ObjectStore:
    """:class:`ragd.objects.base.ObjectStore` over one aiobotocore S3 client; build with :meth:`open`."""

    def __init__(self, client: Any, stack: AsyncExitStack, settings: S3Settings, page_size: int) -> None:
        self._client = client
        self._stack = stack
        self._settings = settings
        self._page_size = page_size

    @classmethod
    async def open(
        cls, settings: S3Settings, *, page_size: int = MAX_PAGE_SIZE, max_attempts: int = MAX_ATTEMPTS
    ) -> S3ObjectStore:
        """Create the client (no request is made).

        ``page_size``: keys per ListObjectsV2 page; ``max_attempts``: tries per request, the first included.
        """
        if not 1 <= page_size <= MAX_PAGE_SIZE or max_attempts < 1:
            raise ValueError(f"need 1 <= page_size <= {MAX_PAGE_SIZE} and max_attempts >= 1")
        credentials = _credentials(settings)
        session_cls, config_cls, botocore_error = _sdk()
        config = config_cls(
            connect_timeout=settings.timeout_s,
            read_timeout=settings.timeout_s,
            # botocore's "max_attempts" counts retries; "total_max_attempts" counts the first try too.
            retries={"total_max_attempts": max_attempts, "mode": "standard"},
            s3={"addressing_style": settings.addressing_style},
            user_agent_extra="ragd",
        )
        stack = AsyncExitStack()
        try:
            client = await stack.enter_async_context(
                session_cls().create_client(
                    "s3",
                    region_name=settings.region,
                    endpoint_url=settings.endpoint_url or None,
                    config=config,
                    **credentials,
                )
            )
        except (ValueError, botocore_error) as exc:  # "Invalid endpoint: <url>", InvalidRegionError...
            await stack.aclose()
            logger.debug("S3 client configuration refused: %r", exc)
            raise ConfigurationError(
                f"the S3 client cannot be configured ({type(exc).__name__})",
                hint="check RAGD_S3__ENDPOINT_URL (e.g. http://minio:9000) and RAGD_S3__REGION",
            ) from exc
        return cls(client, stack, settings, page_size)

    async def head(self, bucket: str, key: str) -> ObjectInfo:
        self._check_bucket(bucket)
        with self._boundary("read", bucket, key):
            response = await self._client.head_object(Bucket=bucket, Key=key)
        return ObjectInfo(key=key, size=int(response["ContentLength"]), etag=_unquote(response.get("ETag")))

    async def download(self, bucket: str, key: str, dest: Path, *, max_bytes: int) -> ObjectInfo:
        """Stream the object to ``dest`` (replaced); refuse past ``max_bytes``, before GET if HEAD tells."""
        info = await self.head(bucket, key)
        if info.size > max_bytes:
            raise PayloadTooLarge(
                f"s3://{bucket}/{key} is {info.size:,} bytes, over the {max_bytes:,}-byte limit",
                hint=_SIZE_HINT,
            )
        try:
            with self._boundary("read", bucket, key):
                return await self._fetch(bucket, info, dest, max_bytes)
        except BaseException:
            dest.unlink(missing_ok=True)
            raise

    async def tags(self, bucket: str, key: str) -> dict[str, str]:
        """The object's tags, one GetObjectTagging request."""
        self._check_bucket(bucket)
        with self._boundary("read the tags of", bucket, key):
            response = await self._client.get_object_tagging(Bucket=bucket, Key=key)
        return {str(t.get("Key", "")): str(t.get("Value", "")) for t in response.get("TagSet", ())}

    async def list(self, bucket: str, prefix: str = "") -> AsyncIterator[ObjectInfo]:
        """Every object under ``prefix``, one ListObjectsV2 page at a time; "folder" keys are skipped."""
        self._check_bucket(bucket)
        pages = self._client.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=prefix, PaginationConfig={"PageSize": self._page_size}
        )
        with self._boundary("list", bucket, prefix):
            async for page in pages:
                for item in page.get("Contents", ()):
                    key = str(item["Key"])
                    if not key.endswith("/"):
                        yield ObjectInfo(key=key, size=int(item["Size"]), etag=_unquote(item.get("ETag")))

    async def aclose(self) -> None:
        """Close the client; safe to call more than once."""
        await self._stack.aclose()

    async def __aenter__(self) -> S3ObjectStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _fetch(self, bucket: str, info: ObjectInfo, dest: Path, max_bytes: int) -> ObjectInfo:
        """GET the object HEAD described (If-Match its ETag) and write its body to ``dest``."""
        condition = {"IfMatch": f'"{info.etag}"'} if info.etag else {}
        response = await self._client.get_object(Bucket=bucket, Key=info.key, **condition)
        async with response["Body"] as body, aclosing(body.iter_chunks(CHUNK_BYTES)) as chunks:
            with dest.open("wb") as fh:
                size = await write_chunks(chunks, fh, max_bytes=max_bytes, source=f"s3://{bucket}/{info.key}")
        meta = response.get("Metadata") or {}
        return ObjectInfo(
            key=info.key,
            size=size,
            etag=_unquote(response.get("ETag")) or info.etag,
            metadata={str(k): str(v) for k, v in meta.items()},
        )

    def _check_bucket(self, bucket: str) -> None:
        check_bucket(bucket, self._settings.allowed_buckets)

    @contextmanager
    def _boundary(self, action: str, bucket: str, key: str) -> Iterator[None]:
        """Translate botocore's exceptions raised in the block into ragd's (see the module docstring)."""
        from botocore.exceptions import BotoCoreError, ClientError, ParamValidationError

        try:
            yield
        except ClientError as exc:
            logger.debug("S3 %s failed (bucket=%r key=%r): %r", action, bucket, key, exc)
            raise _client_error(exc, action, bucket, key) from exc
        except ParamValidationError as exc:
            logger.debug("S3 %s refused by botocore (bucket=%r key=%r): %r", action, bucket, key, exc)
            raise InvalidRequest(
                f"s3://{bucket}/{key} is not a valid S3 bucket name and key",
                hint="bucket names are 3-63 characters: a-z, 0-9, '.', '-'",
            ) from exc
        except (BotoCoreError, TimeoutError, ConnectionError) as exc:
            logger.debug("S3 %s failed (bucket=%r key=%r): %r", action, bucket, key, exc)
            raise self._transport_error(exc, action, bucket, key) from exc

    def _transport_error(self, exc: Exception, action: str, bucket: str, key: str) -> ObjectFetchFailed:
        from botocore import exceptions as boto

        if isinstance(exc, boto.ConnectTimeoutError | boto.ReadTimeoutError | TimeoutError):
            what = f"the S3 endpoint did not answer within {self._settings.timeout_s:g} s"
            hint = "raise RAGD_S3__TIMEOUT_S, or check the S3 server"
        elif isinstance(exc, boto.NoCredentialsError | boto.PartialCredentialsError):
            what, hint = "no S3 credentials were found", f"{_KEYS_HINT} (or the AWS default credential chain)"
        elif isinstance(exc, boto.IncompleteReadError | boto.FlexibleChecksumError):
            what, hint = "the object arrived cut short or corrupted", "retry"
        elif isinstance(exc, boto.HTTPClientError | boto.EndpointConnectionError | ConnectionError):
            what = "the S3 endpoint could not be reached, or dropped the connection"
            hint = "check RAGD_S3__ENDPOINT_URL and that the S3 server is running"
        else:
            what, hint = (
                "the S3 request failed",
                "retry; if it persists, log it with RAGD_LOG__LEVELS=ragd.objects=DEBUG",
            )
        return ObjectFetchFailed(
            f"cannot {action} s3://{bucket}/{key}: {what} ({type(exc).__name__})", hint=hint
        )


async def write_chunks(chunks: AsyncIterable[bytes], fh: BinaryIO, *, max_bytes: int, source: str) -> int:
    """Write each chunk to ``fh`` as it arrives and return the total; stop past ``max_bytes``.

    Holds one chunk at a time.  A write of at most :data:`CHUNK_BYTES` lands in
    the page cache, so it is not worth a thread hop.
    """
    written = 0
    async for chunk in chunks:
        written += len(chunk)
        if written > max_bytes:
            raise PayloadTooLarge(
                f"{source} is over the {max_bytes:,}-byte limit (more bytes arrived than HEAD announced)",
                hint=_SIZE_HINT,
            )
        fh.write(chunk)
    return written


def _client_error(exc: Any, action: str, bucket: str, key: str) -> ObjectFetchFailed:
    """An S3 error answer as ObjectFetchFailed: what went wrong and the (sanitised) S3 error code."""
    error = exc.response.get("Error", {})
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    code = re.sub(r"[^A-Za-z0-9.]", "", str(error.get("Code") or status or "unknown"))[:64] or "unknown"
    what, hint = _CLIENT_ERRORS.get(code, _OTHER_CLIENT_ERROR)
    return ObjectFetchFailed(f"cannot {action} s3://{bucket}/{key}: {what} (S3 error {code})", hint=hint)


def _credentials(settings: S3Settings) -> dict[str, str]:
    """Explicit keys when both are set; none (botocore's default chain) when neither is."""
    key_id = settings.access_key_id or None
    secret = settings.secret_access_key.get_secret_value() if settings.secret_access_key else None
    if key_id and secret:
        return {"aws_access_key_id": key_id, "aws_secret_access_key": secret}
    if key_id or secret:
        raise ConfigurationError(
            "only one of RAGD_S3__ACCESS_KEY_ID and RAGD_S3__SECRET_ACCESS_KEY is set",
            hint="set both, or neither to use the AWS default credential chain",
        )
    return {}


def _sdk() -> tuple[Any, Any, type[Exception]]:
    """aiobotocore's session and config classes and botocore's base error, or the install hint."""
    try:
        from aiobotocore.config import AioConfig
        from aiobotocore.session import AioSession
        from botocore.exceptions import BotoCoreError
    except ImportError as exc:
        raise missing_extra("aiobotocore", "s3") from exc
    return AioSession, AioConfig, BotoCoreError


def _unquote(etag: object) -> str:
    return str(etag or "").strip('"')
