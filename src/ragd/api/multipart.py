"""Streaming ``multipart/form-data``: file parts go straight to temporary files, size-checked as they arrive.

A request body is parsed chunk by chunk with python-multipart's streaming parser,
so an upload never sits whole in memory, and one that passes the size limit is
refused (413) as soon as the limit is crossed — not after it has been spooled.
Text fields are bounded too, and a NUL in one (or in a file name) is ``INVALID_TEXT``
(:mod:`ragd.api.text_check` says why).  Temporary files live in a directory the caller
owns and removes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header

from ragd.errors import InvalidRequest, InvalidText, PayloadTooLarge

MAX_FIELD_BYTES = 64 * 1024
MAX_PARTS = 200


@dataclass(frozen=True, slots=True)
class UploadedFile:
    field: str
    filename: str
    path: Path
    size: int
    content_type: str | None


@dataclass(slots=True)
class Form:
    fields: dict[str, str] = field(default_factory=dict)
    files: list[UploadedFile] = field(default_factory=list)

    def file(self, name: str) -> UploadedFile | None:
        return next((f for f in self.files if f.field == name), None)


@dataclass(slots=True)
class _Part:
    headers: dict[str, str] = field(default_factory=dict)
    name: str = ""
    filename: str | None = None
    content_type: str | None = None
    buffer: bytearray = field(default_factory=bytearray)
    sink: IO[bytes] | None = None
    path: Path | None = None
    size: int = 0


class _FormBuilder:
    """Parser callbacks: collect headers, route data to a field buffer or a temp file."""

    def __init__(self, tmp_dir: Path, max_file_bytes: int) -> None:
        self.form = Form()
        self._tmp = tmp_dir
        self._max_file = max_file_bytes
        self._part = _Part()
        self._header_field = bytearray()
        self._header_value = bytearray()
        self._parts = 0

    def callbacks(self) -> dict[str, object]:
        return {
            "on_part_begin": self._begin,
            "on_header_field": lambda d, s, e: self._header_field.extend(d[s:e]),
            "on_header_value": lambda d, s, e: self._header_value.extend(d[s:e]),
            "on_header_end": self._header_end,
            "on_headers_finished": self._headers_done,
            "on_part_data": self._data,
            "on_part_end": self._end,
        }

    def _begin(self) -> None:
        self._parts += 1
        if self._parts > MAX_PARTS:
            raise InvalidRequest(f"multipart request has more than {MAX_PARTS} parts")
        self._part = _Part()

    def _header_end(self) -> None:
        name = self._header_field.decode("latin-1").strip().lower()
        # latin-1 is byte-transparent: parse_options_header re-encodes it, and the
        # UTF-8 that clients send in filenames is decoded from those bytes below.
        self._part.headers[name] = self._header_value.decode("latin-1").strip()
        self._header_field.clear()
        self._header_value.clear()

    def _headers_done(self) -> None:
        part = self._part
        _, params = parse_options_header(part.headers.get("content-disposition", ""))
        part.name = params.get(b"name", b"").decode("utf-8", "replace")
        raw_filename = params.get(b"filename")
        part.content_type = part.headers.get("content-type") or None
        if raw_filename is not None:
            part.filename = _text(raw_filename.decode("utf-8", "replace"), "a file name")
            part.path = self._tmp / f"upload-{self._parts}"
            part.sink = part.path.open("wb")

    def _data(self, data: bytes, start: int, end: int) -> None:
        part = self._part
        part.size += end - start
        if part.sink is not None:
            if part.size > self._max_file:
                raise PayloadTooLarge(
                    f"upload exceeds max_upload_bytes={self._max_file}",
                    hint="raise RAGD_EXTRACT__MAX_FILE_BYTES",
                )
            part.sink.write(data[start:end])
        else:
            if part.size > MAX_FIELD_BYTES:
                raise InvalidRequest(f"form field {part.name!r} exceeds {MAX_FIELD_BYTES} bytes")
            part.buffer.extend(data[start:end])

    def _end(self) -> None:
        part = self._part
        if part.sink is not None and part.path is not None:
            part.sink.close()
            self.form.files.append(
                UploadedFile(part.name, part.filename or "", part.path, part.size, part.content_type)
            )
        else:
            self.form.fields[part.name] = _text(
                part.buffer.decode("utf-8", "replace"), f"field {part.name!r}"
            )

    def close(self) -> None:
        if self._part.sink is not None:
            self._part.sink.close()


def _text(value: str, what: str) -> str:
    """A decoded text part (no surrogate survives decoding with replacement, but NUL does)."""
    if "\x00" in value:
        raise InvalidText(f"{what} holds a NUL character")
    return value


def boundary_of(content_type: str) -> bytes:
    _, params = parse_options_header(content_type)
    boundary = params.get(b"boundary")
    if not boundary:
        raise InvalidRequest("multipart request without a boundary in its Content-Type")
    return boundary


async def read_form(
    chunks: AsyncIterator[bytes], content_type: str, *, tmp_dir: Path, max_file_bytes: int
) -> Form:
    """Parse a multipart body; file parts are written under ``tmp_dir``."""
    builder = _FormBuilder(tmp_dir, max_file_bytes)
    parser = MultipartParser(boundary_of(content_type), builder.callbacks())  # type: ignore[arg-type]
    try:
        async for chunk in chunks:
            if chunk:
                await asyncio.to_thread(parser.write, chunk)
        parser.finalize()
    except MultipartParseError as exc:
        raise InvalidRequest(f"malformed multipart body: {exc}") from exc
    finally:
        builder.close()
    return builder.form
