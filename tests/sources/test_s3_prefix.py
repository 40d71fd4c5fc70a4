"""S3PrefixSource over the real S3 adapter and a real S3 server (moto on loopback)."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ragd.errors import Forbidden, NotFound, ObjectFetchFailed, PayloadTooLarge
from ragd.objects.s3 import S3ObjectStore
from ragd.sources.base import ItemFailure, SourceItem, SourceReader
from ragd.sources.s3_prefix import S3PrefixSource
from ragd.types import Blob
from tests.support.s3_server import S3Server, s3_server

__all__ = ["s3_server"]

LIMIT = 1000


@pytest.fixture
async def store(s3_server: S3Server) -> AsyncIterator[S3ObjectStore]:
    """The real adapter on the session's moto server, two keys per page so listings paginate."""
    opened = await S3ObjectStore.open(s3_server.settings(), page_size=2)
    yield opened
    await opened.aclose()


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    return tmp_path / "scratch"  # created by the source on first load


def etag(body: bytes) -> str:
    return hashlib.md5(body).hexdigest()  # a single-part upload's ETag


async def scan(source: SourceReader) -> list[SourceItem | ItemFailure]:
    return [entry async for entry in source.scan()]


def leftovers(scratch: Path) -> list[Path]:
    return sorted(scratch.iterdir()) if scratch.exists() else []


async def test_scan_lists_objects_under_the_prefix(
    s3_server: S3Server, store: S3ObjectStore, scratch: Path
) -> None:
    bucket = s3_server.bucket(
        {
            "docs/": b"",  # console-made "folders"
            "docs/sub/": b"",
            "docs/a.txt": b"alpha",
            "docs/sub/b.md": b"# beta",
            "docs/sub/c.pdf": b"%PDF-1.7 gamma",
            "other/d.txt": b"not under the prefix",
            "docsX/e.txt": b"nor this one",
        }
    )
    source = S3PrefixSource(store, bucket, "docs/", max_bytes=LIMIT, scratch_dir=scratch)
    assert await scan(source) == [
        SourceItem(key="docs/a.txt", fingerprint=etag(b"alpha"), name="a.txt", size=5),
        SourceItem(key="docs/sub/b.md", fingerprint=etag(b"# beta"), name="b.md", size=6),
        SourceItem(key="docs/sub/c.pdf", fingerprint=etag(b"%PDF-1.7 gamma"), name="c.pdf", size=14),
    ]
    assert leftovers(scratch) == []


async def test_overwrites_change_the_etag_and_deletions_disappear(
    s3_server: S3Server, store: S3ObjectStore, scratch: Path
) -> None:
    bucket = s3_server.bucket({"p/a.txt": b"one", "p/b.txt": b"bee"})
    source = S3PrefixSource(store, bucket, "p/", max_bytes=LIMIT, scratch_dir=scratch)
    before = {i.key: i.fingerprint for i in await scan(source) if isinstance(i, SourceItem)}
    s3_server.put(bucket, "p/a.txt", b"two")
    s3_server.client.delete_object(Bucket=bucket, Key="p/b.txt")
    after = {i.key: i.fingerprint for i in await scan(source) if isinstance(i, SourceItem)}
    assert before == {"p/a.txt": etag(b"one"), "p/b.txt": etag(b"bee")}
    assert after == {"p/a.txt": etag(b"two")}


async def test_an_object_over_the_limit_is_an_item_failure(
    s3_server: S3Server, store: S3ObjectStore, scratch: Path
) -> None:
    bucket = s3_server.bucket({"big.bin": b"x" * (LIMIT + 1), "ok.txt": b"fine"})
    source = S3PrefixSource(store, bucket, "", max_bytes=LIMIT, scratch_dir=scratch)
    assert await scan(source) == [
        ItemFailure("big.bin", "FILE_TOO_LARGE", "1,001 bytes, over the 1,000-byte limit"),
        SourceItem(key="ok.txt", fingerprint=etag(b"fine"), name="ok.txt", size=4),
    ]


