"""Pictures found inside PDFs, slides and Word bodies: which ones, where, and their pixels.

The files are real (tests/support/vision_docs.py, or PDF objects written here); a figure's PNG is
compared pixel for pixel with the picture that was put in the file.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import zipfile
import zlib

import pytest
from PIL import Image, ImageChops

from ragd.errors import EncryptedDocument, ExtractionError
from ragd.vision.figures import Figure, decode_bounded, docx_figures, pdf_figures, pptx_figures
from tests.extract.builders import build_pdf
from tests.support.vision_docs import (
    chart_pdf,
    chart_picture,
    pdf_bytes,
    pdf_image,
    pdf_stream,
    picture_pptx,
    plain_docx,
    process_picture,
    raster_docx,
)

FLOOR = 0.05


def _pixels(figure: Figure) -> Image.Image:
    return Image.open(io.BytesIO(figure.png))


def _same(a: Image.Image, b: Image.Image) -> bool:
    return a.size == b.size and ImageChops.difference(a.convert("RGB"), b.convert("RGB")).getbbox() is None


def _page_pdf(
    content: str, xobjects: dict[str, bytes], *, page: str = "", size: tuple[int, int] = (612, 792)
) -> bytes:
    """One page drawing ``content`` with the named XObjects (objects 4 onwards)."""
    names = " ".join(f"/{name} {4 + i} 0 R" for i, name in enumerate(xobjects))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {size[0]} {size[1]}] /Contents {4 + len(xobjects)} 0 R "
        f"/Resources << /XObject << {names} >> >> {page}>>".encode(),
        *xobjects.values(),
        pdf_stream(content.encode()),
    ]
    return pdf_bytes(objects)


def _solid(colour: tuple[int, int, int], size: tuple[int, int] = (200, 100)) -> Image.Image:
    return Image.new("RGB", size, colour)


# --- PDF ------------------------------------------------------------------------------------
def test_the_chart_of_a_pdf_is_found_where_it_is_drawn_and_the_logo_is_not() -> None:
    doc = chart_pdf()
    figures = pdf_figures(doc.data, min_area_share=FLOOR, max_images=5)
    assert len(figures) == 1  # the logo covers 0.3 % of the page
    figure = figures[0]
    assert (figure.page, figure.order) == (0, 0)
    assert figure.box == pytest.approx(doc.chart.box, abs=1e-4)
    assert figure.area_share == pytest.approx(doc.area_share, abs=1e-4)
    # the picture's own pixels, exactly: the same bytes and hash as the generator's
    assert _same(_pixels(figure), chart_picture())
    assert (figure.sha256, figure.png) == (doc.chart.sha256, doc.chart.png)
    assert pdf_figures(doc.data, min_area_share=0.5, max_images=5) == []
    logo = pdf_figures(doc.data, min_area_share=doc.logo_share / 2, max_images=5)
    assert len(logo) == 2


def test_a_large_picture_is_downscaled_to_the_pixel_cap() -> None:
    doc = chart_pdf()
    (figure,) = pdf_figures(doc.data, min_area_share=FLOOR, max_images=5, max_pixels=60_000)
    image = _pixels(figure)
    assert image.width * image.height <= 60_000
    assert image.width / image.height == pytest.approx(1.5, rel=0.02)


def test_max_images_and_a_repeated_picture_once() -> None:
    red, blue = pdf_image(_solid((200, 0, 0))), pdf_image(_solid((0, 0, 200)))
    content = "q 300 0 0 150 50 600 cm /A Do Q q 300 0 0 150 50 300 cm /B Do Q q 300 0 0 150 50 50 cm /A Do Q"
    data = _page_pdf(content, {"A": red, "B": blue})
    figures = pdf_figures(data, min_area_share=FLOOR, max_images=5)
    assert [f.order for f in figures] == [0, 1]  # the third draws A again
    assert _same(_pixels(figures[0]), _solid((200, 0, 0)))
    assert _same(_pixels(figures[1]), _solid((0, 0, 200)))
    assert len(pdf_figures(data, min_area_share=FLOOR, max_images=1)) == 1


def test_a_picture_inside_a_form_is_placed_through_the_forms_matrices() -> None:
    form = pdf_stream(
        b"q 100 0 0 50 10 10 cm /Im Do Q",
        " /Type /XObject /Subtype /Form /BBox [0 0 500 500] /Matrix [1 0 0 1 5 5]"
        " /Resources << /XObject << /Im 5 0 R >> >>",
    )
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 600 800] /Contents 6 0 R"
        b" /Resources << /XObject << /Fm 4 0 R >> >> >>",
        form,
        pdf_image(_solid((0, 150, 0))),
        pdf_stream(b"q 2 0 0 2 100 300 cm /Fm Do Q"),
    ]
    (figure,) = pdf_figures(pdf_bytes(objects), min_area_share=0.01, max_images=5)
    # the image spans (15, 15)-(115, 65) in the form, (130, 330)-(330, 430) on the page
    assert figure.box == pytest.approx((130 / 600, 370 / 800, 330 / 600, 470 / 800), abs=1e-4)


@pytest.mark.parametrize(
    ("rotate", "box"),
    [
        (0, (0.1, 0.1, 0.5, 0.3)),
        (90, (0.7, 0.1, 0.9, 0.5)),
        (180, (0.5, 0.7, 0.9, 0.9)),
        (270, (0.1, 0.5, 0.3, 0.9)),
    ],
)
def test_a_rotated_page_has_its_box_on_the_page_as_shown(rotate: int, box: tuple[float, ...]) -> None:
    # the picture: left 10 % to 50 %, top 10 % to 30 % of an unrotated 1000 x 1000 page
    data = _page_pdf(
        "q 400 0 0 200 100 700 cm /A Do Q",
        {"A": pdf_image(_solid((9, 9, 9)))},
        page=f"/Rotate {rotate} ",
        size=(1000, 1000),
    )
    (figure,) = pdf_figures(data, min_area_share=FLOOR, max_images=5)
    assert figure.box == pytest.approx(box, abs=1e-4)


def test_transparent_parts_are_white_and_colour_fills_are_no_figures() -> None:
    alpha = Image.new("L", (200, 100), 0)
    alpha.paste(255, (0, 0, 100, 100))  # the left half opaque
    mask = pdf_stream(
        zlib.compress(alpha.tobytes()),
        " /Type /XObject /Subtype /Image /Width 200 /Height 100 /ColorSpace /DeviceGray /BitsPerComponent 8"
        " /Filter /FlateDecode",
    )
    black = _solid((0, 0, 0)).tobytes()
    masked = pdf_stream(
        zlib.compress(black),
        " /Type /XObject /Subtype /Image /Width 200 /Height 100 /ColorSpace /DeviceRGB /BitsPerComponent 8"
        " /Filter /FlateDecode /SMask 5 0 R",
    )
    fill = pdf_image(_solid((50, 50, 50), (4, 4)))  # 4 x 4 pixels stretched over half the page
    data = _page_pdf(
        "q 400 0 0 200 100 500 cm /M Do Q q 600 0 0 400 0 0 cm /F Do Q", {"M": masked, "S": mask, "F": fill}
    )
    (figure,) = pdf_figures(data, min_area_share=FLOOR, max_images=5)
    image = _pixels(figure).convert("RGB")
    assert image.getpixel((10, 50)) == (0, 0, 0)
    assert image.getpixel((190, 50)) == (255, 255, 255)


def test_a_broken_or_locked_pdf_is_a_typed_error() -> None:
    with pytest.raises(ExtractionError) as caught:
        pdf_figures(b"%PDF-1.7 not really", min_area_share=FLOOR, max_images=5, name="bad.pdf")
    assert caught.value.code == "EXTRACTION_FAILED"
    assert "bad.pdf" in caught.value.message
    with pytest.raises(EncryptedDocument):
        pdf_figures(build_pdf(["secret"], user_password="pw"), min_area_share=FLOOR, max_images=5)


# --- PPTX and DOCX --------------------------------------------------------------------------
def test_slide_pictures_in_place_grouped_and_placed_by_their_layout() -> None:
    deck = picture_pptx()
    figures = pptx_figures(deck.data, min_area_share=FLOOR, max_images=9)
    expected = [
        (0, deck.chart, deck.chart_share),
        (1, deck.grouped, deck.grouped_share),
        (2, deck.placeholder, deck.placeholder_share),
    ]
    assert len(figures) == len(expected)  # the icon covers 0.2 % of its slide
    for figure, (slide, picture, share) in zip(figures, expected, strict=True):
        assert (figure.page, figure.order, figure.sha256) == (slide, 0, picture.sha256)
        assert figure.box == pytest.approx(picture.box, abs=1e-4)
        assert figure.area_share == pytest.approx(share, abs=1e-4)
    assert len(pptx_figures(deck.data, min_area_share=FLOOR, max_images=2)) == 2
    assert len(pptx_figures(deck.data, min_area_share=deck.icon_share / 2, max_images=9)) == 4


def test_a_slide_that_cannot_be_read_costs_only_its_own_pictures() -> None:
    deck = picture_pptx()
    broken = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(deck.data)) as source, zipfile.ZipFile(broken, "w") as target:
        for item in source.infolist():
            body = source.read(item)
            target.writestr(item, body[:200] if item.filename == "ppt/slides/slide2.xml" else body)
    figures = pptx_figures(broken.getvalue(), min_area_share=FLOOR, max_images=9)
    assert [(f.page, f.sha256) for f in figures] == [(0, deck.chart.sha256), (2, deck.placeholder.sha256)]


def test_body_pictures_of_a_docx() -> None:
    doc = raster_docx()
    (figure,) = docx_figures(doc.data, min_area_share=FLOOR, max_images=5)
    assert (figure.page, figure.order, figure.box) == (0, 0, (0.0, 0.0, 1.0, 1.0))
    assert figure.sha256 == doc.picture.sha256
    assert figure.area_share == pytest.approx(doc.page_share, abs=1e-4)
    assert docx_figures(doc.data, min_area_share=0.5, max_images=5) == []
    assert docx_figures(plain_docx().data, min_area_share=FLOOR, max_images=5) == []


def test_a_broken_package_is_a_typed_error() -> None:
    with pytest.raises(ExtractionError) as caught:
        pptx_figures(b"PK\x03\x04 broken", min_area_share=FLOOR, max_images=5, name="bad.pptx")
    assert caught.value.code == "EXTRACTION_FAILED"
    with pytest.raises(ExtractionError):
        docx_figures(b"PK\x03\x04 broken", min_area_share=FLOOR, max_images=5)


# --- decoding -------------------------------------------------------------------------------
def test_decoding_is_bounded_before_pixels_are_read() -> None:
    # a PNG header declaring 50,000 x 50,000 pixels (2.5 gigapixels): refused from its header
    header = b"\x89PNG\r\n\x1a\n" + _png_chunk(
        b"IHDR", (50_000).to_bytes(4, "big") * 2 + b"\x08\x02\x00\x00\x00"
    )
    assert decode_bounded(header + _png_chunk(b"IEND", b""), 4_000_000) is None
    assert decode_bounded(b"not an image", 4_000_000) is None
    photo = io.BytesIO()
    process_picture().save(photo, format="JPEG")
    small = decode_bounded(photo.getvalue(), 100_000)
    assert small is not None
    assert small.width * small.height <= 100_000
    assert small.width / small.height == pytest.approx(1.6, rel=0.02)


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return len(body).to_bytes(4, "big") + kind + body + zlib.crc32(kind + body).to_bytes(4, "big")


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="Tesseract is not installed")
def test_the_labels_of_the_pictures_are_pixels_tesseract_reads() -> None:
    (figure,) = pdf_figures(chart_pdf().data, min_area_share=FLOOR, max_images=5)
    words = subprocess.run(
        ["tesseract", "stdin", "stdout", "--psm", "11"], input=figure.png, capture_output=True, check=True
    ).stdout.decode()
    for label in ("NORTH", "SOUTH", "EAST", "WEST", "SALES", "REGION"):
        assert label in words
