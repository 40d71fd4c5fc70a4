"""Real files for the vision tests, written here from their XML, zip and PDF objects (Pillow draws
the pictures; nothing is downloaded):

* :func:`diagram_docx`: a flowchart of text boxes joined by arrow connectors (DrawingML shapes,
  each with the VML fallback Word writes), almost no body text: LibreOffice and Word draw it;
* :func:`raster_docx`: two paragraphs and a large picture whose labels exist only as pixels;
* :func:`plain_docx`: prose only;
* :func:`chart_pdf`: a page with a text layer, a bar chart picture (its labels only in pixels) at a
  known place, and a small logo under any sensible area floor;
* :func:`picture_pptx`: slides with a picture and a small icon, a picture inside a scaled group,
  and a picture placeholder placed by its layout.

Each returns a frozen record with the file's bytes and the facts tests assert: the labels, the
picture (as :func:`ragd.vision.figures.encode_png` writes it, so its SHA-256 is the figure's),
where it sits (fractions of the page from the top-left, as ``Figure.box``).  Every label is drawn
in Pillow's bundled font at a size Tesseract reads.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import math
import zipfile
import zlib
from dataclasses import dataclass
from functools import cache
from xml.sax.saxutils import escape

from PIL import Image, ImageDraw, ImageFont

from ragd.vision.figures import encode_png
from tests.extract.builders import write_pdf

EMU_PER_INCH = 914_400
EMU_PER_PT = 12_700
_LETTER_TWIPS = (12_240, 15_840)
_MARGIN_TWIPS = 1_440

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_NS = {
    "w": W,
    "wp": "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing",
    "a": "http://schemas.openxmlformats.org/drawingml/2006/main",
    "pic": "http://schemas.openxmlformats.org/drawingml/2006/picture",
    "wps": "http://schemas.microsoft.com/office/word/2010/wordprocessingShape",
    "wpg": "http://schemas.microsoft.com/office/word/2010/wordprocessingGroup",
    "mc": "http://schemas.openxmlformats.org/markup-compatibility/2006",
    "v": "urn:schemas-microsoft-com:vml",
    "o": "urn:schemas-microsoft-com:office:office",
    "w10": "urn:schemas-microsoft-com:office:word",
    "r": "http://schemas.openxmlformats.org/officeDocument/2006/relationships",
    "w14": "http://schemas.microsoft.com/office/word/2010/wordml",
    "wp14": "http://schemas.microsoft.com/office/word/2010/wordprocessingDrawing",
}
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
_CT = "http://schemas.openxmlformats.org/package/2006/content-types"
_OOXML = "application/vnd.openxmlformats-officedocument"
_WPS_URI = "http://schemas.microsoft.com/office/word/2010/wordprocessingShape"
_PIC_URI = "http://schemas.openxmlformats.org/drawingml/2006/picture"

#: the steps of the diagram .docx (a snake: down the left column, across, up the right one)
DIAGRAM_LABELS = (
    "Receive order",
    "Check stock",
    "Reserve items",
    "Pick items",
    "Pack parcel",
    "Weigh parcel",
    "Print label",
    "Book courier",
    "Ship parcel",
    "Send invoice",
    "Record payment",
    "Close order",
)
#: the boxes of the raster figure (only pixels: no text layer holds them)
RASTER_LABELS = ("INTAKE", "TRIAGE", "REPAIR", "TESTING", "RETURN")
#: the bars of the chart picture: label -> value
CHART_BARS = {"NORTH": 42, "SOUTH": 17, "EAST": 29, "WEST": 35}


def font(size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.load_default(size=size)  # type: ignore[return-value]


# --- records --------------------------------------------------------------------------------
@dataclass(frozen=True)
class DiagramDocx:
    data: bytes
    labels: tuple[str, ...]
    title: str
    textboxes: int
    connectors: int

    @property
    def drawing_words(self) -> int:
        return sum(len(label.split()) for label in self.labels)


@dataclass(frozen=True)
class Picture:
    """A picture placed in a file: its pixels, PNG (as figures encode it), hash and box."""

    image: Image.Image
    png: bytes
    sha256: str
    box: tuple[float, float, float, float]
    labels: tuple[str, ...]

    @classmethod
    def of(
        cls, image: Image.Image, box: tuple[float, float, float, float], labels: tuple[str, ...]
    ) -> Picture:
        png = encode_png(image)
        return cls(image, png, hashlib.sha256(png).hexdigest(), box, labels)


@dataclass(frozen=True)
class RasterDocx:
    data: bytes
    paragraphs: tuple[str, ...]
    picture: Picture
    extent_emu: tuple[int, int]
    #: the picture's share of the page's usable area
    page_share: float


@dataclass(frozen=True)
class PlainDocx:
    data: bytes
    paragraphs: tuple[str, ...]


@dataclass(frozen=True)
class ChartPdf:
    data: bytes
    text_lines: tuple[str, ...]
    chart: Picture
    #: the chart's share of the page
    area_share: float
    #: the small logo's share of the page (under any sensible floor)
    logo_share: float


# --- pictures -------------------------------------------------------------------------------
@cache
def process_picture() -> Image.Image:
    """A repair process drawn as pixels: five labelled boxes joined by arrows."""
    image = Image.new("RGB", (1600, 1000), "white")
    draw = ImageDraw.Draw(image)
    draw.text((800, 70), "REPAIR PROCESS", fill=(20, 20, 30), font=font(64), anchor="mm")
    centres = [(260, 330), (800, 330), (1340, 330), (800, 730), (260, 730)]
    for start, end in itertools.pairwise(centres):
        _arrow(draw, start, end, gap=(235, 105))
    for (x, y), label in zip(centres, RASTER_LABELS, strict=True):
        draw.rounded_rectangle(
            (x - 220, y - 90, x + 220, y + 90), 24, fill=(232, 240, 252), outline=(30, 50, 100), width=6
        )
        draw.text((x, y), label, fill=(20, 20, 30), font=font(72), anchor="mm")
    return image


def _arrow(
    draw: ImageDraw.ImageDraw, start: tuple[int, int], end: tuple[int, int], gap: tuple[int, int]
) -> None:
    """An arrow from box centre ``start`` to box centre ``end``, between the boxes' edges."""
    (x0, y0), (x1, y1) = start, end
    length = math.hypot(x1 - x0, y1 - y0)
    ux, uy = (x1 - x0) / length, (y1 - y0) / length
    # how far a box (half-size ``gap``) reaches along the direction
    reach = min(gap[0] / abs(ux) if ux else math.inf, gap[1] / abs(uy) if uy else math.inf)
    tail = (x0 + ux * reach, y0 + uy * reach)
    tip = (x1 - ux * reach, y1 - uy * reach)
    draw.line((*tail, *tip), fill=(60, 70, 90), width=8)
    back = (tip[0] - ux * 36, tip[1] - uy * 36)
    wing = (-uy * 20, ux * 20)
    head = [tip, (back[0] + wing[0], back[1] + wing[1]), (back[0] - wing[0], back[1] - wing[1])]
    draw.polygon(head, fill=(60, 70, 90))


