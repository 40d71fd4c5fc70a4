"""The pictures inside a document that are worth describing: images embedded in PDF pages,
slides and Word bodies, as PNG, with where they sit on their page.

    PDF   page objects (PDFium, ragd.vision.pdf_images): image objects, their bounds -> share of the page
    PPTX  p:pic on each slide (ragd.vision.slide_pictures): position against the slide size
    DOCX  body pictures (ragd.vision.docx_scan): display size against the page's usable area

A picture covering less than ``min_area_share`` of its page (a logo, an icon, a bullet) is
skipped **before** it is decoded, so a file of ten thousand tiny images costs a walk over their
positions and nothing more.  The rest are decoded bounded to ``max_pixels`` (downscaled while
decoding: PDFium renders the image object at a lower scale, JPEG decodes at 1/2..1/8; other
formats over :data:`MAX_DECODE_PIXELS` are skipped), until ``max_images`` are found.  Images under
32 × 32 pixels are decoration whatever their size on the page (a colour fill), and a picture
that repeats in a file (a slide template's backdrop) is returned once.  All PDFium calls hold
:data:`ragd.extract.pdf_pages.PDFIUM_LOCK`.

:class:`Figure` ``box`` is ``(x0, y0, x1, y1)`` in fractions of the page from its top-left
corner, as :class:`ragd.types.TextBox`, for the page as displayed (a PDF page's ``/Rotate``
applied).  A .docx has no pages before layout: its figures are on ``page`` 0 with the whole page
as ``box``, and ``area_share`` is the picture's display area over the usable page.
"""

from __future__ import annotations

import hashlib
import logging
import zipfile
from dataclasses import dataclass

from PIL import Image

from ragd.errors import EncryptedDocument, ExtractionError
from ragd.extract.pdf_pages import DEFAULT_MAX_PIXELS, PDFIUM_LOCK, PdfUnreadable, open_pdf
from ragd.vision.docx_scan import read_docx
from ragd.vision.ooxml_parts import PackageUnreadable, open_package, read_part, relationships, unreadable
from ragd.vision.pdf_images import Box, page_pictures
from ragd.vision.picture_pixels import MAX_DECODE_PIXELS, decode_bounded, encode_png
from ragd.vision.slide_pictures import slide_pictures

__all__ = [
    "MAX_DECODE_PIXELS",
    "Figure",
    "decode_bounded",
    "docx_figures",
    "encode_png",
    "pdf_figures",
    "pptx_figures",
]

logger = logging.getLogger(__name__)

#: page objects examined per PDF (images, forms and everything else), whatever the file holds
MAX_OBJECTS = 100_000
#: the largest media part of a package that is decoded
MAX_MEDIA_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Figure:
    """One picture: its 0-based ``page`` (slide), its ``order`` among that page's figures, the
    picture as PNG with the PNG's SHA-256, where it sits (``box``, module docstring) and the share
    of the page it covers."""

    page: int
    order: int
    png: bytes
    sha256: str
    box: tuple[float, float, float, float]
    area_share: float


class _Collector:
    """Figures in the order found, one per distinct picture, at most ``max_images``."""

    def __init__(self, max_images: int) -> None:
        self.max_images = max_images
        self.figures: list[Figure] = []
        self._seen: set[str] = set()
        self._per_page: dict[int, int] = {}

    @property
    def full(self) -> bool:
        return len(self.figures) >= self.max_images

    def add(self, page: int, image: Image.Image, box: Box, share: float) -> None:
        png = encode_png(image)
        digest = hashlib.sha256(png).hexdigest()
        if digest in self._seen:
            return
        self._seen.add(digest)
        order = self._per_page.get(page, 0)
        self._per_page[page] = order + 1
        x0, y0, x1, y1 = (round(value, 4) for value in box)
        self.figures.append(Figure(page, order, png, digest, (x0, y0, x1, y1), round(share, 4)))


# --- PDF ------------------------------------------------------------------------------------
def pdf_figures(
    data: bytes,
    *,
    min_area_share: float,
    max_images: int,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    max_pages: int | None = None,
    max_objects: int = MAX_OBJECTS,
    name: str = "document.pdf",
) -> list[Figure]:
    """The images of a PDF covering at least ``min_area_share`` of their page (module docstring).

    Raises :class:`EncryptedDocument` or :class:`ExtractionError` when PDFium cannot open the file.
    """
    found = _Collector(max_images)
    budget = [max_objects]
    try:
        with PDFIUM_LOCK, open_pdf(data) as pdf:
            pages = len(pdf) if max_pages is None else min(len(pdf), max_pages)
            for index in range(pages):
                if found.full or budget[0] <= 0:
                    break
                page = pdf[index]
                try:
                    for image, box, share in page_pictures(pdf, page, budget, min_area_share, max_pixels):
                        found.add(index, image, box, share)
                        if found.full:
                            break
                finally:
                    page.close()
    except PdfUnreadable as exc:
        raise _pdf_error(name, exc) from exc
    if budget[0] <= 0:
        logger.debug("figures of %r: stopped after %d page objects", name, max_objects)
    return found.figures


def _pdf_error(name: str, exc: PdfUnreadable) -> ExtractionError:
    if "password" in str(exc).lower():
        return EncryptedDocument(
            f"{name!r} is password-protected",
            hint="remove the password (save an unprotected copy) and ingest it again",
        )
    return unreadable(name, "PDF", exc)


# --- PPTX and DOCX --------------------------------------------------------------------------
def pptx_figures(
    data: bytes,
    *,
    min_area_share: float,
    max_images: int,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    name: str = "slides.pptx",
) -> list[Figure]:
    """The pictures (``p:pic``) of each slide covering at least ``min_area_share`` of the slide."""
    found = _Collector(max_images)
    try:
        with open_package(data) as package:
            for picture in slide_pictures(package):
                if picture.share < min_area_share:
                    continue
                image = _media(package, picture.target, max_pixels)
                if image is not None:
                    found.add(picture.slide, image, picture.box, picture.share)
                    if found.full:
                        break
    except PackageUnreadable as exc:
        raise unreadable(name, "PPTX", exc) from exc
    return found.figures


def docx_figures(
    data: bytes,
    *,
    min_area_share: float,
    max_images: int,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    name: str = "document.docx",
) -> list[Figure]:
    """The body pictures of a .docx covering at least ``min_area_share`` of the usable page."""
    part, signals = read_docx(data, name=name)
    found = _Collector(max_images)
    try:
        with open_package(data) as package:
            targets = relationships(package, part)
            for picture in signals.images:
                target = targets.get(picture.rel_id)
                if picture.page_share < min_area_share or target is None:
                    continue
                image = _media(package, target, max_pixels)
                if image is not None:
                    found.add(0, image, (0.0, 0.0, 1.0, 1.0), picture.page_share)
                    if found.full:
                        break
    except PackageUnreadable as exc:
        raise unreadable(name, "DOCX", exc) from exc
    return found.figures


def _media(package: zipfile.ZipFile, target: str, max_pixels: int) -> Image.Image | None:
    """A media part decoded, or None (missing, too large, or not a raster format Pillow reads)."""
    try:
        raw = read_part(package, target, MAX_MEDIA_BYTES)
    except PackageUnreadable as exc:
        logger.debug("picture %s skipped: %s", target, exc)
        return None
    return decode_bounded(raw, max_pixels)
