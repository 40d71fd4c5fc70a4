"""The pictures inside a document that are worth describing: images embedded in PDF pages,
slides and Word bodies, as PNG, with where they sit on their page.

    PDF   page objects (PDFium): image objects, their bounds -> share of the page
    PPTX  p:pic on each slide (ragd.vision.slide_pictures): position against the slide size
    DOCX  body pictures (ragd.vision.detect): display size against the page's usable area

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

import ctypes
import hashlib
import io
import logging
import math
import warnings
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from PIL import Image

from ragd.errors import EncryptedDocument, ExtractionError
from ragd.extract.pdf_pages import DEFAULT_MAX_PIXELS, PDFIUM_LOCK, PdfUnreadable, open_pdf
from ragd.vision.detect import read_docx
from ragd.vision.ooxml_parts import PackageUnreadable, open_package, read_part, relationships, unreadable
from ragd.vision.slide_pictures import slide_pictures

logger = logging.getLogger(__name__)

#: page objects examined per PDF (images, forms and everything else), whatever the file holds
MAX_OBJECTS = 100_000
#: formats that cannot decode at a reduced size are skipped above this many pixels
MAX_DECODE_PIXELS = 40_000_000
#: the largest media part of a package that is decoded
MAX_MEDIA_BYTES = 64 * 1024 * 1024
_MIN_SIDE = 32
_MAX_FORM_DEPTH = 8
_Box = tuple[float, float, float, float]
_Matrix = tuple[float, float, float, float, float, float]


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

    def add(self, page: int, image: Image.Image, box: _Box, share: float) -> None:
        png = encode_png(image)
        digest = hashlib.sha256(png).hexdigest()
        if digest in self._seen:
            return
        self._seen.add(digest)
        order = self._per_page.get(page, 0)
        self._per_page[page] = order + 1
        rounded = tuple(round(value, 4) for value in box)
        self.figures.append(Figure(page, order, png, digest, rounded, round(share, 4)))  # type: ignore[arg-type]


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
                    _page_figures(pdf, page, index, found, budget, min_area_share, max_pixels)
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


def _page_figures(
    pdf: pdfium.PdfDocument,
    page: pdfium.PdfPage,
    index: int,
    found: _Collector,
    budget: list[int],
    min_area_share: float,
    max_pixels: int,
) -> None:
    crop = page.get_cropbox()
    rotation = page.get_rotation()
    for raw, bounds in _image_objects(page, budget):
        box, share = _place(bounds, crop)
        if share < min_area_share:
            continue
        image = _render_image(pdf, page, raw, max_pixels)
        if image is not None:
            found.add(index, image, _rotate(box, rotation), share)
            if found.full:
                return


def _image_objects(page: pdfium.PdfPage, budget: list[int]) -> Iterator[tuple[object, _Box]]:
    """Each image object of the page with its bounds in page space (inside forms too)."""
    stack: list[tuple[object, int, list[_Matrix]]] = [(None, 0, [])]
    while stack:
        form, start, chain = stack.pop()
        count = pdfium_c.FPDFFormObj_CountObjects(form) if form else pdfium_c.FPDFPage_CountObjects(page)
        for k in range(start, max(count, 0)):
            budget[0] -= 1
            if budget[0] < 0:
                return
            raw = pdfium_c.FPDFFormObj_GetObject(form, k) if form else pdfium_c.FPDFPage_GetObject(page, k)
            kind = pdfium_c.FPDFPageObj_GetType(raw) if raw else None
            if kind == pdfium_c.FPDF_PAGEOBJ_IMAGE:
                bounds = _bounds(raw)
                if bounds is not None:
                    yield raw, _through(bounds, chain)
            elif kind == pdfium_c.FPDF_PAGEOBJ_FORM and len(chain) < _MAX_FORM_DEPTH:
                stack.append((form, k + 1, chain))  # the rest of this level, after the form's kids
                stack.append((raw, 0, [_matrix(raw), *chain]))
                break


def _bounds(raw: object) -> _Box | None:
    left, bottom, right, top = ctypes.c_float(), ctypes.c_float(), ctypes.c_float(), ctypes.c_float()
    if not pdfium_c.FPDFPageObj_GetBounds(raw, left, bottom, right, top):
        return None
    return (left.value, bottom.value, right.value, top.value)


def _matrix(raw: object) -> _Matrix:
    found = pdfium_c.FS_MATRIX()
    if not pdfium_c.FPDFPageObj_GetMatrix(raw, found):
        return (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
    return (found.a, found.b, found.c, found.d, found.e, found.f)


def _through(bounds: _Box, chain: list[_Matrix]) -> _Box:
    """``bounds`` (in the innermost form's space) in page space: through each enclosing form's
    placement, innermost first."""
    left, bottom, right, top = bounds
    corners = [(left, bottom), (left, top), (right, bottom), (right, top)]
    for a, b, c, d, e, f in chain:
        corners = [(a * x + c * y + e, b * x + d * y + f) for x, y in corners]
    xs, ys = [x for x, _ in corners], [y for _, y in corners]
    return (min(xs), min(ys), max(xs), max(ys))


def _place(bounds: _Box, crop: _Box) -> tuple[_Box, float]:
    """``bounds`` as fractions of the (unrotated) crop box from its top-left, clipped to it, and
    the share of the page they cover."""
    c_left, c_bottom, c_right, c_top = crop
    width, height = max(c_right - c_left, 1e-6), max(c_top - c_bottom, 1e-6)
    left, bottom, right, top = bounds
    x0 = min(max((left - c_left) / width, 0.0), 1.0)
    x1 = min(max((right - c_left) / width, 0.0), 1.0)
    y0 = min(max((c_top - top) / height, 0.0), 1.0)
    y1 = min(max((c_top - bottom) / height, 0.0), 1.0)
    return (x0, y0, x1, y1), (x1 - x0) * (y1 - y0)


def _rotate(box: _Box, rotation: int) -> _Box:
    """A box of the unrotated page on the page as displayed (``/Rotate``, clockwise)."""
    x0, y0, x1, y1 = box
    turns = (rotation // 90) % 4
    for _ in range(turns):  # a quarter turn clockwise: (x, y) -> (1 - y, x)
        x0, y0, x1, y1 = 1 - y1, x0, 1 - y0, x1
    return (x0, y0, x1, y1)


def _render_image(
    pdf: pdfium.PdfDocument, page: pdfium.PdfPage, raw: object, max_pixels: int
) -> Image.Image | None:
    """The image object drawn with its mask and orientation, at its own resolution or less so
    that it has at most ``max_pixels`` (PDFium downsamples while decoding)."""
    image = pdfium.PdfObject(raw, page=page, pdf=pdf)
    try:
        px_w, px_h = image.get_px_size()
    except pdfium.PdfiumError:
        return None
    if px_w < _MIN_SIDE or px_h < _MIN_SIDE:
        return None
    matrix = image.get_matrix()
    a, b, c, d, _, _ = matrix.get()
    width, height = abs(a) + abs(c), abs(b) + abs(d)
    if width <= 0 or height <= 0:
        return None
    if b == 0 and c == 0:  # upright (or mirrored): its own pixels, exactly, or fewer
        keep = min(1.0, math.sqrt(max_pixels / (px_w * px_h)))
        size_w, size_h = max(1, round(px_w * keep)), max(1, round(px_h * keep))
        drawn = pdfium.PdfMatrix(math.copysign(size_w, a), 0, 0, math.copysign(size_h, d), 0, 0)
    else:  # rotated or sheared: its bounding box at its own resolution, or less
        factor = min(max(px_w / width, px_h / height), math.sqrt(max_pixels / (width * height)))
        drawn = matrix.scale(factor, factor)
    image.set_matrix(drawn)
    try:
        bitmap_raw = pdfium_c.FPDFImageObj_GetRenderedBitmap(pdf, page, image)
    finally:
        image.set_matrix(matrix)
    if not bitmap_raw:
        return None
    # PDFium's buffer, freed with the wrapper (closing it by hand is refused for foreign buffers)
    bitmap = pdfium.PdfBitmap.from_raw(bitmap_raw)
    return _fit(_rgb(bitmap.to_pil()), max_pixels)


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


# --- pixels ---------------------------------------------------------------------------------
def decode_bounded(raw: bytes, max_pixels: int) -> Image.Image | None:
    """An image file's first frame as RGB with at most ``max_pixels``, or None when Pillow cannot
    read it or it is too large to decode (over :data:`MAX_DECODE_PIXELS`, JPEG aside: it decodes
    at a reduced scale)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(raw))
            width, height = image.size
            if width < _MIN_SIDE or height < _MIN_SIDE:
                return None
            if width * height > max_pixels and image.format == "JPEG":
                scale = math.sqrt(max_pixels / (width * height))
                image.draft("RGB", (max(1, int(width * scale)), max(1, int(height * scale))))
            if image.size[0] * image.size[1] > max(MAX_DECODE_PIXELS, max_pixels):
                return None
            image.load()
    except (OSError, ValueError, SyntaxError, EOFError, Image.DecompressionBombError, Warning) as exc:
        logger.debug("picture skipped: %s", exc)
        return None
    return _fit(_rgb(image), max_pixels)


def _rgb(image: Image.Image) -> Image.Image:
    """RGB, transparent parts on white (a chart exported with a transparent background)."""
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        canvas = Image.new("RGB", rgba.size, "white")
        canvas.paste(rgba, mask=rgba.getchannel("A"))
        return canvas
    return image.convert("RGB")


def _fit(image: Image.Image, max_pixels: int) -> Image.Image:
    width, height = image.size
    if width * height <= max_pixels:
        return image
    scale = math.sqrt(max_pixels / (width * height))
    size = (max(1, int(width * scale)), max(1, int(height * scale)))
    return image.resize(size, Image.Resampling.LANCZOS, reducing_gap=3.0)


def encode_png(image: Image.Image) -> bytes:
    """The PNG bytes of a figure (the same pixels give the same bytes, hence the same hash)."""
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()
