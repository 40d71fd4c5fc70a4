"""S3ObjectStore against a real S3 server (moto on loopback): head, download, list, lifecycle."""

from __future__ import annotations

import asyncio
import hashlib
import random
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from ragd.errors import Forbidden, ObjectFetchFailed, PayloadTooLarge
from ragd.objects import s3
from ragd.objects.base import ObjectInfo, ObjectStore
from ragd.objects.s3 import S3ObjectStore
from tests.support.s3_server import S3Server

MiB = 1 << 20


def _body(size: int, seed: int = 7) -> bytes:
    return random.Random(seed).randbytes(size)


def _new_requests(server: S3Server, bucket: str, before: int) -> list[str]:
    return [f"{r.method} {r.path}" for r in server.requests_for(bucket)[before:]]


async def test_the_store_satisfies_the_port(store: S3ObjectStore) -> None:
    port: ObjectStore = store
    assert port is store


async def test_head_gives_size_and_unquoted_etag(s3_server: S3Server, store: S3ObjectStore) -> None:
    body = b"hello, object store\n"
    bucket = s3_server.bucket({"docs/hello.txt": body})

    info = await store.head(bucket, "docs/hello.txt")

    assert info == ObjectInfo(key="docs/hello.txt", size=len(body), etag=hashlib.md5(body).hexdigest())


async def test_download_small_file_byte_exact(
    s3_server: S3Server, store: S3ObjectStore, tmp_path: Path
) -> None:
    body = "naïve café — ünïcode\n".encode() + bytes(range(256))
    bucket = s3_server.bucket({"a/b c.bin": body})
    before = len(s3_server.requests_for(bucket))
    dest = tmp_path / "out.bin"

    info = await store.download(bucket, "a/b c.bin", dest, max_bytes=1024)

    assert dest.read_bytes() == body
    assert info == ObjectInfo(key="a/b c.bin", size=len(body), etag=hashlib.md5(body).hexdigest())
    assert _new_requests(s3_server, bucket, before) == [
        f"HEAD /{bucket}/a/b c.bin",
        f"GET /{bucket}/a/b c.bin",
    ]


async def test_download_replaces_an_existing_file(
    s3_server: S3Server, store: S3ObjectStore, tmp_path: Path
) -> None:
    bucket = s3_server.bucket({"k": b"new"})
    dest = tmp_path / "out"
    dest.write_bytes(b"old content, longer than the new one")

    await store.download(bucket, "k", dest, max_bytes=100)

    assert dest.read_bytes() == b"new"


