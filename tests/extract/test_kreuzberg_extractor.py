"""kreuzberg-backed reading of files built in the test: structure, pages, OCR, typed errors."""

from __future__ import annotations

import time

import pytest

from ragd.errors import EmptyDocument, EncryptedDocument, ExtractionError, OcrUnavailable
from ragd.extract.kreuzberg_extractor import KreuzbergExtractor, squeeze_repeats
from ragd.extract.ocr import OcrStatus
from ragd.extract.router import RoutingExtractor, build_extractor
from ragd.settings import ExtractSettings
from ragd.types import Blob
from tests.extract.builders import (
    FIXTURES,
    SCANNED_PHRASES,
    blank_image,
    build_docx,
    build_image_pdf,
    build_pdf,
    build_png,
    build_xlsx,
)
from tests.extract.conftest import needs_tesseract, no_ocr

PAGES = ["Alpha page talks about apples.", "Bravo page mentions the zebra crossing.", "Charlie page ends it."]


def _cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def _ocr_must_not_be_asked(language: str) -> OcrStatus:
    raise AssertionError("the OCR check was consulted although OCR is off")


def test_pdf_pages_map_phrases_to_their_page(extractor: RoutingExtractor) -> None:
    document = extractor.extract(Blob(name="three.pdf", data=build_pdf(PAGES)))
    assert document.extractor == "kreuzberg"
    assert document.mime_type == "application/pdf"
    assert [span.page for span in document.pages] == [0, 1, 2]
    for page, phrase in enumerate(PAGES):
        assert document.page_at(document.text.index(phrase)) == page
        assert document.page_at(document.text.index(phrase) + len(phrase) - 1) == page
    assert document.meta["page_count"] == 3


def test_encrypted_pdf_is_an_encrypted_document(extractor: RoutingExtractor) -> None:
    with pytest.raises(EncryptedDocument, match="password-protected") as caught:
        extractor.extract(Blob(name="secret.pdf", data=build_pdf(["Secret plans"], user_password="s3cret")))
    assert "remove the password" in str(caught.value)


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("truncated.pdf", build_pdf(PAGES)[:300]),
        ("garbage.pdf", b"%PDF-1.7\n" + bytes(range(256)) * 4),
        ("garbage.docx", b"PK\x03\x04" + b"\x13" * 300),
        ("truncated.xlsx", build_xlsx({"S": [["a", "b"], [1, 2]]})[:200]),
        ("noise.pptx", bytes(range(256)) * 4),
    ],
)
def test_corrupt_files_fail_with_an_actionable_extraction_error(
    extractor: RoutingExtractor, name: str, data: bytes
) -> None:
    with pytest.raises(ExtractionError) as caught:
        extractor.extract(Blob(name=name, data=data))
    assert type(caught.value) is ExtractionError
    assert caught.value.__cause__ is not None  # kreuzberg's own error, translated at the boundary
    assert caught.value.code == "EXTRACTION_FAILED"
    assert name in str(caught.value)
    assert "corrupt" in str(caught.value)
    message = caught.value.message
    assert squeeze_repeats(message) == message  # a library's repeated cause chain is said once


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (
            "Invalid PDF: Pdfium: FormatError: Invalid PDF: Pdfium: FormatError",
            "Invalid PDF: Pdfium: FormatError",
        ),
        ("a: a: a: b", "a: b"),
        ("a: b: c", "a: b: c"),
        ("a: b: a", "a: b: a"),
        ("", ""),
    ],
)
def test_a_repeated_cause_chain_is_said_once(given: str, said: str) -> None:
    assert squeeze_repeats(given) == said


def test_blank_pdf_is_an_empty_document(extractor: RoutingExtractor) -> None:
    with pytest.raises(EmptyDocument):
        extractor.extract(Blob(name="blank.pdf", data=build_pdf(["", " "])))


def test_scanned_pdf_without_tesseract_says_how_to_enable_ocr(
    extractor_without_ocr: RoutingExtractor,
) -> None:
    with pytest.raises(OcrUnavailable) as caught:
        extractor_without_ocr.extract(Blob(name="scan.pdf", data=build_image_pdf([blank_image()])))
    message = str(caught.value)
    assert "apt-get install tesseract-ocr tesseract-ocr-eng" in message
    assert "RAGD_EXTRACT__OCR=auto" in message
    assert caught.value.code == "OCR_UNAVAILABLE"


def test_image_without_tesseract_is_ocr_unavailable(extractor_without_ocr: RoutingExtractor) -> None:
    with pytest.raises(OcrUnavailable, match="apt-get install") as caught:
        extractor_without_ocr.extract(Blob(name="photo.png", data=build_png()))
    # an image is called an image, not "scanned pages"
    assert caught.value.message.startswith("'photo.png' is an image and OCR is unavailable"), (
        caught.value.message
    )


def test_an_image_with_ocr_off_is_called_an_image() -> None:
    extractor = build_extractor(ExtractSettings(ocr="off"), ocr_check=_ocr_must_not_be_asked)
    with pytest.raises(OcrUnavailable) as caught:
        extractor.extract(Blob(name="photo.png", data=build_png()))
    assert caught.value.message == "'photo.png' is an image and OCR is switched off"


def test_ocr_off_refuses_scans_without_probing_for_tesseract() -> None:
    extractor = build_extractor(ExtractSettings(ocr="off"), ocr_check=_ocr_must_not_be_asked)
    with pytest.raises(OcrUnavailable, match="switched off") as caught:
        extractor.extract(Blob(name="scan.pdf", data=build_image_pdf([blank_image()])))
    assert "RAGD_EXTRACT__OCR=auto" in str(caught.value)