@cache
def chart_picture() -> Image.Image:
    """A bar chart whose labels and values exist only as pixels."""
    image = Image.new("RGB", (1200, 800), (250, 250, 246))
    draw = ImageDraw.Draw(image)
    draw.text((600, 60), "SALES BY REGION", fill=(20, 20, 30), font=font(60), anchor="mm")
    draw.line((120, 690, 1140, 690), fill=(20, 20, 30), width=4)
    for index, (label, value) in enumerate(CHART_BARS.items()):
        left = 170 + index * 240
        top = 690 - value * 11
        draw.rectangle((left, top, left + 150, 690), fill=(70, 110, 170))
        draw.text((left + 75, top - 40), str(value), fill=(20, 20, 30), font=font(52), anchor="mm")
        draw.text((left + 75, 740), label, fill=(20, 20, 30), font=font(52), anchor="mm")
    return image


def logo_picture() -> Image.Image:
    image = Image.new("RGB", (120, 120), (200, 40, 40))
    ImageDraw.Draw(image).ellipse((20, 20, 100, 100), fill="white")
    return image


def icon_picture() -> Image.Image:
    image = Image.new("RGB", (64, 64), (40, 160, 90))
    ImageDraw.Draw(image).rectangle((16, 16, 48, 48), fill="white")
    return image


@cache
def grouped_picture() -> Image.Image:
    image = Image.new("RGB", (800, 600), (255, 250, 235))
    draw = ImageDraw.Draw(image)
    draw.text((400, 300), "GROUPED", fill=(20, 20, 30), font=font(96), anchor="mm")
    return image


def _png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


