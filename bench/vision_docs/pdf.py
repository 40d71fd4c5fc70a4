"""PDFs of the vision corpus, written by hand: a text layer with figures placed on the page, and
image-only scans.

Text is Helvetica (WinAnsi), one ``Tj`` a line; a figure is an RGB image XObject (Flate) or a
greyscale JPEG (a scan, DCT).  A4 pages, 72 pt margins.
"""

from __future__ import annotations

import textwrap
import zlib
from dataclasses import dataclass, field

from PIL import Image
from tests.extract.builders import write_pdf
from tests.support.vision_docs import pdf_stream

PAGE = (595, 842)
MARGIN = 72


@dataclass(frozen=True)
class Figure:
    image: Image.Image
    width_pt: float = PAGE[0] - 2 * MARGIN


@dataclass
class Page:
    """What a page shows, top to bottom: ("h", text), ("p", text) or a :class:`Figure`."""

    items: list[tuple[str, str] | Figure] = field(default_factory=list)


def _string(text: str) -> bytes:
    data = text.encode("cp1252")
    return b"(" + data.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def _stream(data: bytes, extra: str = "") -> bytes:
    return pdf_stream(data, extra)


def _write(objects: list[bytes]) -> bytes:
    return write_pdf(objects, version="1.5")


def _image_object(figure: Figure) -> bytes:
    image = figure.image.convert("RGB")
    return _stream(
        zlib.compress(image.tobytes(), 9),
        f" /Type /XObject /Subtype /Image /Width {image.width} /Height {image.height}"
        " /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /FlateDecode",
    )


def _content(page: Page, first_image: int) -> tuple[bytes, list[Figure]]:
    ops: list[bytes] = []
    figures: list[Figure] = []
    y = PAGE[1] - MARGIN
    for item in page.items:
        if isinstance(item, Figure):
            height = item.width_pt * item.image.height / item.image.width
            y -= height + 6
            x = (PAGE[0] - item.width_pt) / 2
            name = f"/Im{first_image + len(figures)}"
            ops.append(f"q {item.width_pt:.2f} 0 0 {height:.2f} {x:.2f} {y:.2f} cm {name} Do Q".encode())
            figures.append(item)
            y -= 14
            continue
        kind, text = item
        size, width = (15, 60) if kind == "h" else (11, 84)
        for line in textwrap.wrap(text, width):
            y -= size + 4
            ops.append(b"BT /F1 %d Tf %d %.2f Td " % (size, MARGIN, y) + _string(line) + b" Tj ET")
        y -= 8
    return b"\n".join(ops), figures


def text_pdf(pages: list[Page]) -> bytes:
    """Pages of text and figures; the text is a real text layer, each figure an image XObject."""
    objects: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>", b"", b""]
    objects[2] = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
    kids = []
    image_number = 1
    for page in pages:
        content, figures = _content(page, image_number)
        page_object = len(objects) + 1
        kids.append(f"{page_object} 0 R")
        images = " ".join(f"/Im{image_number + i} {page_object + 2 + i} 0 R" for i in range(len(figures)))
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {PAGE[0]} {PAGE[1]}]"
            f" /Contents {page_object + 1} 0 R"
            f" /Resources << /Font << /F1 3 0 R >> /XObject << {images} >> >> >>".encode()
        )
        objects.append(_stream(content))
        objects.extend(_image_object(figure) for figure in figures)
        image_number += len(figures)
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>".encode()
    return _write(objects)


def scan_pdf(scans: list[bytes], size: tuple[int, int]) -> bytes:
    """An image-only PDF: each page one greyscale JPEG of ``size`` pixels, filling an A4 page."""
    objects: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>", b""]
    kids = []
    for jpeg in scans:
        page_object = len(objects) + 1
        kids.append(f"{page_object} 0 R")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {PAGE[0]} {PAGE[1]}]"
            f" /Contents {page_object + 1} 0 R"
            f" /Resources << /XObject << /Scan {page_object + 2} 0 R >> >> >>".encode()
        )
        objects.append(_stream(f"q {PAGE[0]} 0 0 {PAGE[1]} 0 0 cm /Scan Do Q".encode()))
        objects.append(
            _stream(
                jpeg,
                f" /Type /XObject /Subtype /Image /Width {size[0]} /Height {size[1]}"
                " /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /DCTDecode",
            )
        )
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>".encode()
    return _write(objects)
