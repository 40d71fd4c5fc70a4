"""PDF pages as images, through PDFium (pypdfium2), bounded whatever the file declares.

One renderer for everything that shows or reads a page as a picture: the vision engines send
page images to a multimodal model, and citations show the page a passage came from.

A page's size comes from the file (a hostile PDF can declare 30,000 × 30,000 px at 72 dpi, a
14-gigapixel bitmap at 150 dpi): :func:`render_page` lowers the scale until the bitmap fits
``max_pixels``, so memory is bounded by that cap, never by the declared size.  Broken or
encrypted files are :class:`ragd.errors.ExtractionFailed`-style errors of the caller's choosing
(:class:`PdfUnreadable` here, mapped by callers).
"""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pypdfium2 as pdfium
from PIL import Image

#: the largest bitmap one page renders to (about 12 MB of RGB at the default)
DEFAULT_MAX_PIXELS = 4_000_000
_POINTS_PER_INCH = 72.0

#: PDFium is not thread-safe: one document operation at a time per process
PDFIUM_LOCK = threading.RLock()


class PdfUnreadable(Exception):
    """The bytes are not a PDF PDFium can open (broken, encrypted, or not a PDF)."""


@dataclass(frozen=True, slots=True)
class RenderedPage:
    """One page as an image: ``index`` 0-based, the image, and the scale it was drawn at."""

    index: int
    image: Image.Image
    #: pixels per PDF point (dpi / 72, or less when the page hit the pixel cap)
    scale: float

    def png(self) -> bytes:
        out = io.BytesIO()
        self.image.save(out, format="PNG", optimize=False)
        return out.getvalue()


@contextmanager
def open_pdf(data: bytes) -> Iterator[pdfium.PdfDocument]:
    """The document, closed on exit; :class:`PdfUnreadable` when PDFium cannot open it.

    The lock is held while PDFium opens and closes the file, not in between (the body may be a
    generator's, resumed in another thread): hold :data:`PDFIUM_LOCK` around each call on it."""
    with PDFIUM_LOCK:
        try:
            pdf = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            raise PdfUnreadable(str(exc)) from exc
    try:
        yield pdf
    finally:
        with PDFIUM_LOCK:
            pdf.close()


def page_count(data: bytes) -> int:
    with open_pdf(data) as pdf, PDFIUM_LOCK:
        return len(pdf)


def fit_scale(width_pt: float, height_pt: float, dpi: int, max_pixels: int) -> float:
    """The scale (pixels per point) for ``dpi``, lowered so the bitmap has at most ``max_pixels``."""
    scale = dpi / _POINTS_PER_INCH
    area = max(width_pt, 1.0) * max(height_pt, 1.0) * scale * scale
    if area > max_pixels:
        scale *= (max_pixels / area) ** 0.5
    return scale


def render_page(
    pdf: pdfium.PdfDocument, index: int, *, dpi: int = 150, max_pixels: int = DEFAULT_MAX_PIXELS
) -> RenderedPage:
    """Page ``index`` of an open document as an RGB image (white background, no annotations'
    pop-ups); raises IndexError for a page the document does not have."""
    with PDFIUM_LOCK:
        if not 0 <= index < len(pdf):
            raise IndexError(f"page {index} of {len(pdf)}")
        page = pdf[index]
        try:
            width, height = page.get_size()
            scale = fit_scale(width, height, dpi, max_pixels)
            bitmap = page.render(scale=scale, may_draw_forms=True)
            try:
                image = bitmap.to_pil().convert("RGB")
            finally:
                bitmap.close()
        finally:
            page.close()
    return RenderedPage(index, image, scale)


def render_pages(
    data: bytes, *, dpi: int = 150, max_pages: int, max_pixels: int = DEFAULT_MAX_PIXELS
) -> Iterator[RenderedPage]:
    """The first ``max_pages`` pages of a PDF, one at a time (one bitmap in memory at once)."""
    with open_pdf(data) as pdf:
        with PDFIUM_LOCK:
            count = len(pdf)
        for index in range(min(count, max_pages)):
            yield render_page(pdf, index, dpi=dpi, max_pixels=max_pixels)
