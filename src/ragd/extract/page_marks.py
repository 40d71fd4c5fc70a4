"""A PDF page as a picture for people, with a passage marked on it: what a citation opens.

:func:`draw_page` renders one page through :func:`ragd.extract.pdf_pages.render_page` (bounded by
a pixel cap whatever size the page declares) and paints the passage's boxes (fractions of the
page, top-left origin: a chunk's ``meta.boxes``) as a translucent yellow highlight with an orange
outline, a little larger than the words so the text stays readable.  Synchronous and CPU-bound:
callers run it off the event loop.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image, ImageDraw

from ragd.extract.pdf_pages import open_pdf, render_page

#: the highlight's fill (RGBA: translucent, the words show through) and outline
HIGHLIGHT = (255, 200, 0, 96)
OUTLINE = (230, 110, 0, 255)
_PAD = 0.15  # of a box's height, added on every side
_FEW_COLOURS = 4096  # a page with at most this many colours is drawn with a palette


Mark = tuple[float, float, float, float]


@dataclass(frozen=True, slots=True)
class DrawnPage:
    """One page drawn: the PNG, its size in pixels, and how many pages the file has."""

    png: bytes
    width: int
    height: int
    page_count: int


class PageMissing(Exception):
    """The file has no such page; ``page_count`` says how many it has."""

    def __init__(self, page_count: int) -> None:
        super().__init__(f"the file has {page_count} pages")
        self.page_count = page_count


def draw_page(pdf: bytes, index: int, *, dpi: int, max_pixels: int, marks: Sequence[Mark] = ()) -> DrawnPage:
    """Page ``index`` (0-based) of the PDF as a PNG with ``marks`` highlighted; raises
    :class:`PageMissing` for a page the file does not have, :class:`ragd.extract.pdf_pages.PdfUnreadable`
    for a file PDFium cannot open."""
    with open_pdf(pdf) as document:
        count = len(document)
        if not 0 <= index < count:
            raise PageMissing(count)
        page = render_page(document, index, dpi=dpi, max_pixels=max_pixels)
    image = highlight(page.image, marks) if marks else page.image
    return DrawnPage(encode(image), image.width, image.height, count)


def encode(image: Image.Image) -> bytes:
    """The image as PNG: with a 256-colour palette when it has few colours (a page of text, its
    anti-aliased edges and the highlight: a third of the bytes of full colour, about 100 KB at 110
    dpi, no visible change), in full colour otherwise (photographs, scans in colour)."""
    out = io.BytesIO()
    if image.getcolors(maxcolors=_FEW_COLOURS) is not None:
        image = image.quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    image.save(out, format="PNG", compress_level=6)
    return out.getvalue()


def highlight(image: Image.Image, marks: Sequence[Mark]) -> Image.Image:
    """``image`` with each box of ``marks`` filled translucently and outlined."""
    width, height = image.size
    layer = Image.new("RGBA", image.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(layer)
    outline = max(1, round(min(width, height) / 600))
    for x0, y0, x1, y1 in marks:
        pad = (y1 - y0) * height * _PAD
        box = (x0 * width - pad, y0 * height - pad, x1 * width + pad, y1 * height + pad)
        draw.rectangle(box, fill=HIGHLIGHT, outline=OUTLINE, width=outline)
    return Image.alpha_composite(image.convert("RGBA"), layer).convert("RGB")
