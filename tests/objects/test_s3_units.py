"""The chunk loop on its own, and the adapter without the ``s3`` extra installed."""

from __future__ import annotations

import importlib
import io
import sys
from collections.abc import AsyncIterator

import pytest

import ragd.objects
from ragd.errors import MissingDependency, PayloadTooLarge
from ragd.objects.s3 import write_chunks
from ragd.settings import S3Settings


class Chunks:
    """An async chunk source that counts how many chunks were pulled from it."""

    def __init__(self, *chunks: bytes) -> None:
        self.chunks = chunks
        self.pulled = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            self.pulled += 1
            yield chunk


async def test_write_chunks_writes_each_chunk_as_it_arrives() -> None:
    source = Chunks(b"abc", b"", b"defg", b"h")
    sink = io.BytesIO()

    written = await write_chunks(source, sink, max_bytes=8, source="s3://b/k")

    assert written == 8
    assert sink.getvalue() == b"abcdefgh"
    assert source.pulled == 4


async def test_write_chunks_stops_at_the_first_chunk_past_the_limit() -> None:
    source = Chunks(b"1234", b"5678", b"9abc", b"never pulled")
    sink = io.BytesIO()

    with pytest.raises(PayloadTooLarge) as caught:
        await write_chunks(source, sink, max_bytes=10, source="s3://b/k")

    assert sink.getvalue() == b"12345678"  # the chunk that crossed the limit is not written
    assert source.pulled == 3  # and nothing after it is read
    assert "s3://b/k" in caught.value.message
    assert "10-byte limit" in caught.value.message
    assert "RAGD_EXTRACT__MAX_FILE_BYTES" in str(caught.value.hint)


async def test_without_the_extra_the_module_imports_and_open_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in (
        "aiobotocore",
        "aiobotocore.config",
        "aiobotocore.session",
        "botocore",
        "botocore.exceptions",
    ):
        monkeypatch.setitem(sys.modules, name, None)  # "import aiobotocore" now raises ImportError
    monkeypatch.delitem(sys.modules, "ragd.objects.s3")
    monkeypatch.setattr(ragd.objects, "s3", None, raising=False)  # restored after the test

    fresh = importlib.import_module("ragd.objects.s3")  # importing never needs the SDK

    with pytest.raises(MissingDependency) as caught:
        await fresh.S3ObjectStore.open(S3Settings())

    assert caught.value.code == "MISSING_DEPENDENCY"
    assert "aiobotocore" in caught.value.message
    assert caught.value.hint == "install it with: pip install 'ragd[s3]'"
    assert isinstance(caught.value.__cause__, ImportError)
