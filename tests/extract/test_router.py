"""The routing extractor: limits, empty files, unsupported types, which reader runs; the port contract."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ragd.errors import EmptyDocument, NotFound, PayloadTooLarge, UnsupportedType
from ragd.extract.base import Extractor
from ragd.extract.kreuzberg_extractor import KreuzbergExtractor
from ragd.extract.mime import FileKind
from ragd.extract.router import RoutingExtractor, build_extractor
from ragd.extract.tabular import CsvExtractor
from ragd.extract.text_extractor import TextExtractor
from ragd.settings import ExtractSettings
from ragd.types import Blob, Document
from tests.extract.builders import build_docx, build_pdf
from tests.extract.conftest import no_ocr


class _Refuses:
    """An extractor that must never be reached."""

    name = "refuses"

    def extract(self, blob: Blob) -> Document:
        raise AssertionError(f"{blob.name} reached an extractor")


def test_files_over_the_limit_are_refused_before_they_are_read(tmp_path: Path) -> None:
    big = tmp_path / "big.pdf"
    with big.open("wb") as handle:
        handle.truncate(4 * 1024**3)  # sparse: reading it would take seconds and 4 GiB
    router = RoutingExtractor(
        {kind: _Refuses() for kind in FileKind}, ExtractSettings(max_file_bytes=1024 * 1024)
    )
    started = time.monotonic()
    with pytest.raises(PayloadTooLarge) as caught:
        router.extract(Blob(name="big.pdf", path=big))
    assert time.monotonic() - started < 0.5
    assert caught.value.http_status == 413
    assert "RAGD_EXTRACT__MAX_FILE_BYTES" in str(caught.value)


def test_in_memory_data_over_the_limit_is_refused() -> None:
    router = build_extractor(ExtractSettings(max_file_bytes=10))
    with pytest.raises(PayloadTooLarge):
        router.extract(Blob(name="a.txt", data=b"eleven byte"))


def test_zero_byte_files_are_empty_whatever_their_type() -> None:
    router = RoutingExtractor({kind: _Refuses() for kind in FileKind}, ExtractSettings(max_file_bytes=100))
    for name in ("a.pdf", "a.docx", "a.txt", "noname"):
        with pytest.raises(EmptyDocument):
            router.extract(Blob(name=name, data=b""))


def test_whitespace_only_text_file_is_empty(extractor: RoutingExtractor) -> None:
    with pytest.raises(EmptyDocument):
        extractor.extract(Blob(name="blank.md", data=b"\n \t \n"))


def test_unsupported_binary_lists_what_is_supported(extractor: RoutingExtractor) -> None:
    with pytest.raises(UnsupportedType) as caught:
        extractor.extract(Blob(name="archive.7z", data=b"7z\xbc\xaf\x27\x1c" + bytes(range(256)) * 8))
    message = str(caught.value)
    assert caught.value.http_status == 415
    for kind in ("PDF", "DOCX", "CSV", "plain text"):
        assert kind in message


def test_a_kind_without_a_reader_is_unsupported() -> None:
    router = RoutingExtractor({FileKind.TEXT: TextExtractor()}, ExtractSettings(max_file_bytes=1000))
    with pytest.raises(UnsupportedType, match="no reader for PDF"):
        router.extract(Blob(name="a.pdf", data=build_pdf(["x"])))


def test_missing_file_is_not_found(extractor: RoutingExtractor, tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        extractor.extract(Blob(name="gone.txt", path=tmp_path / "gone.txt"))


@pytest.mark.parametrize(
    ("name", "data", "engine"),
    [
        ("notes.md", b"# Notes\n\nhello\n", "text"),
        ("script.py", b"print('hi')\n", "text"),
        ("unknown.ext", b"plain words in a file\n", "text"),
        ("table.csv", b"a,b\n1,2\n", "csv"),
        ("table.tsv", b"a\tb\n1\t2\n", "csv"),
        ("doc.pdf", build_pdf(["hello pdf"]), "kreuzberg"),
        ("doc.docx", build_docx([("p", "hello docx")]), "kreuzberg"),
        ("misnamed.txt", build_pdf(["hello pdf"]), "kreuzberg"),
    ],
)
def test_each_kind_goes_to_its_reader(
    extractor: RoutingExtractor, name: str, data: bytes, engine: str
) -> None:
    document = extractor.extract(Blob(name=name, data=data))
    assert document.extractor == engine


def test_file_backed_blobs_are_read_from_disk(extractor: RoutingExtractor, tmp_path: Path) -> None:
    path = tmp_path / "doc.pdf"
    path.write_bytes(build_pdf(["from disk"]))
    assert "from disk" in extractor.extract(Blob(name="doc.pdf", path=path)).text


CONTRACT_CASES: list[tuple[Extractor, Blob, Blob]] = [
    (TextExtractor(), Blob(name="a.md", data=b"# A\n\ntext\n"), Blob(name="e.md", data=b" \n")),
    (CsvExtractor(), Blob(name="a.csv", data=b"h1,h2\n1,2\n"), Blob(name="e.csv", data=b",,\n")),
    (
        KreuzbergExtractor(ExtractSettings(), ocr_check=no_ocr),
        Blob(name="a.pdf", data=build_pdf(["page"])),
        Blob(name="e.pdf", data=build_pdf([""])),
    ),
    (
        build_extractor(ExtractSettings(), ocr_check=no_ocr),
        Blob(name="a.docx", data=build_docx([("p", "x")])),
        Blob(name="e.docx", data=build_docx([("p", "  ")])),
    ),
]


@pytest.mark.parametrize(("extractor", "blob", "blank"), CONTRACT_CASES, ids=lambda v: type(v).__name__)
def test_every_extractor_keeps_the_port_contract(extractor: Extractor, blob: Blob, blank: Blob) -> None:
    assert isinstance(extractor.name, str)
    assert extractor.name
    document = extractor.extract(blob)
    assert isinstance(document, Document)
    assert document.text.strip()
    assert document.extractor in {"text", "csv", "kreuzberg"}
    assert document.mime_type
    assert all(value not in (None, "", []) for value in document.meta.values())
    for before, after in zip(document.pages, document.pages[1:], strict=False):
        assert before.end == after.start
    with pytest.raises(EmptyDocument):
        extractor.extract(blank)
