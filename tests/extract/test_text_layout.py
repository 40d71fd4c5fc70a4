"""Where a document's words are drawn (Document.boxes): the alignment of a page's text with the glyphs
drawn on it, a text PDF made with PDFium, a rotated page, a scan drawn with Pillow and OCRed, a
.docx through LibreOffice's PDF, and the chunk boxes of a shared PDF, each checked against the page
as it is rendered."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ragd.extract import pdf_layout
from ragd.extract.kreuzberg_extractor import KreuzbergExtractor
from ragd.extract.office_pdf import to_pdf
from ragd.extract.pdf_pages import open_pdf, render_page
from ragd.extract.text_layout import Box, OcrWord, align, ocr_boxes, word_boxes
from ragd.ingest.layout import chunk_boxes
from ragd.settings import ExtractSettings
from ragd.types import Blob, Document, TextBox
from tests.conftest import shared_path
from tests.extract.builders import build_docx
from tests.extract.conftest import needs_tesseract
from tests.support.page_pdfs import ink_in, scan_pdf, text_pdf

LINES = [
    "Skerryvore lighthouse handbook",
    "The keeper winds the clockwork lens every four hours.",
    "Supplies arrive by boat once a fortnight.",
]


def extract(data: bytes, **settings: object) -> Document:
    return KreuzbergExtractor(ExtractSettings(**settings)).extract(Blob(name="doc.pdf", data=data))  # type: ignore[arg-type]


def boxes_of(document: Document, phrase: str) -> list[TextBox]:
    at = document.text.index(phrase)
    return [b for b in document.boxes if b.start < at + len(phrase) and b.end > at]


def rendered(data: bytes, page: int) -> object:
    with open_pdf(data) as pdf:
        return render_page(pdf, page, dpi=100).image


def test_align_pairs_equal_characters_and_skips_what_cleaning_dropped_or_added() -> None:
    # leaders, a line of glyph garbage and a line-end hyphen (PDFium's \x02, the text's "-")
    drawn = "Notices.........viiTrademarks\x01\x03\x03\x1d\x03garbleRow\x02column"
    text = "Notices…viiTrademarksRow-column"
    drawn = drawn.replace("\x02", "-")  # as word_boxes reads both
    pairs = align(text, drawn)
    assert [drawn[j] if j >= 0 else None for j in pairs] == [*"Notices", None, *"viiTrademarksRow-column"]
    assert pairs[-1] == len(drawn) - 1


def test_align_finds_lines_drawn_in_another_order() -> None:
    drawn = "Suppliesbyboat.Theclockworklens.Skerryvorehandbook"  # a turned page's lines, last first
    text = "Skerryvorehandbook.Theclockworklens.Suppliesbyboat"
    pairs = align(text, drawn, [0, 19, 36])
    assert "".join(drawn[j] for j in pairs) == text
    assert pairs[0] == drawn.index("Skerryvore")


def test_align_gives_up_on_text_that_is_drawn_nowhere() -> None:
    assert align("abcdefgh", "zzzzzzzzzzzz") == [-1] * 8


def test_word_boxes_cover_each_word_and_split_a_word_over_two_lines() -> None:
    text = "one twothree"
    chars = "one two\nthree"  # "twothree" is drawn on two lines: the text runs it together
    line1: dict[int, Box] = {k: (0.1 * k, 0.10, 0.1 * k + 0.08, 0.12) for k in range(7)}
    line2: dict[int, Box] = {k: (0.1 * (k - 8), 0.20, 0.1 * (k - 8) + 0.08, 0.22) for k in range(8, 13)}
    boxes = word_boxes(3, 100, text, chars, {**line1, **line2}.get)
    assert [(b.page, b.start, b.end) for b in boxes] == [(3, 100, 103), (3, 104, 107), (3, 107, 112)]
    assert boxes[0].x0 == pytest.approx(0.0)
    assert boxes[0].x1 == pytest.approx(0.28)
    assert (boxes[1].y0, boxes[2].y0) == (pytest.approx(0.10), pytest.approx(0.20))


def test_ocr_boxes_are_the_engine_words_boxes() -> None:
    words = [OcrWord("Quantum", (0.1, 0.1, 0.2, 0.12)), OcrWord("marmalade", (0.22, 0.1, 0.35, 0.12))]
    boxes = ocr_boxes(1, 10, "Quantum\n\nmarmalade", words)
    assert [(b.start, b.end, b.x0, b.x1) for b in boxes] == [(10, 17, 0.1, 0.2), (19, 28, 0.22, 0.35)]


def test_a_text_pdf_gets_a_box_for_every_word_where_it_is_drawn() -> None:
    data, lines = text_pdf([((612.0, 792.0), LINES), ((420.0, 595.0), ["Fog signals twice a minute."])])
    document = extract(data)
    words = len(document.text.split())
    assert len(document.boxes) == words
    assert [b.start for b in document.boxes] == sorted(b.start for b in document.boxes)
    for line in lines:
        first = boxes_of(document, line.text)[0]
        assert first.page == line.page
        assert first.x0 == pytest.approx(line.x, abs=0.005)  # the line's left edge
        assert first.y0 < line.baseline < first.y1  # the box holds the baseline
        assert first.y1 - first.y0 < 3 * line.size
    for page in (0, 1):
        image = rendered(data, page)
        assert all(ink_in(image, (b.x0, b.y0, b.x1, b.y1)) > 0 for b in document.boxes if b.page == page)


def test_a_rotated_page_gets_its_boxes_as_it_is_rendered() -> None:
    data, _ = text_pdf([((612.0, 792.0), LINES)], rotate=90)
    document = extract(data)
    lens = boxes_of(document, "clockwork")[0]
    assert lens.y1 - lens.y0 > lens.x1 - lens.x0  # a word of a turned page stands upright
    image = rendered(data, 0)
    assert all(ink_in(image, (b.x0, b.y0, b.x1, b.y1)) > 0 for b in document.boxes)


def test_boxes_can_be_switched_off_and_a_crowded_page_gets_none(monkeypatch: pytest.MonkeyPatch) -> None:
    data, _ = text_pdf([((612.0, 792.0), LINES), ((612.0, 792.0), ["Short page."])])
    assert extract(data, page_boxes=False).boxes == ()
    monkeypatch.setattr(pdf_layout, "MAX_PAGE_GLYPHS", 20)  # page 1 has more characters, page 2 fewer
    document = extract(data)
    assert "clockwork" in document.text
    assert {b.page for b in document.boxes} == {1}
    monkeypatch.setattr(pdf_layout, "MAX_PAGE_GLYPHS", 10_000)
    monkeypatch.setattr(pdf_layout, "MAX_DOCUMENT_BOXES", 5)  # page 1's boxes reach it: page 2 gets none
    assert {b.page for b in extract(data).boxes} == {0}


@needs_tesseract
def test_a_scan_gets_the_ocr_words_boxes_on_the_drawn_words() -> None:
    data, drawn = scan_pdf([["Quantum marmalade lives on page one"], ["The zebra crossing is on page two"]])
    document = extract(data)
    assert document.meta["ocr"] == "tesseract"
    found = 0
    for word in drawn:
        if word.text not in document.text:
            continue
        span = next(p for p in document.pages if p.page == word.page)
        at = document.text.index(word.text, span.start)
        box = next(b for b in document.boxes if b.start == at)
        overlap_w = min(box.x1, word.box[2]) - max(box.x0, word.box[0])
        overlap_h = min(box.y1, word.box[3]) - max(box.y0, word.box[1])
        assert overlap_w > 0.8 * (word.box[2] - word.box[0]), (word, box)
        assert overlap_h > 0.5 * (word.box[3] - word.box[1]), (word, box)
        found += 1
    assert found >= len(drawn) - 2


@pytest.mark.shared
def test_the_chunks_of_a_shared_pdf_are_boxed_on_their_passage() -> None:
    path: Path = shared_path("documents") / "docling_redp5110_sampled.pdf"
    data = path.read_bytes()
    document = extract(data)
    at = document.text.index("Because of the inherently secure nature of IBM i")
    end = at + 400
    boxes = chunk_boxes(document.boxes, at, end)
    assert boxes
    page = boxes[0][0]
    assert document.page_at(at) == page
    image = rendered(data, page)
    assert all(ink_in(image, b[1:]) > 20 for b in boxes if b[0] == page)
    first_word = next(b for b in document.boxes if b.start >= at)
    assert boxes[0][1] <= first_word.x0 + 1e-4  # the first line box holds the passage's first word
    assert boxes[0][2] <= first_word.y0 + 1e-4
    assert boxes[0][4] >= first_word.y1 - 1e-4
    assert all(b[2] > boxes[0][2] for b in boxes[1:] if b[0] == page)  # the lines below it


def needs_libreoffice() -> None:
    if shutil.which("soffice") is None:
        pytest.skip("needs LibreOffice (apt-get install libreoffice-writer): soffice is not on PATH")


TOPICS = ["lighthouse", "marmalade", "zebra", "quantum", "harbour", "lantern"]


def long_docx() -> bytes:
    """A .docx of a heading and sixty paragraphs: three pages or so once laid out."""
    paragraphs = [
        (
            "p",
            f"Paragraph {n} is about the {TOPICS[n % len(TOPICS)]} and runs on for a line or two so "
            "that the pages fill up the way a report's do, word after word.",
        )
        for n in range(60)
    ]
    return build_docx([("h1", "Harbour report"), *paragraphs])


def test_office_pages_are_off_by_default_and_an_office_file_gets_no_pages() -> None:
    document = KreuzbergExtractor(ExtractSettings()).extract(Blob(name="report.docx", data=long_docx()))
    assert document.pages == ()
    assert document.boxes == ()


def test_with_office_pages_a_docx_gets_pages_and_boxes_from_its_pdf() -> None:
    needs_libreoffice()
    data = long_docx()
    document = KreuzbergExtractor(ExtractSettings(office_pages=True)).extract(
        Blob(name="report.docx", data=data)
    )
    assert len(document.pages) >= 2
    assert document.meta["page_count"] == len(document.pages)
    assert [s.start for s in document.pages] == sorted(s.start for s in document.pages)
    assert document.pages[-1].end == len(document.text)
    last = document.text.index("Paragraph 59")
    assert document.page_at(last) == document.pages[-1].page
    pdf = to_pdf(data, "report.docx", ExtractSettings())
    for page in (0, document.pages[-1].page):
        image = rendered(pdf, page)
        on_page = [b for b in document.boxes if b.page == page]
        assert on_page
        assert all(ink_in(image, (b.x0, b.y0, b.x1, b.y1)) > 0 for b in on_page)
    words = sum(1 for w in document.text.split() if w.strip("#"))
    assert len(document.boxes) >= 0.95 * words


def test_an_office_file_that_cannot_be_converted_keeps_its_text_without_pages() -> None:
    settings = ExtractSettings(office_pages=True, office_converter="off")
    document = KreuzbergExtractor(settings).extract(Blob(name="report.docx", data=long_docx()))
    assert "Paragraph 59" in document.text
    assert document.pages == ()
