"""Failures are translated at the boundary into ragd errors a user can act on, free of hostnames.

S3's own answers come from moto (missing keys and buckets; with its IAM
authentication switched on: unknown keys, bad signatures, users without a
policy).  What moto cannot be made to do — answer slowly, fail with 500,
drop the connection — is played by the scripted HTTP server speaking S3's
XML wire format.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from pydantic import SecretStr

from ragd.errors import ConfigurationError, InvalidRequest, ObjectFetchFailed, RagError
from ragd.objects.s3 import S3ObjectStore
from ragd.settings import S3Settings
from tests.support.s3_server import ACCESS_KEY, SECRET_KEY, S3Server
from tests.support.scripted_http import Reply, ScriptedServer

LIST_RESULT = b"""<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>bkt</Name><Prefix></Prefix>\
<KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>\
<Contents><Key>a.txt</Key><LastModified>2025-01-01T00:00:00.000Z</LastModified>\
<ETag>&quot;0cc175b9c0f1b6a831c399e269772661&quot;</ETag><Size>1</Size><StorageClass>STANDARD</StorageClass>\
</Contents></ListBucketResult>"""

XML = {"Content-Type": "application/xml"}


def s3_error(status: int, code: str, message: str) -> Reply:
    body = (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{message}</Message>'
        "<RequestId>4442587FB7D0A2F9</RequestId></Error>"
    )
    return Reply(status, body.encode(), XML)


def assert_actionable(err: RagError, port: int, *fragments: str) -> None:
    """An S3_FETCH_FAILED naming what it must, and none of endpoint, port, credentials, botocore text."""
    assert err.code == "S3_FETCH_FAILED"
    assert err.http_status == 502
    for fragment in fragments:
        assert fragment in err.message
    text = str(err)  # message and hint
    for leak in ("127.0.0.1", "localhost", str(port), "http://", ACCESS_KEY, SECRET_KEY, "An error occurred"):
        assert leak not in text, f"{leak!r} leaked into {text!r}"
    assert err.hint
    assert err.__cause__ is not None  # the botocore exception, for the logs


def unused_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- S3's answers (moto) ----------------------------------------------------------------------------


async def test_missing_key(s3_server: S3Server, store: S3ObjectStore, tmp_path: Path) -> None:
    bucket = s3_server.bucket({"present.txt": b"x"})

    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: store.head(bucket, "missing.txt"),
        lambda: store.download(bucket, "missing.txt", tmp_path / "m", max_bytes=9),
    ]
    for call in calls:
        with pytest.raises(ObjectFetchFailed) as caught:
            await call()
        # HEAD answers have no body: S3 tells a missing key from a missing bucket only by 404.
        assert_actionable(
            caught.value, s3_server.port, f"s3://{bucket}/missing.txt", "no such key", "S3 error 404"
        )
    assert not (tmp_path / "m").exists()


async def test_missing_bucket(s3_server: S3Server, store: S3ObjectStore) -> None:
    with pytest.raises(ObjectFetchFailed) as caught:
        await store.head("ragd-no-such-bucket", "doc.pdf")
    assert_actionable(caught.value, s3_server.port, "s3://ragd-no-such-bucket/doc.pdf", "S3 error 404")

    with pytest.raises(ObjectFetchFailed) as caught:
        await anext(store.list("ragd-no-such-bucket", "docs/"))
    assert_actionable(
        caught.value,
        s3_server.port,
        "s3://ragd-no-such-bucket/docs/",
        "no such bucket",
        "S3 error NoSuchBucket",
    )


async def test_unknown_access_key(s3_server: S3Server, store: S3ObjectStore) -> None:
    bucket = s3_server.bucket({"k": b"v"})

    with s3_server.enforce_auth(), pytest.raises(ObjectFetchFailed) as caught:
        await anext(store.list(bucket))

    assert_actionable(caught.value, s3_server.port, f"s3://{bucket}/", "S3 error InvalidAccessKeyId")
    assert "RAGD_S3__ACCESS_KEY_ID" in str(caught.value.hint)


async def test_access_denied_and_wrong_secret(s3_server: S3Server) -> None:
    bucket = s3_server.bucket({"k": b"v"})
    key_id, secret = s3_server.user_without_access()
    no_policy = s3_server.settings(access_key_id=key_id, secret_access_key=SecretStr(secret))
    wrong_secret = s3_server.settings(access_key_id=key_id, secret_access_key=SecretStr("not-the-secret"))

    with s3_server.enforce_auth():
        async with await S3ObjectStore.open(no_policy) as store:
            with pytest.raises(ObjectFetchFailed) as head_denied:
                await store.head(bucket, "k")
            with pytest.raises(ObjectFetchFailed) as list_denied:
                await anext(store.list(bucket))
        async with await S3ObjectStore.open(wrong_secret) as store:
            with pytest.raises(ObjectFetchFailed) as bad_signature:
                await anext(store.list(bucket))

    assert_actionable(head_denied.value, s3_server.port, f"s3://{bucket}/k", "access denied", "S3 error 403")
    assert_actionable(list_denied.value, s3_server.port, "access denied", "S3 error AccessDenied")
    assert_actionable(bad_signature.value, s3_server.port, "S3 error SignatureDoesNotMatch")
    for err in (head_denied.value, list_denied.value, bad_signature.value):
        assert key_id not in str(err)
        assert secret not in str(err)


async def test_no_credentials_anywhere(s3_server: S3Server) -> None:
    # The fixture hides the machine's AWS variables and files, so the default chain finds nothing.
    settings = s3_server.settings(access_key_id=None, secret_access_key=None)

    async with await S3ObjectStore.open(settings) as store:
        with pytest.raises(ObjectFetchFailed) as caught:
            await store.head("bucket", "key")

    assert_actionable(caught.value, s3_server.port, "s3://bucket/key", "no S3 credentials")


# -- the network (scripted server, closed ports) ---------------------------------------------------


async def test_unreachable_endpoint_fails_within_seconds(s3_server: S3Server) -> None:
    port = unused_loopback_port()
    settings = s3_server.settings(endpoint_url=f"http://127.0.0.1:{port}", timeout_s=2.0)

    started = time.monotonic()
    async with await S3ObjectStore.open(settings) as store:
        with pytest.raises(ObjectFetchFailed) as caught:
            await store.head("bucket", "doc.pdf")

    assert time.monotonic() - started < 5.0
    assert_actionable(caught.value, port, "s3://bucket/doc.pdf", "could not be reached")
    assert "RAGD_S3__ENDPOINT_URL" in str(caught.value.hint)


async def test_a_server_that_does_not_answer_times_out(
    s3_server: S3Server, scripted_server: ScriptedServer
) -> None:
    scripted_server.on("GET", "/bkt", lambda _: Reply(200, LIST_RESULT, XML, delay_s=30))
    settings = s3_server.settings(endpoint_url=scripted_server.url, timeout_s=0.3)

    started = time.monotonic()
    async with await S3ObjectStore.open(settings, max_attempts=1) as store:
        with pytest.raises(ObjectFetchFailed) as caught:
            await anext(store.list("bkt"))

    assert time.monotonic() - started < 5.0
    assert_actionable(caught.value, scripted_server.port, "s3://bkt/", "did not answer within 0.3 s")
    assert "RAGD_S3__TIMEOUT_S" in str(caught.value.hint)
    assert len(await scripted_server.received("GET", "/bkt")) == 1  # one attempt, not retried


async def test_persistent_server_errors_fail_after_three_attempts(
    s3_server: S3Server, scripted_server: ScriptedServer
) -> None:
    oops = s3_error(500, "InternalError", f"internal error at {scripted_server.url}")
    scripted_server.expect("GET", "/bkt", oops, oops, oops)

    async with await S3ObjectStore.open(s3_server.settings(endpoint_url=scripted_server.url)) as store:
        with pytest.raises(ObjectFetchFailed) as caught:
            await anext(store.list("bkt", "docs/"))

    assert_actionable(caught.value, scripted_server.port, "s3://bkt/docs/", "S3 error InternalError")
    scripted_server.verify()  # three attempts were made (retries are on), and no fourth


async def test_dropped_connections(s3_server: S3Server, scripted_server: ScriptedServer) -> None:
    scripted_server.on("GET", "/bkt", lambda _: Reply(drop=True))
    settings = s3_server.settings(endpoint_url=scripted_server.url)

    async with await S3ObjectStore.open(settings, max_attempts=1) as store:
        with pytest.raises(ObjectFetchFailed) as caught:
            await anext(store.list("bkt"))

    assert_actionable(caught.value, scripted_server.port, "s3://bkt/", "could not be reached")


# -- refused before any request -----------------------------------------------------------------------


async def test_an_invalid_bucket_name_is_a_bad_request(s3_server: S3Server, store: S3ObjectStore) -> None:
    before = len(s3_server.requests)

    with pytest.raises(InvalidRequest) as caught:
        await store.head("no/slashes", "key")

    assert caught.value.code == "INVALID_REQUEST"
    assert "s3://no/slashes/key" in caught.value.message
    assert len(s3_server.requests) == before


@pytest.mark.parametrize(
    "fields",
    [
        {"access_key_id": "only-the-id", "secret_access_key": None},
        {"access_key_id": None, "secret_access_key": SecretStr("only-the-secret")},
    ],
)
async def test_half_the_credentials_is_a_configuration_error(fields: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError) as caught:
        await S3ObjectStore.open(S3Settings.model_validate(fields))

    assert "RAGD_S3__ACCESS_KEY_ID" in caught.value.message
    assert "only-the" not in str(caught.value)


async def test_an_endpoint_botocore_refuses_is_a_configuration_error() -> None:
    settings = S3Settings(
        endpoint_url="minio.internal:9000", access_key_id="k", secret_access_key=SecretStr("s")
    )

    with pytest.raises(ConfigurationError) as caught:
        await S3ObjectStore.open(settings)

    assert "RAGD_S3__ENDPOINT_URL" in str(caught.value)
    assert "minio.internal" not in caught.value.message
