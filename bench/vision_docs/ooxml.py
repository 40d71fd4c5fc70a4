"""DOCX and PPTX packages of the vision corpus, written by hand (no office library is installed).

* :func:`shapes_docx`: a document whose diagram is Word drawing shapes: each step a
  ``wps:wsp`` with its label in a text box (``w:txbxContent``), the arrows connector shapes,
  inside ``mc:AlternateContent`` with the VML fallback Word writes beside them.
* :func:`picture_docx`: paragraphs and inline pictures (a pasted flowchart, an org chart).
* :func:`picture_pptx`: slides with a title and either bullet text or one picture.

Packages are deterministic: fixed zip timestamps, parts in a fixed order.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from xml.sax.saxutils import escape

EMU = 914_400  # per inch
_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_A = "http://schemas.openxmlformats.org/drawingml/2006/main"
_P = "http://schemas.openxmlformats.org/presentationml/2006/main"
_PIC = "http://schemas.openxmlformats.org/drawingml/2006/picture"
_WP = "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"
_WPS = "http://schemas.microsoft.com/office/word/2010/wordprocessingShape"
_MC = "http://schemas.openxmlformats.org/markup-compatibility/2006"
_V = "urn:schemas-microsoft-com:vml"
_CT = "http://schemas.openxmlformats.org/package/2006/content-types"
_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
_OOXML = "application/vnd.openxmlformats-officedocument"
_XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'


@dataclass(frozen=True)
class Shape:
    """A labelled drawing shape at (x, y) inches from the page's top-left corner, w × h inches."""

    lines: tuple[str, ...]
    x: float
    y: float
    w: float = 2.1
    h: float = 0.8
    geometry: str = "flowChartProcess"  # flowChartDecision, flowChartTerminator, rect
    border: bool = True


@dataclass(frozen=True)
class Connector:
    """An arrow from (x1, y1) to (x2, y2), inches from the page's top-left corner."""

    x1: float
    y1: float
    x2: float
    y2: float


