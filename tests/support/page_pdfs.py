"""PDFs made for page tests: text drawn by PDFium at known places, and scans drawn by Pillow.

:func:`text_pdf` writes each line as one Helvetica text object at a known baseline, and returns
where each line is (fractions of the page, top-left origin, the line's left edge and baseline);
:func:`scan_pdf` draws words into a picture and wraps it in an image-only PDF (a scan) and says
where each word was drawn.  :func:`ink_in` measures the dark pixels of a rendered page in a box.
"""

from __future__ import annotations

import ctypes
import io
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from PIL import Image, ImageDraw, ImageFont

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
LEFT = 54.0


@dataclass(frozen=True, slots=True)
class Line:
    """A line drawn on a page: its text, page (0-based), and left edge and baseline as fractions."""

    text: str
    page: int
    x: float
    baseline: float
    size: float


def text_pdf(
    pages: list[tuple[tuple[float, float], list[str]]], *, rotate: int = 0, size: float = 11.0
) -> tuple[bytes, list[Line]]:
    """A text PDF, pages of the given sizes (points), one line per string; ``rotate``: each page's
    /Rotate.  The lines' places are given as the page is rendered (rotation applied)."""
    pdf = pdfium.PdfDocument.new()
    font = pdfium_c.FPDFText_LoadStandardFont(pdf.raw, b"Helvetica")
    lines: list[Line] = []
    for number, ((width, height), texts) in enumerate(pages):
        page = pdf.new_page(width, height)
        y = height - 72.0
        for text in texts:
            obj = pdfium_c.FPDFPageObj_CreateTextObj(pdf.raw, font, size)
            buffer = ctypes.create_string_buffer((text + "\0").encode("utf-16-le"))
            pdfium_c.FPDFText_SetText(obj, ctypes.cast(buffer, ctypes.POINTER(pdfium_c.FPDF_WCHAR)))
            pdfium_c.FPDFPageObj_Transform(obj, 1, 0, 0, 1, LEFT, y)
            pdfium_c.FPDFPage_InsertObject(page.raw, obj)
            if rotate == 0:
                lines.append(Line(text, number, LEFT / width, 1.0 - y / height, size / height))
            y -= size * 1.8
        pdfium_c.FPDFPage_GenerateContent(page.raw)
        if rotate:
            page.set_rotation(rotate)
        page.close()
    out = io.BytesIO()
    pdf.save(out)
    pdf.close()
    return out.getvalue(), lines


@dataclass(frozen=True, slots=True)
class Word:
    """A word drawn on a scan: its text, page, and box in fractions of the page."""

    text: str
    page: int
    box: tuple[float, float, float, float]


def scan_pdf(pages: list[list[str]], *, width: int = 1275, height: int = 1650) -> tuple[bytes, list[Word]]:
    """An image-only PDF (150 dpi Letter pictures), each page's lines drawn in black on white."""
    font = ImageFont.truetype(FONT, 30)
    images: list[Image.Image] = []
    words: list[Word] = []
    for number, lines in enumerate(pages):
        image = Image.new("L", (width, height), 255)
        draw = ImageDraw.Draw(image)
        y = 150
        for line in lines:
            x = 150
            for text in line.split():
                left, top, right, bottom = draw.textbbox((x, y), text, font=font)
                draw.text((x, y), text, font=font, fill=0)
                words.append(Word(text, number, (left / width, top / height, right / width, bottom / height)))
                x = right + 14
            y += 60
        images.append(image)
    out = io.BytesIO()
    images[0].save(out, format="PDF", resolution=150.0, save_all=True, append_images=images[1:])
    return out.getvalue(), words


def ink_in(image: Image.Image, box: tuple[float, float, float, float], *, dark: int = 128) -> int:
    """How many pixels of ``image`` inside ``box`` (fractions) are dark (text)."""
    grey = image.convert("L")
    w, h = grey.size
    crop = grey.crop((int(box[0] * w), int(box[1] * h), max(int(box[2] * w), 1), max(int(box[3] * h), 1)))
    return sum(1 for value in crop.get_flattened_data() if value < dark)