async def test_download_streams_a_multi_megabyte_object_in_chunks(
    s3_server: S3Server, store: S3ObjectStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = _body(5 * MiB + 12_345)
    bucket = s3_server.bucket({"big.bin": body})
    seen: list[int] = []
    real_write_chunks = s3.write_chunks

    async def recording_write_chunks(chunks: AsyncIterable[bytes], fh: BinaryIO, **kwargs: Any) -> int:
        async def recorded() -> AsyncIterator[bytes]:
            async for chunk in chunks:
                seen.append(len(chunk))
                yield chunk

        return await real_write_chunks(recorded(), fh, **kwargs)

    monkeypatch.setattr(s3, "write_chunks", recording_write_chunks)
    dest = tmp_path / "big.bin"

    info = await store.download(bucket, "big.bin", dest, max_bytes=len(body))  # exactly at the limit

    assert dest.read_bytes() == body
    assert info.size == len(body)
    assert sum(seen) == len(body)
    assert max(seen) <= s3.CHUNK_BYTES
    assert len(seen) >= 6  # never the whole object in one piece


async def test_download_over_the_limit_is_refused_by_head_before_any_get(
    s3_server: S3Server, store: S3ObjectStore, tmp_path: Path
) -> None:
    bucket = s3_server.bucket({"large.pdf": _body(3000)})
    before = len(s3_server.requests_for(bucket))
    dest = tmp_path / "large.pdf"

    with pytest.raises(PayloadTooLarge) as caught:
        await store.download(bucket, "large.pdf", dest, max_bytes=2999)

    err = caught.value
    assert err.code == "FILE_TOO_LARGE"
    assert err.http_status == 413
    assert "3,000 bytes" in err.message
    assert "2,999-byte limit" in err.message
    assert f"s3://{bucket}/large.pdf" in err.message
    assert err.hint is not None
    assert "RAGD_EXTRACT__MAX_FILE_BYTES" in err.hint
    assert _new_requests(s3_server, bucket, before) == [f"HEAD /{bucket}/large.pdf"]  # no GET was sent
    assert not dest.exists()


@pytest.mark.parametrize("failure", [PayloadTooLarge("more bytes than announced"), asyncio.CancelledError()])
async def test_a_failed_download_leaves_no_partial_file(
    s3_server: S3Server,
    store: S3ObjectStore,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    failure: BaseException,
) -> None:
    body = _body(3 * MiB)
    bucket = s3_server.bucket({"big.bin": body})
    dest = tmp_path / "big.bin"
    written_before_failure: list[int] = []

    async def failing_after_one_chunk(chunks: AsyncIterable[bytes], fh: BinaryIO, **kwargs: Any) -> int:
        async for chunk in chunks:
            fh.write(chunk)
            fh.flush()
            written_before_failure.append(dest.stat().st_size)
            raise failure
        raise AssertionError("the body was empty")

    monkeypatch.setattr(s3, "write_chunks", failing_after_one_chunk)

    with pytest.raises(type(failure)):
        await store.download(bucket, "big.bin", dest, max_bytes=len(body))

    assert written_before_failure[0] > 0  # a partial file did exist...
    assert not dest.exists()  # ...and was removed


async def test_an_object_replaced_between_head_and_get_fails_cleanly(
    s3_server: S3Server, store: S3ObjectStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bucket = s3_server.bucket({"doc.txt": b"version one"})
    real_head = store.head

    async def head_then_replace(bucket_: str, key: str) -> ObjectInfo:
        info = await real_head(bucket_, key)
        s3_server.put(bucket_, key, b"version two, longer")  # another writer wins the race
        return info

    monkeypatch.setattr(store, "head", head_then_replace)
    dest = tmp_path / "doc.txt"

    with pytest.raises(ObjectFetchFailed) as caught:
        await store.download(bucket, "doc.txt", dest, max_bytes=100)

    assert "changed while it was being downloaded" in caught.value.message
    assert "PreconditionFailed" in caught.value.message
    assert not dest.exists()


async def test_list_paginates_and_filters_by_prefix(s3_server: S3Server) -> None:
    objects = {f"docs/{i:02d}.md": f"document {i}".encode() for i in range(25)}
    objects |= {"docs/folder/": b"", "other/x.md": b"x", "docsx.md": b"not under docs/"}
    bucket = s3_server.bucket(objects)
    before = len(s3_server.requests_for(bucket))

    async with await S3ObjectStore.open(s3_server.settings(), page_size=10) as store:
        listed = [info async for info in store.list(bucket, "docs/")]

    assert [i.key for i in listed] == [f"docs/{i:02d}.md" for i in range(25)]  # the folder key skipped
    assert all(i.size == len(objects[i.key]) for i in listed)
    assert all(i.etag == hashlib.md5(objects[i.key]).hexdigest() for i in listed)
    pages = [r for r in s3_server.requests_for(bucket)[before:] if "list-type=2" in r.query]
    assert len(pages) == 3  # 26 keys under docs/, 10 per page
    assert all("max-keys=10" in r.query for r in pages)


async def test_list_without_prefix_and_of_an_empty_bucket(s3_server: S3Server, store: S3ObjectStore) -> None:
    bucket = s3_server.bucket({"b.txt": b"b", "a.txt": b"a"})
    empty = s3_server.bucket()

    assert [i.key async for i in store.list(bucket)] == ["a.txt", "b.txt"]
    assert [i async for i in store.list(empty)] == []


async def test_a_bucket_outside_allowed_buckets_is_refused_without_a_request(
    s3_server: S3Server, tmp_path: Path
) -> None:
    bucket = s3_server.bucket({"k": b"v"})
    allowed = s3_server.bucket({"k": b"v"})
    before = len(s3_server.requests_for(bucket))

    async with await S3ObjectStore.open(s3_server.settings(allowed_buckets=f"openwebui,{allowed}")) as store:
        assert (await store.head(allowed, "k")).size == 1
        calls: list[Callable[[], Awaitable[object]]] = [
            lambda: store.head(bucket, "k"),
            lambda: store.download(bucket, "k", tmp_path / "k", max_bytes=10),
            lambda: anext(store.list(bucket)),
        ]
        for call in calls:
            with pytest.raises(Forbidden) as caught:
                await call()
            assert caught.value.code == "FORBIDDEN"
            assert "RAGD_S3__ALLOWED_BUCKETS" in str(caught.value)

    assert s3_server.requests_for(bucket)[before:] == []


async def test_aclose_is_idempotent(s3_server: S3Server) -> None:
    store = await S3ObjectStore.open(s3_server.settings())
    bucket = s3_server.bucket({"k": b"v"})
    assert (await store.head(bucket, "k")).size == 1

    await store.aclose()
    await store.aclose()


async def test_open_makes_no_request(s3_server: S3Server) -> None:
    before = len(s3_server.requests)

    async with await S3ObjectStore.open(s3_server.settings()):
        pass

    assert len(s3_server.requests) == before
