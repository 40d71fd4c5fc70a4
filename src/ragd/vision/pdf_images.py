"""The image objects of a PDF page: where each sits, and its pixels, bounded.

:func:`page_pictures` walks a page's objects (and those of its form XObjects, through their
placement matrices) with PDFium, placing each image by its bounds: as a box in fractions of the
page as displayed (``/Rotate`` applied) and the share of the page it covers.  Only images at or
above the caller's area floor are drawn, with their masks, at their own resolution or less so
that they hold at most ``max_pixels`` (PDFium downsamples while decoding: a 30,000 × 30,000-pixel
image costs what its downscaled bitmap costs).  Callers hold
:data:`ragd.extract.pdf_pages.PDFIUM_LOCK`.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Iterator

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from PIL import Image

from ragd.vision.picture_pixels import MIN_SIDE, fit, rgb

_MAX_FORM_DEPTH = 8
Box = tuple[float, float, float, float]
_Matrix = tuple[float, float, float, float, float, float]


def page_pictures(
    pdf: pdfium.PdfDocument,
    page: pdfium.PdfPage,
    budget: list[int],
    min_area_share: float,
    max_pixels: int,
) -> Iterator[tuple[Image.Image, Box, float]]:
    """Each image of ``page`` covering at least ``min_area_share`` of it: (pixels, box, share).
    ``budget[0]``: page objects left to examine (lowered as they are; none left ends the walk)."""
    crop = page.get_cropbox()
    rotation = page.get_rotation()
    for raw, bounds in _image_objects(page, budget):
        box, share = _place(bounds, crop)
        if share < min_area_share:
            continue
        image = _render_image(pdf, page, raw, max_pixels)
        if image is not None:
            yield image, _rotate(box, rotation), share


def _image_objects(page: pdfium.PdfPage, budget: list[int]) -> Iterator[tuple[object, Box]]:
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


def _bounds(raw: object) -> Box | None:
    left, bottom, right, top = ctypes.c_float(), ctypes.c_float(), ctypes.c_float(), ctypes.c_float()
    if not pdfium_c.FPDFPageObj_GetBounds(raw, left, bottom, right, top):
        return None
    return (left.value, bottom.value, right.value, top.value)


def _matrix(raw: object) -> _Matrix:
    found = pdfium_c.FS_MATRIX()
    if not pdfium_c.FPDFPageObj_GetMatrix(raw, found):
        return (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
    return (found.a, found.b, found.c, found.d, found.e, found.f)


def _through(bounds: Box, chain: list[_Matrix]) -> Box:
    """``bounds`` (in the innermost form's space) in page space: through each enclosing form's
    placement, innermost first."""
    left, bottom, right, top = bounds
    corners = [(left, bottom), (left, top), (right, bottom), (right, top)]
    for a, b, c, d, e, f in chain:
        corners = [(a * x + c * y + e, b * x + d * y + f) for x, y in corners]
    xs, ys = [x for x, _ in corners], [y for _, y in corners]
    return (min(xs), min(ys), max(xs), max(ys))


def _place(bounds: Box, crop: Box) -> tuple[Box, float]:
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


def _rotate(box: Box, rotation: int) -> Box:
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
    if px_w < MIN_SIDE or px_h < MIN_SIDE:
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
    return fit(rgb(bitmap.to_pil()), max_pixels)
