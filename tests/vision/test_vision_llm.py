"""The vision-llm engine: the right page pictures reach the model (their hashes, asserted from the
endpoint's record), one section and page span per page, budgets and bounded pictures."""

from __future__ import annotations

import hashlib
import io
import shutil
import struct
import zlib

import pytest
from PIL import Image

from ragd.errors import EmptyDocument, PayloadTooLarge, UnsupportedType
from ragd.extract.pdf_pages import render_pages
from ragd.types import Blob
from ragd.vision.vision_llm import VisionLlmExtractor
from tests.extract.builders import build_docx, build_pdf
from tests.support.vision_endpoint import VisionEndpoint
from tests.vision.conftest import MakeKit

PAGES = ["The first page speaks of tides.", "The second page lists harbours.", "The third page is an index."]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_each_rendered_page_goes_to_the_model_and_comes_back_as_its_page(
    vision_endpoint: VisionEndpoint, make_kit: MakeKit
) -> None:
    pdf = build_pdf(PAGES)
    expected = [sha(page.png()) for page in render_pages(pdf, dpi=100, max_pages=3)]
    engine = VisionLlmExtractor(make_kit(dpi=100))
    document = engine.extract(Blob(name="tides.pdf", data=pdf, mime_type="application/pdf"))
    assert [call.image.sha256 for call in vision_endpoint.calls] == expected
    assert {call.profile for call in vision_endpoint.calls} == {"general"}
    assert (document.extractor, document.meta["vision_profile"], document.meta["page_count"]) == (
        "vision-llm",
        "general",
        3,
    )
    assert [span.page for span in document.pages] == [0, 1, 2]
    for span, digest in zip(document.pages, expected, strict=True):
        assert document.text[span.start : span.end].strip() == f"Picture {digest[:12]} of 850 x 1100 pixels."
    assert "extraction_warnings" not in document.meta


def test_pages_past_the_budget_are_left_out_with_a_warning(
    vision_endpoint: VisionEndpoint, make_kit: MakeKit
) -> None:
    engine = VisionLlmExtractor(make_kit(dpi=50, max_pages=2), "ocr")
    document = engine.extract(Blob(name="tides.pdf", data=build_pdf(PAGES)))
    assert len(vision_endpoint.calls) == 2
    assert {call.profile for call in vision_endpoint.calls} == {"ocr"}
    assert (document.meta["vision_profile"], document.meta["page_count"]) == ("ocr", 3)
    assert document.meta["extraction_warnings"] == [
        "read the first 2 of 3 pages (RAGD_VISION__MAX_PAGES): the others are not indexed"
    ]


def test_the_model_really_reads_the_page(vision_endpoint: VisionEndpoint, make_kit: MakeKit) -> None:
    if shutil.which("tesseract") is None:
        pytest.skip("needs Tesseract (apt-get install tesseract-ocr) for the endpoint's OCR rule")
    vision_endpoint.use_ocr()
    document = VisionLlmExtractor(make_kit(dpi=150)).extract(
        Blob(name="tides.pdf", data=build_pdf(PAGES[:1]))
    )
    assert "first page speaks of tides" in document.text


def test_an_image_file_is_sent_bounded_in_pixels(vision_endpoint: VisionEndpoint, make_kit: MakeKit) -> None:
    big = io.BytesIO()
    Image.new("RGB", (3000, 2000), (10, 120, 60)).save(big, format="PNG")
    engine = VisionLlmExtractor(make_kit())
    document = engine.extract(Blob(name="photo.png", data=big.getvalue()))
    [call] = vision_endpoint.calls
    assert call.image.width * call.image.height <= 4_000_000
    assert call.image.width / call.image.height == pytest.approx(1.5, rel=0.01)
    assert document.meta["page_count"] == 1
    assert [s.page for s in document.pages] == [0]


def test_a_picture_declaring_30000_pixels_a_side_is_refused_unread(
    vision_endpoint: VisionEndpoint, make_kit: MakeKit
) -> None:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", 30_000, 30_000, 8, 2, 0, 0, 0)
    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b""))
        + chunk(b"IEND", b"")
    )
    with pytest.raises(PayloadTooLarge, match="pixel limit"):
        VisionLlmExtractor(make_kit()).extract(Blob(name="huge.png", data=png))
    assert vision_endpoint.calls == []


@pytest.mark.slow  # LibreOffice converts it (~1 s); tests/vision/test_office_pdf.py covers the converter
def test_an_office_file_is_read_through_its_pdf(vision_endpoint: VisionEndpoint, make_kit: MakeKit) -> None:
    if shutil.which("soffice") is None:
        pytest.skip("needs LibreOffice (apt-get install libreoffice-writer): soffice is not on PATH")
    docx = build_docx([("h1", "Harbours"), ("p", "Aarhus, Esbjerg and Frederikshavn.")])
    document = VisionLlmExtractor(make_kit(dpi=50)).extract(Blob(name="harbours.docx", data=docx))
    assert len(vision_endpoint.calls) == 1
    assert document.meta["page_count"] == 1
    assert document.mime_type == "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def test_blank_answers_are_an_empty_document_and_text_is_not_a_vision_format(
    vision_endpoint: VisionEndpoint, make_kit: MakeKit
) -> None:
    vision_endpoint.rule(lambda _call: "")
    engine = VisionLlmExtractor(make_kit(dpi=50))
    with pytest.raises(EmptyDocument, match="found nothing to say"):
        engine.extract(Blob(name="blank.pdf", data=build_pdf(["x"])))
    with pytest.raises(UnsupportedType, match="not plain text"):
        engine.extract(Blob(name="notes.txt", data=b"plain words"))
