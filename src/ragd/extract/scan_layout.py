"""Scanned PDF pages for OCR, and where the OCR's words are on them.

kreuzberg's Tesseract scales the image it is given to a working size before it reads it (an image
whose longer side is 4,096 pixels is read as it is; a smaller one is enlarged, a larger one
shrunk), and reports word boxes in the pixels of that working image, not of the one it was given.
So each page is drawn at :data:`OCR_SIDE` pixels on its longer side (about 350 dpi for A4 or
Letter, the size a 300 dpi page was enlarged to anyway): the word boxes are then in the page
image's own pixels, and become fractions of the page by its size.  A page whose words land outside
its image (a kreuzberg that scales otherwise) gets no boxes rather than wrong ones.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragd.extract.pdf_pages import open_pdf, render_page
from ragd.extract.text_layout import MAX_DOCUMENT_BOXES, OcrWord, ocr_boxes
from ragd.types import PageSpan, TextBox

logger = logging.getLogger(__name__)

#: pixels on the longer side of a page drawn for OCR
OCR_SIDE = 4096
_POINTS_PER_INCH = 72.0
_SLACK = 1.01  # a word box may reach this far past the image's edge (a fraction of it) and count


@dataclass(frozen=True, slots=True)
class OcrImage:
    """A page drawn for OCR: the PNG, and its size in pixels."""

    png: bytes
    width: int
    height: int


@dataclass(frozen=True, slots=True)
class ScannedPage:
    """An OCRed page: its text, and the words the engine read with their boxes."""

    text: str
    words: tuple[OcrWord, ...] = ()


def render_for_ocr(data: bytes, index: int) -> OcrImage:
    """Page ``index`` of the PDF in grey at :data:`OCR_SIDE` pixels on its longer side (the file
    is opened for this page only: PDFium's lock is not held while the page is read)."""
    with open_pdf(data) as pdf:
        width, height = pdf[index].get_size()
        dpi = max(1, int(OCR_SIDE * _POINTS_PER_INCH / max(width, height, 1.0)))
        page = render_page(pdf, index, dpi=dpi, max_pixels=OCR_SIDE * OCR_SIDE)
    image = page.image.convert("L")
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=1)
    return OcrImage(out.getvalue(), image.width, image.height)


def scanned_page(text: str, elements: Sequence[Mapping[str, Any]] | None, image: OcrImage) -> ScannedPage:
    """The page's text with the OCR engine's word elements (kreuzberg's ``ocr_elements``: ``text``,
    ``level``, ``geometry`` = ``left``/``top``/``width``/``height`` in pixels) as fractions."""
    words = [word for element in elements or () if (word := _word(element, image)) is not None]
    if any(w.box[2] > _SLACK or w.box[3] > _SLACK for w in words):
        logger.info("OCR word boxes fall outside the page image: no boxes for this page")
        return ScannedPage(text)
    return ScannedPage(text, tuple(words))


def scan_boxes(text: str, spans: Sequence[PageSpan], scans: Sequence[ScannedPage]) -> tuple[TextBox, ...]:
    """The word boxes of an OCRed document's ``text`` (its pages' texts joined, with their spans)."""
    boxes: list[TextBox] = []
    for span in spans:
        if len(boxes) >= MAX_DOCUMENT_BOXES:
            break
        if 0 <= span.page < len(scans) and scans[span.page].words:
            boxes.extend(
                ocr_boxes(span.page, span.start, text[span.start : span.end], scans[span.page].words)
            )
    return tuple(sorted(boxes, key=lambda b: b.start))


def _word(element: Mapping[str, Any], image: OcrImage) -> OcrWord | None:
    """The element as a word (its box in fractions of the image, unclipped), or None for what is
    not a word with a box."""
    geometry = element.get("geometry")
    text = element.get("text")
    if element.get("level", "word") != "word" or not isinstance(text, str) or not text.strip():
        return None
    if not isinstance(geometry, Mapping):
        return None
    try:
        left, top = float(geometry["left"]), float(geometry["top"])
        width, height = float(geometry["width"]), float(geometry["height"])
    except (KeyError, TypeError, ValueError):
        return None
    if width <= 0 or height <= 0:
        return None
    box = (
        left / image.width,
        top / image.height,
        (left + width) / image.width,
        (top + height) / image.height,
    )
    return OcrWord("".join(text.split()), box)