def test_ocr_for_a_language_without_data_names_the_package() -> None:
    extractor = build_extractor(ExtractSettings(ocr_language="xyz"))
    with pytest.raises(OcrUnavailable) as caught:
        extractor.extract(Blob(name="scan.pdf", data=build_image_pdf([blank_image()])))
    assert "tesseract-ocr-xyz" in str(caught.value)


@needs_tesseract
def test_scanned_pdf_is_ocred_page_by_page(extractor: RoutingExtractor) -> None:
    document = extractor.extract(Blob(name="scan.pdf", path=FIXTURES / "scanned_2p.pdf"))
    assert document.meta["ocr"] == "tesseract"
    for page, phrase in enumerate(SCANNED_PHRASES):
        offset = document.text.index(phrase)
        assert document.page_at(offset) == page


@needs_tesseract
def test_blank_scan_with_ocr_is_empty(extractor: RoutingExtractor) -> None:
    with pytest.raises(EmptyDocument, match="OCR found none"):
        extractor.extract(Blob(name="blank-scan.pdf", data=build_image_pdf([blank_image()])))


def test_docx_headings_and_tables_become_markdown(extractor: RoutingExtractor) -> None:
    data = build_docx(
        [
            ("h1", "Annual report"),
            ("p", "Intro text."),
            ("h2", "Revenue"),
            ("table", [["Year", "Revenue"], ["2023", "12"], ["2024", "15"]]),
        ]
    )
    lines = extractor.extract(Blob(name="report.docx", data=data)).text.splitlines()
    headings = [line for line in lines if line.startswith("#")]
    assert [h.lstrip("#").strip() for h in headings] == ["Annual report", "Revenue"]
    assert len(headings[0]) - len(headings[0].lstrip("#")) < len(headings[1]) - len(headings[1].lstrip("#"))
    rows = [line for line in lines if line.startswith("|")]
    assert rows[0] == "| Year | Revenue |"
    assert rows[2:] == ["| 2023 | 12 |", "| 2024 | 15 |"]


def test_xlsx_sheets_become_sections_with_header_rows(extractor: RoutingExtractor) -> None:
    data = build_xlsx(
        {
            "People": [["Name", "Note", "Age"], ["Ann", "line1\nline2", 31], ["Bob", "a|b", 42.5]],
            "Empty": [],
            "Second": [["k", "v"], ["x", "y"]],
        }
    )
    text = extractor.extract(Blob(name="book.xlsx", data=data)).text
    assert text.startswith("## People\n\n| Name | Note | Age |\n| --- | --- | --- |\n")
    assert "| Ann | line1 line2 | 31 |\n| Bob | a\\|b | 42.5 |" in text
    assert "## Second\n\n| k | v |\n| --- | --- |\n| x | y |" in text


def test_html_loses_the_metadata_header_and_keeps_the_title(extractor: RoutingExtractor) -> None:
    html = b"<html><head><title>Quarterly</title><meta name='description' content='D'></head>"
    html += b"<body><h1>Results</h1><p>Revenue grew.</p><table><tr><th>Q</th><th>EUR</th></tr>"
    html += b"<tr><td>Q1</td><td>5</td></tr></table></body></html>"
    document = extractor.extract(Blob(name="q.html", data=html))
    assert document.text.startswith("# Results\n\nRevenue grew.")
    rows = [_cells(line) for line in document.text.splitlines() if line.startswith("|")]
    assert rows[0] == ["Q", "EUR"]
    assert rows[2] == ["Q1", "5"]
    assert document.meta["title"] == "Quarterly"


def test_jats_keeps_characters_written_as_references(extractor: RoutingExtractor) -> None:
    jats = (
        b'<?xml version="1.0" encoding="UTF-8"?><article><front><article-meta><title-group>'
        b"<article-title>The Kr&#x000fc;ppel box</article-title></title-group></article-meta></front>"
        b"<body><sec><title>Results</title><p>Kr&#x000fc;ppel proteins &#x02014; bound.</p></sec></body></article>"
    )
    text = extractor.extract(Blob(name="paper.nxml", data=jats)).text
    assert "Krüppel proteins — bound." in text


def test_email_keeps_headers_and_line_structure(extractor: RoutingExtractor) -> None:
    eml = (
        b"From: Ann <ann@example.org>\r\nTo: Bob <bob@example.org>\r\nSubject: Quarterly numbers\r\n"
        b"Content-Type: text/plain; charset=utf-8\r\n\r\nHi Bob,\r\n\r\nRevenue grew 12%.\r\n-- \r\nAnn\r\nFinance\r\n"
    )
    document = extractor.extract(Blob(name="mail.eml", data=eml))
    assert "Subject: Quarterly numbers" in document.text
    assert "Ann\nFinance" in document.text
    assert "\r" not in document.text
    assert document.meta["subject"] == "Quarterly numbers"


def test_the_time_limit_bounds_the_whole_extraction() -> None:
    extractor = KreuzbergExtractor(ExtractSettings(timeout_s=1e-9), ocr_check=no_ocr)
    started = time.monotonic()
    with pytest.raises(ExtractionError, match="timed out") as caught:
        extractor.extract(Blob(name="slow.pdf", data=build_pdf(PAGES), mime_type="application/pdf"))
    assert "RAGD_EXTRACT__TIMEOUT_S" in str(caught.value)
    assert time.monotonic() - started < 1.0