def zip_parts(parts: dict[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, body in parts.items():
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 5, 9, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, body)
    return buffer.getvalue()


def _types(defaults: dict[str, str], overrides: dict[str, str]) -> str:
    items = "".join(f'<Default Extension="{e}" ContentType="{t}"/>' for e, t in defaults.items())
    items += "".join(f'<Override PartName="{p}" ContentType="{t}"/>' for p, t in overrides.items())
    base = (
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
    )
    return f'{_XML}<Types xmlns="{_CT}">{base}{items}</Types>'


def _rels(targets: list[tuple[str, str]]) -> str:
    items = "".join(
        f'<Relationship Id="rId{i}" Type="{_R}/{kind}" Target="{target}"/>'
        for i, (kind, target) in enumerate(targets, start=1)
    )
    return f'{_XML}<Relationships xmlns="{_RELS}">{items}</Relationships>'


def _paragraph(text: str, style: str = "", size: int = 0) -> str:
    props = f'<w:pPr><w:pStyle w:val="{style}"/></w:pPr>' if style else ""
    run = f'<w:rPr><w:sz w:val="{size}"/></w:rPr>' if size else ""
    return f'<w:p>{props}<w:r>{run}<w:t xml:space="preserve">{escape(text)}</w:t></w:r></w:p>'


def _text_blocks(blocks: list[tuple[str, str]]) -> str:
    """("h1" | "h2" | "p", text) blocks as Word paragraphs."""
    styles = {"h1": "Heading1", "h2": "Heading2", "p": ""}
    return "".join(_paragraph(text, styles[kind]) for kind, text in blocks)


def _emu(inches: float) -> int:
    return round(inches * EMU)


def _anchor(number: int, x: float, y: float, w: float, h: float, body: str) -> str:
    return (
        f'<wp:anchor distT="0" distB="0" distL="0" distR="0" simplePos="0" relativeHeight="{number}"'
        ' behindDoc="0" locked="0" layoutInCell="1" allowOverlap="1"><wp:simplePos x="0" y="0"/>'
        f'<wp:positionH relativeFrom="page"><wp:posOffset>{_emu(x)}</wp:posOffset></wp:positionH>'
        f'<wp:positionV relativeFrom="page"><wp:posOffset>{_emu(y)}</wp:posOffset></wp:positionV>'
        f'<wp:extent cx="{_emu(w)}" cy="{_emu(h)}"/><wp:effectExtent l="0" t="0" r="0" b="0"/>'
        f'<wp:wrapNone/><wp:docPr id="{number}" name="Shape {number}"/><wp:cNvGraphicFramePr/>'
        f'<a:graphic><a:graphicData uri="{_WPS}">{body}</a:graphicData></a:graphic></wp:anchor>'
    )


def _label_paragraphs(lines: tuple[str, ...]) -> str:
    return "".join(
        '<w:p><w:pPr><w:jc w:val="center"/><w:spacing w:after="0"/></w:pPr><w:r><w:rPr><w:sz w:val="22"/>'
        f'</w:rPr><w:t xml:space="preserve">{escape(line)}</w:t></w:r></w:p>'
        for line in lines
    )


def _shape(number: int, shape: Shape) -> str:
    line = '<a:ln w="19050"><a:solidFill><a:srgbClr val="3C465A"/></a:solidFill></a:ln>'
    fill = '<a:solidFill><a:srgbClr val="E8F0FC"/></a:solidFill>' if shape.border else "<a:noFill/>"
    outline = line if shape.border else "<a:ln><a:noFill/></a:ln>"
    text = _label_paragraphs(shape.lines)
    wsp = (
        f'<wps:wsp><wps:cNvSpPr/><wps:spPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="{_emu(shape.w)}"'
        f' cy="{_emu(shape.h)}"/></a:xfrm><a:prstGeom prst="{shape.geometry}"><a:avLst/></a:prstGeom>'
        f"{fill}{outline}</wps:spPr><wps:txbx><w:txbxContent>{text}</w:txbxContent></wps:txbx>"
        '<wps:bodyPr rot="0" vert="horz" wrap="square" lIns="45720" tIns="45720" rIns="45720"'
        ' bIns="45720" anchor="ctr"><a:noAutofit/></wps:bodyPr></wps:wsp>'
    )
    stroke = 'stroked="t" strokecolor="#3C465A"' if shape.border else 'stroked="f"'
    vml = (
        f'<w:pict><v:rect style="position:absolute;margin-left:{shape.x}in;margin-top:{shape.y}in;'
        f"width:{shape.w}in;height:{shape.h}in;mso-position-horizontal-relative:page;"
        f'mso-position-vertical-relative:page" fillcolor="#E8F0FC" {stroke}>'
        f"<v:textbox><w:txbxContent>{text}</w:txbxContent></v:textbox></v:rect></w:pict>"
    )
    drawing = f"<w:drawing>{_anchor(number, shape.x, shape.y, shape.w, shape.h, wsp)}</w:drawing>"
    return (
        f'<w:r><mc:AlternateContent><mc:Choice Requires="wps">{drawing}</mc:Choice>'
        f"<mc:Fallback>{vml}</mc:Fallback></mc:AlternateContent></w:r>"
    )


def _connector(number: int, arrow: Connector) -> str:
    x, y = min(arrow.x1, arrow.x2), min(arrow.y1, arrow.y2)
    w, h = abs(arrow.x2 - arrow.x1), abs(arrow.y2 - arrow.y1)
    flips = ' flipH="1"' * (arrow.x2 < arrow.x1) + ' flipV="1"' * (arrow.y2 < arrow.y1)
    wsp = (
        f'<wps:wsp><wps:cNvCnPr/><wps:spPr><a:xfrm{flips}><a:off x="0" y="0"/><a:ext cx="{_emu(w)}"'
        f' cy="{_emu(h)}"/></a:xfrm><a:prstGeom prst="straightConnector1"><a:avLst/></a:prstGeom>'
        '<a:ln w="19050"><a:solidFill><a:srgbClr val="3C465A"/></a:solidFill>'
        '<a:tailEnd type="triangle"/></a:ln></wps:spPr><wps:bodyPr/></wps:wsp>'
    )
    vml = (
        f'<w:pict><v:line style="position:absolute;mso-position-horizontal-relative:page;'
        f'mso-position-vertical-relative:page" from="{arrow.x1}in,{arrow.y1}in"'
        f' to="{arrow.x2}in,{arrow.y2}in"'
        ' strokecolor="#3C465A" strokeweight="1.5pt"><v:stroke endarrow="block"/></v:line></w:pict>'
    )
    drawing = f"<w:drawing>{_anchor(number, x, y, w, h, wsp)}</w:drawing>"
    return (
        f'<w:r><mc:AlternateContent><mc:Choice Requires="wps">{drawing}</mc:Choice>'
        f"<mc:Fallback>{vml}</mc:Fallback></mc:AlternateContent></w:r>"
    )


def _document(body: str) -> str:
    section = (
        '<w:sectPr><w:pgSz w:w="11906" w:h="16838"/><w:pgMar w:top="1134" w:right="1134" w:bottom="1134"'
        ' w:left="1134" w:header="709" w:footer="709" w:gutter="0"/></w:sectPr>'
    )
    return (
        f'{_XML}<w:document xmlns:w="{_W}" xmlns:r="{_R}" xmlns:a="{_A}" xmlns:pic="{_PIC}" xmlns:wp="{_WP}"'
        f' xmlns:wps="{_WPS}" xmlns:mc="{_MC}" xmlns:v="{_V}" mc:Ignorable="wps">'
        f"<w:body>{body}{section}</w:body></w:document>"
    )


_STYLES = (
    f'{_XML}<w:styles xmlns:w="{_W}"><w:docDefaults><w:rPrDefault><w:rPr><w:sz w:val="22"/></w:rPr>'
    "</w:rPrDefault></w:docDefaults>"
    + "".join(
        f'<w:style w:type="paragraph" w:styleId="Heading{i}"><w:name w:val="heading {i}"/>'
        f'<w:pPr><w:outlineLvl w:val="{i - 1}"/></w:pPr><w:rPr><w:b/><w:sz w:val="{36 - 4 * i}"/></w:rPr>'
        "</w:style>"
        for i in (1, 2)
    )
    + "</w:styles>"
)


def _docx(body: str, media: dict[str, bytes]) -> bytes:
    targets = [("styles", "styles.xml"), *(("image", f"media/{name}") for name in media)]
    parts: dict[str, str | bytes] = {
        "[Content_Types].xml": _types(
            {"png": "image/png", "jpeg": "image/jpeg"},
            {
                "/word/document.xml": f"{_OOXML}.wordprocessingml.document.main+xml",
                "/word/styles.xml": f"{_OOXML}.wordprocessingml.styles+xml",
            },
        ),
        "_rels/.rels": _rels([("officeDocument", "word/document.xml")]),
        "word/_rels/document.xml.rels": _rels(targets),
        "word/document.xml": _document(body),
        "word/styles.xml": _STYLES,
        **{f"word/media/{name}": data for name, data in media.items()},
    }
    return zip_parts(parts)


def shapes_docx(before: list[tuple[str, str]], shapes: list[Shape], arrows: list[Connector]) -> bytes:
    """Text blocks on page 1, then a page holding only the drawing (shapes anchored to the page)."""
    runs = "".join(_connector(100 + i, arrow) for i, arrow in enumerate(arrows))
    runs += "".join(_shape(1 + i, shape) for i, shape in enumerate(shapes))
    page_break = '<w:p><w:r><w:br w:type="page"/></w:r></w:p>'
    return _docx(f"{_text_blocks(before)}{page_break}<w:p>{runs}</w:p>", {})


def _inline_picture(number: int, relationship: str, width_in: float, height_in: float) -> str:
    cx, cy = _emu(width_in), _emu(height_in)
    pic = (
        f'<pic:pic><pic:nvPicPr><pic:cNvPr id="{number}" name="Picture {number}"/><pic:cNvPicPr/>'
        "</pic:nvPicPr>"
        f'<pic:blipFill><a:blip r:embed="{relationship}"/><a:stretch><a:fillRect/></a:stretch></pic:blipFill>'
        f'<pic:spPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="{cx}" cy="{cy}"/></a:xfrm>'
        '<a:prstGeom prst="rect"><a:avLst/></a:prstGeom></pic:spPr></pic:pic>'
    )
    return (
        f'<w:p><w:pPr><w:jc w:val="center"/></w:pPr><w:r><w:drawing><wp:inline distT="0" distB="0" distL="0"'
        f' distR="0"><wp:extent cx="{cx}" cy="{cy}"/><wp:docPr id="{number}" name="Picture {number}"/>'
        f'<a:graphic><a:graphicData uri="{_PIC}">{pic}</a:graphicData></a:graphic></wp:inline></w:drawing>'
        "</w:r></w:p>"
    )


def picture_docx(blocks: list[tuple[str, object]], width_in: float = 6.5) -> bytes:
    """("h1" | "h2" | "p", text) and ("png", bytes) blocks; each picture ``width_in`` wide."""
    from PIL import Image

    body, media = [], {}
    for kind, value in blocks:
        if isinstance(value, bytes):
            name = f"image{len(media) + 1}.{kind}"
            media[name] = value
            width, height = Image.open(io.BytesIO(value)).size
            body.append(
                _inline_picture(len(media), f"rId{len(media) + 1}", width_in, width_in * height / width)
            )
        else:
            body.append(_text_blocks([(kind, str(value))]))
    return _docx("".join(body), media)
