"""The streaming multipart reader: parts to temp files, limits enforced as bytes arrive."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from ragd.api.multipart import MAX_FIELD_BYTES, read_form
from ragd.errors import InvalidRequest, PayloadTooLarge


def encode(fields: dict[str, str], files: dict[str, tuple[str, bytes]]) -> tuple[bytes, str]:
    """A real multipart body, as httpx (and requests) would send it."""
    request = httpx.Request("POST", "http://x/", data=fields, files=files)
    return request.read(), request.headers["content-type"]


class Body:
    """An async body in fixed-size chunks that records how much was consumed."""

    def __init__(self, data: bytes, chunk: int = 1024) -> None:
        self.data, self.chunk, self.consumed = data, chunk, 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for start in range(0, len(self.data), self.chunk):
            piece = self.data[start : start + self.chunk]
            self.consumed += len(piece)
            yield piece


async def test_fields_and_files_are_parsed_and_files_land_on_disk(tmp_path: Path) -> None:
    data, ctype = encode({"file_id": " f1 ", "note": "héllo"}, {"file": ("../../etc/passwd", b"A" * 5000)})
    form = await read_form(Body(data).__aiter__(), ctype, tmp_dir=tmp_path, max_file_bytes=10_000)
    assert form.fields == {"file_id": " f1 ", "note": "héllo"}
    upload = form.file("file")
    assert upload is not None
    assert upload.filename == "../../etc/passwd"  # kept as data, never used as a path
    assert upload.path.parent == tmp_path
    assert upload.path.read_bytes() == b"A" * 5000
    assert upload.size == 5000


async def test_an_oversize_file_is_refused_as_soon_as_it_crosses_the_limit(tmp_path: Path) -> None:
    data, ctype = encode({}, {"file": ("big.bin", b"B" * 1_000_000)})
    body = Body(data, chunk=4096)
    with pytest.raises(PayloadTooLarge, match="max_upload_bytes=10000"):
        await read_form(body.__aiter__(), ctype, tmp_dir=tmp_path, max_file_bytes=10_000)
    assert body.consumed < 20_000  # stopped reading right after the limit, not at the end of the body


async def test_an_oversize_field_is_refused(tmp_path: Path) -> None:
    data, ctype = encode({"x": "y" * (MAX_FIELD_BYTES + 1)}, {"file": ("a", b"b")})
    with pytest.raises(InvalidRequest, match="exceeds"):
        await read_form(Body(data).__aiter__(), ctype, tmp_dir=tmp_path, max_file_bytes=10)


async def test_a_missing_boundary_is_a_clear_400(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest, match="boundary"):
        await read_form(Body(b"x").__aiter__(), "multipart/form-data", tmp_dir=tmp_path, max_file_bytes=10)


async def test_garbage_is_malformed_not_a_crash(tmp_path: Path) -> None:
    ctype = "multipart/form-data; boundary=abc"
    with pytest.raises(InvalidRequest):
        await read_form(
            Body(b"--abc\r\nno headers end" + b"\x00" * 100).__aiter__(),
            ctype,
            tmp_dir=tmp_path,
            max_file_bytes=10,
        )


async def test_a_truncated_body_loses_the_unfinished_part(tmp_path: Path) -> None:
    data, ctype = encode({"file_id": "f"}, {"file": ("a.txt", b"C" * 3000)})
    form = await read_form(Body(data[:-500]).__aiter__(), ctype, tmp_dir=tmp_path, max_file_bytes=10_000)
    assert form.file("file") is None  # the route then answers 400 "missing 'file' field"


@pytest.mark.parametrize("name", ["résumé.md", "日本語の報告.pdf", "emoji 😀.txt"])
async def test_utf8_filenames_and_field_names_survive(tmp_path: Path, name: str) -> None:
    """Browsers and requests send UTF-8 in Content-Disposition (it crashed the parser: found by fuzzing)."""
    data, ctype = encode({"naïve": "ü"}, {"file": (name, b"x")})
    form = await read_form(Body(data).__aiter__(), ctype, tmp_dir=tmp_path, max_file_bytes=10)
    upload = form.file("file")
    assert upload is not None
    assert upload.filename == name
    assert form.fields == {"naïve": "ü"}
