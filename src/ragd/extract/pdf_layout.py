"""Where a PDF's text layer is drawn: PDFium's characters and their boxes, aligned to the page texts
a document holds (:func:`ragd.extract.text_layout.word_boxes`).

PDFium's text page gives every character of a page with its box in page space (points, origin at
the bottom left of the media box, before the page's ``/Rotate``).  :func:`page_glyphs` maps them
to fractions of the page *as rendered* (crop box and rotation applied, top-left origin: what
:func:`ragd.extract.pdf_pages.render_page` draws) through PDFium's own page-to-device transform,
using the loose box (the font's ascent to descent), so a highlight covers a line evenly.

Bounded: a page with more than :data:`MAX_PAGE_GLYPHS` characters gets no boxes (its text is
indexed all the same), so a hostile page costs at most that many small tuples.
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Sequence

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from ragd.extract.pdf_pages import PDFIUM_LOCK, PdfUnreadable, open_pdf
from ragd.extract.text_layout import MAX_DOCUMENT_BOXES, Box, word_boxes
from ragd.types import PageSpan, TextBox

logger = logging.getLogger(__name__)

#: characters a page may have for its words to get boxes
MAX_PAGE_GLYPHS = 200_000
_DEVICE = 1 << 20  # device units of PDFium's page-to-device transform (precision of the fractions)
_PROBE = 100.0  # points between the probes of that transform

Affine = tuple[float, float, float, float, float, float]


def text_boxes(data: bytes, text: str, spans: Sequence[PageSpan]) -> tuple[TextBox, ...]:
    """The word boxes of a PDF's text layer for ``text`` (the document's, with its page spans);
    empty when PDFium cannot open the file."""
    boxes: list[TextBox] = []
    try:
        with open_pdf(data) as pdf:
            count = len(pdf)
            for span in spans:
                if len(boxes) >= MAX_DOCUMENT_BOXES:
                    logger.info("%d word boxes: none for the pages from %d on", len(boxes), span.page)
                    break
                if 0 <= span.page < count:
                    boxes.extend(page_boxes(pdf, span.page, span.start, text[span.start : span.end]))
    except PdfUnreadable as exc:
        logger.debug("no text boxes: PDFium cannot open the file: %s", exc)
        return ()
    boxes.sort(key=lambda b: b.start)
    return tuple(boxes)


def page_boxes(pdf: pdfium.PdfDocument, index: int, offset: int, text: str) -> list[TextBox]:
    """The word boxes of page ``index`` for ``text`` (its text, at document offset ``offset``);
    none for a page without a text layer or with more than :data:`MAX_PAGE_GLYPHS` characters."""
    with PDFIUM_LOCK:
        page = pdf[index]
        try:
            textpage = page.get_textpage()
            try:
                count = textpage.count_chars()
                if count > MAX_PAGE_GLYPHS:
                    logger.info("page %d has %d characters: no text boxes for it", index, count)
                    return []
                chars = _page_chars(textpage, count)
                return word_boxes(index, offset, text, chars, _BoxReader(page, textpage))
            finally:
                textpage.close()
        finally:
            page.close()


def _page_chars(textpage: pdfium.PdfTextPage, count: int) -> str:
    """The page's characters, one per character index: the whole text in one call when it comes
    back one UTF-16 unit per character, else character by character."""
    buffer = ctypes.create_string_buffer(2 * (count + 1))
    written = pdfium_c.FPDFText_GetText(
        textpage.raw, 0, count, ctypes.cast(buffer, ctypes.POINTER(ctypes.c_ushort))
    )
    text = buffer.raw[: 2 * max(written - 1, 0)].decode("utf-16-le", "replace")
    if len(text) == count and not any(0xD800 <= ord(ch) <= 0xDFFF for ch in text):
        return text.replace("\x00", " ")
    raw = textpage.raw
    return "".join([_char(pdfium_c.FPDFText_GetUnicode(raw, k)) for k in range(count)])


def _char(code: int) -> str:
    """The character of a Unicode code PDFium gives (a space for none: it is skipped)."""
    return " " if code in (0, 0xFFFE, 0xFFFF) or code > 0x10FFFF else chr(code)


class _BoxReader:
    """A character's loose box (the font's ascent to descent) in fractions of the rendered page."""

    def __init__(self, page: pdfium.PdfPage, textpage: pdfium.PdfTextPage) -> None:
        self._raw = textpage.raw
        self._map = _to_fractions(page)
        self._rect = pdfium_c.FS_RECTF()
        self._out = ctypes.byref(self._rect)
        self._loose_box = pdfium_c.FPDFText_GetLooseCharBox

    def __call__(self, k: int) -> Box | None:
        rect = self._rect
        if not self._loose_box(self._raw, k, self._out):
            return None
        a, b, c, d, e, f = self._map
        # the box's corners through the affine map (a rotated page swaps and flips the axes)
        xa, ya = a * rect.left + c * rect.top + e, b * rect.left + d * rect.top + f
        xb, yb = a * rect.right + c * rect.bottom + e, b * rect.right + d * rect.bottom + f
        x0, y0, x1, y1 = min(xa, xb), min(ya, yb), max(xa, xb), max(ya, yb)
        return (x0, y0, x1, y1) if x1 > x0 and y1 > y0 else None


def _to_fractions(page: pdfium.PdfPage) -> Affine:
    """The affine map from page space to fractions of the rendered page: x' = a x + c y + e,
    y' = b x + d y + f (PDFium's own transform, so crop box and rotation are as rendering does)."""
    step = _PROBE
    points = [_device(page, x, y) for x, y in ((0.0, 0.0), (step, 0.0), (0.0, step))]
    (x0, y0), (x1, y1), (x2, y2) = points
    return (x1 - x0) / step, (y1 - y0) / step, (x2 - x0) / step, (y2 - y0) / step, x0, y0


def _device(page: pdfium.PdfPage, x: float, y: float) -> tuple[float, float]:
    dx, dy = ctypes.c_int(), ctypes.c_int()
    pdfium_c.FPDF_PageToDevice(page.raw, 0, 0, _DEVICE, _DEVICE, 0, x, y, ctypes.byref(dx), ctypes.byref(dy))
    return dx.value / _DEVICE, dy.value / _DEVICE


def document_glyphs(data: bytes, max_glyphs: int) -> tuple[str, list[Box | None], list[int]]:
    """Every page's characters in one stream (pages separated by a newline), each character's box
    (None: none), and where each page starts in the stream; empty past ``max_glyphs`` characters."""
    chars: list[str] = []
    boxes: list[Box | None] = []
    starts: list[int] = []
    total = 0  # characters read, page separators included
    with open_pdf(data) as pdf:
        for index in range(len(pdf)):
            page = pdf[index]
            try:
                textpage = page.get_textpage()
                try:
                    count = textpage.count_chars()
                    if total + count + 1 > max_glyphs:
                        logger.info("the document has over %d characters: no text boxes for it", max_glyphs)
                        return "", [], []
                    box_of = _BoxReader(page, textpage)
                    starts.append(total)
                    total += count + 1
                    chars.append(_page_chars(textpage, count) + "\n")
                    boxes.extend([box_of(k) for k in range(count)])
                    boxes.append(None)
                finally:
                    textpage.close()
            finally:
                page.close()
    return "".join(chars), boxes, starts