# --- packages -------------------------------------------------------------------------------
def _zip(parts: dict[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as package:
        for name, body in parts.items():
            package.writestr(name, body)
    return buffer.getvalue()


def _content_types(overrides: dict[str, str]) -> str:
    items = "".join(f'<Override PartName="{part}" ContentType="{kind}"/>' for part, kind in overrides.items())
    return (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="{_CT}">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        f'<Default Extension="png" ContentType="image/png"/>{items}</Types>'
    )


def _rels(items: list[tuple[str, str, str]]) -> str:
    """(id, type's last segment, target) relationships."""
    body = "".join(
        f'<Relationship Id="{i}" Type="{_REL}/{kind}" Target="{target}"/>' for i, kind, target in items
    )
    head = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    return f'{head}<Relationships xmlns="{_PKG_REL}">{body}</Relationships>'


def docx_package(body: str, media: dict[str, bytes] | None = None) -> bytes:
    """A .docx whose ``w:body`` holds ``body`` (a Letter page with 1-inch margins is appended) and
    whose media parts are ``media`` (relationship id ``rIdImgN`` -> ``media/imageN.png``)."""
    declarations = " ".join(f'xmlns:{prefix}="{uri}"' for prefix, uri in _NS.items())
    section = (
        f'<w:sectPr><w:pgSz w:w="{_LETTER_TWIPS[0]}" w:h="{_LETTER_TWIPS[1]}"/>'
        f'<w:pgMar w:top="{_MARGIN_TWIPS}" w:right="{_MARGIN_TWIPS}" w:bottom="{_MARGIN_TWIPS}" '
        f'w:left="{_MARGIN_TWIPS}" w:header="720" w:footer="720" w:gutter="0"/></w:sectPr>'
    )
    document = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document {declarations} '
        f'mc:Ignorable="w14 wp14"><w:body>{body}{section}</w:body></w:document>'
    )
    media = media or {}
    parts: dict[str, str | bytes] = {
        "[Content_Types].xml": _content_types(
            {"/word/document.xml": f"{_OOXML}.wordprocessingml.document.main+xml"}
        ),
        "_rels/.rels": _rels([("rId1", "officeDocument", "word/document.xml")]),
        "word/_rels/document.xml.rels": _rels([(rid, "image", f"media/{rid}.png") for rid in media]),
        "word/document.xml": document,
    }
    parts.update({f"word/media/{rid}.png": png for rid, png in media.items()})
    return _zip(parts)


def _paragraph(text: str, style: str = "") -> str:
    size = '<w:rPr><w:b/><w:sz w:val="36"/></w:rPr>' if style == "title" else ""
    return f'<w:p><w:r>{size}<w:t xml:space="preserve">{escape(text)}</w:t></w:r></w:p>'


# --- the diagram .docx ----------------------------------------------------------------------
_BOX = (int(2.2 * EMU_PER_INCH), int(0.55 * EMU_PER_INCH))
_COLUMNS = (int(1.2 * EMU_PER_INCH), int(4.8 * EMU_PER_INCH))
_TOP = int(1.6 * EMU_PER_INCH)
_PITCH = int(1.25 * EMU_PER_INCH)


def _anchor(shape_id: int, x: int, y: int, cx: int, cy: int, graphic: str, uri: str) -> str:
    return (
        f'<wp:anchor distT="0" distB="0" distL="0" distR="0" simplePos="0" relativeHeight="{shape_id}" '
        'behindDoc="0" locked="0" layoutInCell="1" allowOverlap="1"><wp:simplePos x="0" y="0"/>'
        f'<wp:positionH relativeFrom="page"><wp:posOffset>{x}</wp:posOffset></wp:positionH>'
        f'<wp:positionV relativeFrom="page"><wp:posOffset>{y}</wp:posOffset></wp:positionV>'
        f'<wp:extent cx="{cx}" cy="{cy}"/><wp:effectExtent l="0" t="0" r="0" b="0"/><wp:wrapNone/>'
        f'<wp:docPr id="{shape_id}" name="Shape {shape_id}"/><wp:cNvGraphicFramePr/>'
        f'<a:graphic><a:graphicData uri="{uri}">{graphic}</a:graphicData></a:graphic></wp:anchor>'
    )


def _pt(emu: int) -> str:
    return f"{emu / EMU_PER_PT:.1f}pt"


def _text_box(shape_id: int, x: int, y: int, label: str) -> str:
    cx, cy = _BOX
    content = (
        '<w:txbxContent><w:p><w:pPr><w:jc w:val="center"/></w:pPr>'
        f'<w:r><w:rPr><w:sz w:val="24"/></w:rPr><w:t xml:space="preserve">{escape(label)}</w:t></w:r>'
        "</w:p></w:txbxContent>"
    )
    shape = (
        "<wps:wsp><wps:cNvSpPr/><wps:spPr>"
        f'<a:xfrm><a:off x="0" y="0"/><a:ext cx="{cx}" cy="{cy}"/></a:xfrm>'
        '<a:prstGeom prst="flowChartProcess"><a:avLst/></a:prstGeom>'
        '<a:solidFill><a:srgbClr val="E8F0FC"/></a:solidFill>'
        '<a:ln w="19050"><a:solidFill><a:srgbClr val="1F3864"/></a:solidFill></a:ln></wps:spPr>'
        f"<wps:txbx>{content}</wps:txbx>"
        '<wps:bodyPr rot="0" vert="horz" wrap="square" lIns="91440" tIns="45720" rIns="91440" bIns="45720" '
        'anchor="ctr"><a:noAutofit/></wps:bodyPr></wps:wsp>'
    )
    fallback = (
        f'<w:pict><v:rect style="position:absolute;margin-left:{_pt(x)};margin-top:{_pt(y)};width:{_pt(cx)};'
        f"height:{_pt(cy)};z-index:{shape_id};mso-position-horizontal-relative:page;"
        f'mso-position-vertical-relative:page" fillcolor="#e8f0fc" strokecolor="#1f3864">'
        f"<v:textbox>{content}</v:textbox></v:rect></w:pict>"
    )
    return _alternate(_anchor(shape_id, x, y, cx, cy, shape, _WPS_URI), fallback)


def _connector(shape_id: int, start: tuple[int, int], end: tuple[int, int]) -> str:
    (x0, y0), (x1, y1) = start, end
    x, y, cx, cy = min(x0, x1), min(y0, y1), abs(x1 - x0), abs(y1 - y0)
    flips = (' flipH="1"' if x1 < x0 else "") + (' flipV="1"' if y1 < y0 else "")
    shape = (
        "<wps:wsp><wps:cNvCnPr/><wps:spPr>"
        f'<a:xfrm{flips}><a:off x="0" y="0"/><a:ext cx="{cx}" cy="{cy}"/></a:xfrm>'
        '<a:prstGeom prst="straightConnector1"><a:avLst/></a:prstGeom>'
        '<a:ln w="19050"><a:solidFill><a:srgbClr val="1F3864"/></a:solidFill>'
        '<a:tailEnd type="triangle"/></a:ln>'
        "</wps:spPr><wps:bodyPr/></wps:wsp>"
    )
    fallback = (
        f'<w:pict><v:line style="position:absolute;z-index:{shape_id};mso-position-horizontal-relative:page;'
        f'mso-position-vertical-relative:page" from="{_pt(x0)},{_pt(y0)}" to="{_pt(x1)},{_pt(y1)}" '
        'strokecolor="#1f3864" strokeweight="1.5pt"><v:stroke endarrow="block"/></v:line></w:pict>'
    )
    return _alternate(_anchor(shape_id, x, y, cx, cy, shape, _WPS_URI), fallback)


def _alternate(choice: str, fallback: str) -> str:
    return (
        f'<w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:drawing>{choice}</w:drawing></mc:Choice>'
        f"<mc:Fallback>{fallback}</mc:Fallback></mc:AlternateContent></w:r>"
    )


def _slot(index: int, rows: int) -> tuple[int, int]:
    """The top-left of step ``index``'s box: down the left column, then up the right one."""
    column, row = divmod(index, rows)
    if column:
        row = rows - 1 - row
    return _COLUMNS[column], _TOP + row * _PITCH


def diagram_docx(labels: tuple[str, ...] = DIAGRAM_LABELS, title: str = "Order fulfilment") -> DiagramDocx:
    """A flowchart: one text box per label, an arrow connector between consecutive steps."""
    rows = (len(labels) + 1) // 2
    cx, cy = _BOX
    runs = []
    for index, label in enumerate(labels):
        runs.append(_text_box(index + 1, *_slot(index, rows), label))
    for index in range(len(labels) - 1):
        (ax, ay), (bx, by) = _slot(index, rows), _slot(index + 1, rows)
        if ax == bx:  # same column: bottom edge to top edge (or top to bottom going up)
            start = (ax + cx // 2, ay + cy if by > ay else ay)
            end = (bx + cx // 2, by if by > ay else by + cy)
        else:  # across: right edge to left edge
            start, end = (ax + cx, ay + cy // 2), (bx, by + cy // 2)
        runs.append(_connector(100 + index, start, end))
    body = _paragraph(title, "title") + f"<w:p>{''.join(runs)}</w:p>"
    return DiagramDocx(docx_package(body), labels, title, len(labels), len(labels) - 1)


# --- the raster-figure and plain .docx ------------------------------------------------------
RASTER_PARAGRAPHS = (
    "Repairs follow the process in the figure below.",
    "Every device is logged before work starts.",
)
PLAIN_PARAGRAPHS = (
    "The harbour office opens at seven and closes at four on weekdays.",
    "Cargo manifests are filed with the customs desk before a vessel is unloaded, and the duty "
    "is settled within five working days of arrival.",
    "Questions about storage fees go to the warehouse ledger team, who answer within a day.",
)


def _inline_picture(rel_id: str, cx: int, cy: int) -> str:
    picture = (
        f'<pic:pic><pic:nvPicPr><pic:cNvPr id="0" name="{rel_id}.png"/><pic:cNvPicPr/></pic:nvPicPr>'
        f'<pic:blipFill><a:blip r:embed="{rel_id}"/><a:stretch><a:fillRect/></a:stretch></pic:blipFill>'
        f'<pic:spPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="{cx}" cy="{cy}"/></a:xfrm>'
        '<a:prstGeom prst="rect"><a:avLst/></a:prstGeom></pic:spPr></pic:pic>'
    )
    return (
        '<w:p><w:r><w:drawing><wp:inline distT="0" distB="0" distL="0" distR="0">'
        f'<wp:extent cx="{cx}" cy="{cy}"/>'
        f'<wp:effectExtent l="0" t="0" r="0" b="0"/><wp:docPr id="1" name="Picture {rel_id}"/>'
        '<wp:cNvGraphicFramePr><a:graphicFrameLocks noChangeAspect="1"/></wp:cNvGraphicFramePr>'
        f'<a:graphic><a:graphicData uri="{_PIC_URI}">{picture}</a:graphicData></a:graphic>'
        "</wp:inline></w:drawing></w:r></w:p>"
    )


def raster_docx(width_in: float = 6.0) -> RasterDocx:
    """Two paragraphs and the process picture, ``width_in`` inches wide."""
    image = process_picture()
    cx = int(width_in * EMU_PER_INCH)
    cy = cx * image.height // image.width
    body = (
        _paragraph(RASTER_PARAGRAPHS[0])
        + _inline_picture("rIdImg1", cx, cy)
        + _paragraph(RASTER_PARAGRAPHS[1])
    )
    usable = (_LETTER_TWIPS[0] - 2 * _MARGIN_TWIPS) * (_LETTER_TWIPS[1] - 2 * _MARGIN_TWIPS) * 635 * 635
    data = docx_package(body, {"rIdImg1": _png(image)})
    picture = Picture.of(image, (0.0, 0.0, 1.0, 1.0), RASTER_LABELS)
    return RasterDocx(data, RASTER_PARAGRAPHS, picture, (cx, cy), cx * cy / usable)


def plain_docx() -> PlainDocx:
    body = _paragraph("Harbour office notes", "title") + "".join(_paragraph(p) for p in PLAIN_PARAGRAPHS)
    return PlainDocx(docx_package(body), ("Harbour office notes", *PLAIN_PARAGRAPHS))


# --- the chart PDF --------------------------------------------------------------------------
CHART_TEXT = ("Quarterly report", "Sales rose in every region this quarter.", "The chart shows the totals.")
_PAGE_PT = (612, 792)
_CHART_RECT = (72, 252, 468, 312)  # x, y (from the bottom), width, height in points
_LOGO_RECT = (520, 730, 40, 40)


def pdf_bytes(objects: list[bytes]) -> bytes:
    """A PDF from its numbered objects (1: the catalog), with a cross-reference table."""
    return write_pdf(objects, version="1.7")


def pdf_stream(data: bytes, extra: str = "") -> bytes:
    return f"<< /Length {len(data)}{extra} >>\nstream\n".encode() + data + b"\nendstream"


def pdf_image(image: Image.Image) -> bytes:
    """An RGB image XObject (Flate, lossless)."""
    rgb = image.convert("RGB")
    return pdf_stream(
        zlib.compress(rgb.tobytes()),
        f" /Type /XObject /Subtype /Image /Width {rgb.width} /Height {rgb.height}"
        " /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /FlateDecode",
    )


def _fraction_box(
    rect: tuple[int, int, int, int], page: tuple[int, int]
) -> tuple[float, float, float, float]:
    x, y, w, h = rect
    return (x / page[0], (page[1] - y - h) / page[1], (x + w) / page[0], (page[1] - y) / page[1])


def chart_pdf() -> ChartPdf:
    """One page: three lines of text, the chart picture at ``_CHART_RECT`` and a small logo."""
    lines = " ".join(f"({line}) Tj T*" for line in CHART_TEXT)
    x, y, w, h = _CHART_RECT
    lx, ly, lw, lh = _LOGO_RECT
    content = (
        f"BT /F1 14 Tf 72 720 Td 20 TL {lines} ET "
        f"q {w} 0 0 {h} {x} {y} cm /Chart Do Q q {lw} 0 0 {lh} {lx} {ly} cm /Logo Do Q"
    ).encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {_PAGE_PT[0]} {_PAGE_PT[1]}] /Contents 4 0 R "
        "/Resources << /Font << /F1 5 0 R >> /XObject << /Chart 6 0 R /Logo 7 0 R >> >> >>".encode(),
        pdf_stream(content),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        pdf_image(chart_picture()),
        pdf_image(logo_picture()),
    ]
    page_area = _PAGE_PT[0] * _PAGE_PT[1]
    chart = Picture.of(
        chart_picture(), _fraction_box(_CHART_RECT, _PAGE_PT), (*CHART_BARS, "SALES BY REGION")
    )
    return ChartPdf(pdf_bytes(objects), CHART_TEXT, chart, w * h / page_area, lw * lh / page_area)


# --- the PPTX -------------------------------------------------------------------------------
_P_NS = (
    'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
    f'xmlns:r="{_REL}" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"'
)
_SLIDE_EMU = (12_192_000, 6_858_000)  # 13.333 x 7.5 in
_PML = f"{_OOXML}.presentationml"
_TREE_HEAD = (
    '<p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr>'
    '<p:grpSpPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="0" cy="0"/><a:chOff x="0" y="0"/>'
    '<a:chExt cx="0" cy="0"/></a:xfrm></p:grpSpPr>'
)
SLIDE_TITLE = "Regional sales"
_CHART_ON_SLIDE = (1 * EMU_PER_INCH, int(1.2 * EMU_PER_INCH), 8 * EMU_PER_INCH, 8 * EMU_PER_INCH * 2 // 3)
_ICON_ON_SLIDE = (
    int(12 * EMU_PER_INCH),
    int(0.3 * EMU_PER_INCH),
    int(0.4 * EMU_PER_INCH),
    int(0.4 * EMU_PER_INCH),
)
# slide 2: a group drawn at (1 in, 0.5 in), 6 x 4.5 in, whose children live in a 12 x 9 in space
_GROUP = (
    EMU_PER_INCH,
    EMU_PER_INCH // 2,
    6 * EMU_PER_INCH,
    int(4.5 * EMU_PER_INCH),
    12 * EMU_PER_INCH,
    9 * EMU_PER_INCH,
)
_GROUPED_CHILD = (2 * EMU_PER_INCH, 2 * EMU_PER_INCH, 8 * EMU_PER_INCH, 6 * EMU_PER_INCH)
_GROUPED_ON_SLIDE = (2 * EMU_PER_INCH, int(1.5 * EMU_PER_INCH), 4 * EMU_PER_INCH, 3 * EMU_PER_INCH)


def _xfrm(x: int, y: int, cx: int, cy: int) -> str:
    return f'<a:xfrm><a:off x="{x}" y="{y}"/><a:ext cx="{cx}" cy="{cy}"/></a:xfrm>'


def _slide_text(shape_id: int, text: str) -> str:
    return (
        f'<p:sp><p:nvSpPr><p:cNvPr id="{shape_id}" name="Title {shape_id}"/>'
        '<p:cNvSpPr txBox="1"/><p:nvPr/></p:nvSpPr>'
        f"<p:spPr>{_xfrm(EMU_PER_INCH, EMU_PER_INCH // 4, 10 * EMU_PER_INCH, int(0.8 * EMU_PER_INCH))}"
        '<a:prstGeom prst="rect"><a:avLst/></a:prstGeom></p:spPr><p:txBody><a:bodyPr/><a:lstStyle/>'
        f'<a:p><a:r><a:rPr lang="en-US" sz="2800"/><a:t>{escape(text)}</a:t></a:r></a:p></p:txBody></p:sp>'
    )


def _slide_picture(
    shape_id: int, rel_id: str, rect: tuple[int, int, int, int] | None, placeholder: str = ""
) -> str:
    position = f'{_xfrm(*rect)}<a:prstGeom prst="rect"><a:avLst/></a:prstGeom>' if rect else ""
    return (
        f'<p:pic><p:nvPicPr><p:cNvPr id="{shape_id}" name="Picture {shape_id}"/>'
        f'<p:cNvPicPr><a:picLocks noChangeAspect="1"/></p:cNvPicPr><p:nvPr>{placeholder}</p:nvPr></p:nvPicPr>'
        f'<p:blipFill><a:blip r:embed="{rel_id}"/><a:stretch><a:fillRect/></a:stretch></p:blipFill>'
        f"<p:spPr>{position}</p:spPr></p:pic>"
    )


def _slide(shapes: str) -> str:
    return (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><p:sld {_P_NS}><p:cSld><p:spTree>'
        f"{_TREE_HEAD}{shapes}</p:spTree></p:cSld><p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:sld>"
    )


def _theme() -> str:
    colours = "".join(
        f"<a:{name}><a:srgbClr val=\"{value}\"/></a:{name}>"
        for name, value in (
            ("dk1", "000000"), ("lt1", "FFFFFF"), ("dk2", "1F497D"), ("lt2", "EEECE1"),
            ("accent1", "4F81BD"), ("accent2", "C0504D"), ("accent3", "9BBB59"), ("accent4", "8064A2"),
            ("accent5", "4BACC6"), ("accent6", "F79646"), ("hlink", "0000FF"), ("folHlink", "800080"),
        )
    )  # fmt: skip
    fonts = '<a:latin typeface="Calibri"/><a:ea typeface=""/><a:cs typeface=""/>'
    fill = '<a:solidFill><a:schemeClr val="phClr"/></a:solidFill>'
    line = f'<a:ln w="9525">{fill}</a:ln>'
    return (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<a:theme xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" name="Plain">'
        f'<a:themeElements><a:clrScheme name="Plain">{colours}</a:clrScheme><a:fontScheme name="Plain">'
        f"<a:majorFont>{fonts}</a:majorFont><a:minorFont>{fonts}</a:minorFont></a:fontScheme>"
        f'<a:fmtScheme name="Plain"><a:fillStyleLst>{fill * 3}</a:fillStyleLst>'
        f"<a:lnStyleLst>{line * 3}</a:lnStyleLst>"
        f"<a:effectStyleLst>{'<a:effectStyle><a:effectLst/></a:effectStyle>' * 3}</a:effectStyleLst>"
        f"<a:bgFillStyleLst>{fill * 3}</a:bgFillStyleLst></a:fmtScheme></a:themeElements></a:theme>"
    )


_CLR_MAP = (
    '<p:clrMap bg1="lt1" tx1="dk1" bg2="lt2" tx2="dk2" accent1="accent1" accent2="accent2" accent3="accent3" '
    'accent4="accent4" accent5="accent5" accent6="accent6" hlink="hlink" folHlink="folHlink"/>'
)
# slide 3's picture placeholder takes this position from the layout
_LAYOUT_PICTURE = (int(6.5 * EMU_PER_INCH), EMU_PER_INCH, int(5.6 * EMU_PER_INCH), int(3.5 * EMU_PER_INCH))


def _layout() -> str:
    placeholder = (
        '<p:sp><p:nvSpPr><p:cNvPr id="2" name="Picture Placeholder"/>'
        '<p:cNvSpPr><a:spLocks noGrp="1"/></p:cNvSpPr><p:nvPr><p:ph type="pic" idx="13"/></p:nvPr>'
        f"</p:nvSpPr><p:spPr>{_xfrm(*_LAYOUT_PICTURE)}</p:spPr></p:sp>"
    )
    return (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><p:sldLayout {_P_NS} preserve="1">'
        f'<p:cSld name="Picture"><p:spTree>{_TREE_HEAD}{placeholder}</p:spTree></p:cSld>'
        "<p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:sldLayout>"
    )


def _master() -> str:
    return (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><p:sldMaster {_P_NS}><p:cSld><p:spTree>'
        f"{_TREE_HEAD}</p:spTree></p:cSld>{_CLR_MAP}"
        '<p:sldLayoutIdLst><p:sldLayoutId id="2147483649" r:id="rId1"/>'
        "</p:sldLayoutIdLst></p:sldMaster>"
    )


def _slide_share(rect: tuple[int, int, int, int]) -> float:
    return rect[2] * rect[3] / (_SLIDE_EMU[0] * _SLIDE_EMU[1])


def _slide_box(rect: tuple[int, int, int, int]) -> tuple[float, float, float, float]:
    x, y, cx, cy = rect
    return (x / _SLIDE_EMU[0], y / _SLIDE_EMU[1], (x + cx) / _SLIDE_EMU[0], (y + cy) / _SLIDE_EMU[1])


@dataclass(frozen=True)
class SlidesPptx:
    """Three slides: the chart with a small icon; a picture inside a scaled group; a picture
    placeholder that takes its position from the layout."""

    data: bytes
    title: str
    chart: Picture
    chart_share: float
    icon_share: float
    grouped: Picture
    grouped_share: float
    placeholder: Picture
    placeholder_share: float


def picture_pptx() -> SlidesPptx:
    group = _GROUP
    grouped = (
        '<p:grpSp><p:nvGrpSpPr><p:cNvPr id="5" name="Group"/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr>'
        f'<p:grpSpPr><a:xfrm><a:off x="{group[0]}" y="{group[1]}"/><a:ext cx="{group[2]}" cy="{group[3]}"/>'
        f'<a:chOff x="0" y="0"/><a:chExt cx="{group[4]}" cy="{group[5]}"/></a:xfrm></p:grpSpPr>'
        f"{_slide_picture(6, 'rId2', _GROUPED_CHILD)}</p:grpSp>"
    )
    slides = [
        _slide(
            _slide_text(2, SLIDE_TITLE)
            + _slide_picture(3, "rId2", _CHART_ON_SLIDE)
            + _slide_picture(4, "rId3", _ICON_ON_SLIDE)
        ),
        _slide(_slide_text(2, "Grouped") + grouped),
        _slide(_slide_picture(2, "rId2", None, '<p:ph type="pic" idx="13"/>')),
    ]
    media = [
        {"rId2": _png(chart_picture()), "rId3": _png(icon_picture())},
        {"rId2": _png(grouped_picture())},
        {"rId2": _png(process_picture())},
    ]
    parts: dict[str, str | bytes] = {
        "_rels/.rels": _rels([("rId1", "officeDocument", "ppt/presentation.xml")]),
        "ppt/presentation.xml": (
            f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><p:presentation {_P_NS}>'
            '<p:sldMasterIdLst><p:sldMasterId id="2147483648" r:id="rId1"/></p:sldMasterIdLst><p:sldIdLst>'
            + "".join(f'<p:sldId id="{256 + i}" r:id="rId{10 + i}"/>' for i in range(len(slides)))
            + f'</p:sldIdLst><p:sldSz cx="{_SLIDE_EMU[0]}" cy="{_SLIDE_EMU[1]}"/>'
            + '<p:notesSz cx="6858000" cy="9144000"/>'
            "</p:presentation>"
        ),
        "ppt/_rels/presentation.xml.rels": _rels(
            [("rId1", "slideMaster", "slideMasters/slideMaster1.xml"), ("rId2", "theme", "theme/theme1.xml")]
            + [(f"rId{10 + i}", "slide", f"slides/slide{i + 1}.xml") for i in range(len(slides))]
        ),
        "ppt/slideMasters/slideMaster1.xml": _master(),
        "ppt/slideMasters/_rels/slideMaster1.xml.rels": _rels(
            [
                ("rId1", "slideLayout", "../slideLayouts/slideLayout1.xml"),
                ("rId2", "theme", "../theme/theme1.xml"),
            ]
        ),
        "ppt/slideLayouts/slideLayout1.xml": _layout(),
        "ppt/slideLayouts/_rels/slideLayout1.xml.rels": _rels(
            [("rId1", "slideMaster", "../slideMasters/slideMaster1.xml")]
        ),
        "ppt/theme/theme1.xml": _theme(),
    }
    overrides = {
        "/ppt/presentation.xml": f"{_PML}.presentation.main+xml",
        "/ppt/slideMasters/slideMaster1.xml": f"{_PML}.slideMaster+xml",
        "/ppt/slideLayouts/slideLayout1.xml": f"{_PML}.slideLayout+xml",
        "/ppt/theme/theme1.xml": f"{_OOXML}.theme+xml",
    }
    for index, (slide, pictures) in enumerate(zip(slides, media, strict=True), start=1):
        parts[f"ppt/slides/slide{index}.xml"] = slide
        overrides[f"/ppt/slides/slide{index}.xml"] = f"{_PML}.slide+xml"
        rels = [("rId1", "slideLayout", "../slideLayouts/slideLayout1.xml")]
        for rel_id, png in pictures.items():
            parts[f"ppt/media/s{index}{rel_id}.png"] = png
            rels.append((rel_id, "image", f"../media/s{index}{rel_id}.png"))
        parts[f"ppt/slides/_rels/slide{index}.xml.rels"] = _rels(rels)
    parts["[Content_Types].xml"] = _content_types(overrides)
    return SlidesPptx(
        data=_zip(parts),
        title=SLIDE_TITLE,
        chart=Picture.of(chart_picture(), _slide_box(_CHART_ON_SLIDE), (*CHART_BARS, "SALES BY REGION")),
        chart_share=_slide_share(_CHART_ON_SLIDE),
        icon_share=_slide_share(_ICON_ON_SLIDE),
        grouped=Picture.of(grouped_picture(), _slide_box(_GROUPED_ON_SLIDE), ("GROUPED",)),
        grouped_share=_slide_share(_GROUPED_ON_SLIDE),
        placeholder=Picture.of(process_picture(), _slide_box(_LAYOUT_PICTURE), RASTER_LABELS),
        placeholder_share=_slide_share(_LAYOUT_PICTURE),
    )