async def test_load_downloads_to_a_scratch_file_that_release_deletes(
    s3_server: S3Server, store: S3ObjectStore, scratch: Path
) -> None:
    body = "naïve café\n".encode() + bytes(range(256))
    bucket = s3_server.bucket({"docs/report.final.pdf": body, "docs/notes": b"no suffix"})
    source = S3PrefixSource(store, bucket, "docs/", max_bytes=LIMIT, scratch_dir=scratch)
    [notes, pdf] = [i for i in await scan(source) if isinstance(i, SourceItem)]

    blob = await source.load(pdf)
    assert blob.name == "report.final.pdf"
    assert blob.read() == body
    assert blob.path is not None
    assert blob.path.parent == scratch
    assert blob.path.suffix == ".pdf"
    assert blob.path.stat().st_mode & 0o077 == 0  # private to ragd
    await source.release(blob)
    assert leftovers(scratch) == []

    async with source.loaded(notes) as plain:
        assert plain.read() == b"no suffix"
        assert leftovers(scratch) == [plain.path]
    assert leftovers(scratch) == []


async def test_aclose_deletes_what_was_never_released(
    s3_server: S3Server, store: S3ObjectStore, scratch: Path, tmp_path: Path
) -> None:
    bucket = s3_server.bucket({"a.txt": b"a", "b.txt": b"b"})
    source = S3PrefixSource(store, bucket, "", max_bytes=LIMIT, scratch_dir=scratch)
    items = [i for i in await scan(source) if isinstance(i, SourceItem)]
    for item in items:
        await source.load(item)
    assert len(leftovers(scratch)) == 2
    foreign = tmp_path / "mine.txt"
    foreign.write_text("not the source's")
    await source.release(Blob(name="mine.txt", path=foreign))  # not issued: left alone
    assert foreign.exists()
    await source.aclose()
    assert leftovers(scratch) == []
    assert await store.head(bucket, "a.txt")  # the store stays open


async def test_a_vanished_object_is_not_found_and_leaves_no_file(
    s3_server: S3Server, store: S3ObjectStore, scratch: Path
) -> None:
    bucket = s3_server.bucket({"p/a.txt": b"here", "p/a.txt.bak": b"a sibling that sorts after"})
    source = S3PrefixSource(store, bucket, "p/", max_bytes=LIMIT, scratch_dir=scratch)
    [item, _] = [i for i in await scan(source) if isinstance(i, SourceItem)]
    s3_server.client.delete_object(Bucket=bucket, Key="p/a.txt")
    with pytest.raises(NotFound, match="no longer exists"):
        await source.load(item)
    assert leftovers(scratch) == []


async def test_an_object_grown_past_the_limit_fails_and_leaves_no_file(
    s3_server: S3Server, store: S3ObjectStore, scratch: Path
) -> None:
    bucket = s3_server.bucket({"a.txt": b"small"})
    source = S3PrefixSource(store, bucket, "", max_bytes=LIMIT, scratch_dir=scratch)
    [item] = await scan(source)
    assert isinstance(item, SourceItem)
    s3_server.put(bucket, "a.txt", b"y" * (LIMIT + 1))
    with pytest.raises(PayloadTooLarge):
        await source.load(item)
    assert leftovers(scratch) == []


@pytest.mark.parametrize("key", ["other/secret.txt", "docs/", "docs"])
async def test_load_refuses_keys_outside_the_prefix(
    s3_server: S3Server, store: S3ObjectStore, scratch: Path, key: str
) -> None:
    bucket = s3_server.bucket({"other/secret.txt": b"secret", "docs/a.txt": b"a"})
    source = S3PrefixSource(store, bucket, "docs/", max_bytes=LIMIT, scratch_dir=scratch)
    before = len(s3_server.requests_for(bucket))
    with pytest.raises(Forbidden):
        await source.load(SourceItem(key=key, fingerprint="", name="x"))
    assert len(s3_server.requests_for(bucket)) == before  # nothing was fetched
    assert leftovers(scratch) == []


async def test_a_missing_bucket_fails_the_scan(
    s3_server: S3Server, store: S3ObjectStore, scratch: Path
) -> None:
    source = S3PrefixSource(store, "ragd-no-such-bucket", "", max_bytes=LIMIT, scratch_dir=scratch)
    with pytest.raises(ObjectFetchFailed, match="no such bucket"):
        await scan(source)
