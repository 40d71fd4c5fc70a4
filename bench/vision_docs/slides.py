"""A PPTX of the vision corpus, written by hand: slides with a title and bullet text or one picture.

The smallest package PowerPoint and LibreOffice both open: presentation, one master, one blank
layout, one theme, the slides and their pictures.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from xml.sax.saxutils import escape

from .ooxml import _A, _OOXML, _P, _R, _XML, _rels, _types, zip_parts

SLIDE = (12_192_000, 6_858_000)  # 16:9, EMU
_NS = f'xmlns:a="{_A}" xmlns:r="{_R}" xmlns:p="{_P}"'
_GROUP = (
    '<p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr>'
    '<p:grpSpPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="0" cy="0"/><a:chOff x="0" y="0"/>'
    '<a:chExt cx="0" cy="0"/></a:xfrm></p:grpSpPr>'
)


@dataclass(frozen=True)
class Slide:
    title: str
    bullets: tuple[str, ...] = ()
    picture: bytes | None = None  # PNG


def _text_box(
    number: int, name: str, box: tuple[int, int, int, int], paragraphs: list[str], size: int
) -> str:
    x, y, cx, cy = box
    body = "".join(
        f'<a:p><a:r><a:rPr lang="en-GB" sz="{size}"/><a:t>{escape(text)}</a:t></a:r></a:p>'
        for text in paragraphs
    )
    return (
        f'<p:sp><p:nvSpPr><p:cNvPr id="{number}" name="{name}"/><p:cNvSpPr txBox="1"/><p:nvPr/></p:nvSpPr>'
        f'<p:spPr><a:xfrm><a:off x="{x}" y="{y}"/><a:ext cx="{cx}" cy="{cy}"/></a:xfrm>'
        '<a:prstGeom prst="rect"><a:avLst/></a:prstGeom></p:spPr>'
        f'<p:txBody><a:bodyPr wrap="square"/><a:lstStyle/>{body}</p:txBody></p:sp>'
    )


def _picture(number: int, box: tuple[int, int, int, int]) -> str:
    x, y, cx, cy = box
    return (
        f'<p:pic><p:nvPicPr><p:cNvPr id="{number}" name="Picture {number}"/><p:cNvPicPr>'
        '<a:picLocks noChangeAspect="1"/></p:cNvPicPr><p:nvPr/></p:nvPicPr>'
        '<p:blipFill><a:blip r:embed="rId2"/><a:stretch><a:fillRect/></a:stretch></p:blipFill>'
        f'<p:spPr><a:xfrm><a:off x="{x}" y="{y}"/><a:ext cx="{cx}" cy="{cy}"/></a:xfrm>'
        '<a:prstGeom prst="rect"><a:avLst/></a:prstGeom></p:spPr></p:pic>'
    )


def _fit(picture: bytes) -> tuple[int, int, int, int]:
    """The picture's box under the title: as large as the slide allows, centred, aspect kept."""
    from PIL import Image

    width, height = Image.open(io.BytesIO(picture)).size
    room_w, room_h = SLIDE[0] - 2 * 400_000, SLIDE[1] - 1_300_000 - 250_000
    scale = min(room_w / width, room_h / height)
    cx, cy = int(width * scale), int(height * scale)
    return (SLIDE[0] - cx) // 2, 1_300_000, cx, cy


def _slide(slide: Slide) -> str:
    shapes = _text_box(2, "Title", (500_000, 300_000, SLIDE[0] - 1_000_000, 900_000), [slide.title], 3600)
    if slide.picture is not None:
        shapes += _picture(3, _fit(slide.picture))
    if slide.bullets:
        box = (700_000, 1_400_000, SLIDE[0] - 1_400_000, SLIDE[1] - 1_800_000)
        shapes += _text_box(4, "Content", box, list(slide.bullets), 2400)
    return (
        f"{_XML}<p:sld {_NS}><p:cSld><p:spTree>{_GROUP}{shapes}</p:spTree></p:cSld>"
        "<p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:sld>"
    )


_MASTER = (
    f"{_XML}<p:sldMaster {_NS}><p:cSld><p:spTree>{_GROUP}</p:spTree></p:cSld>"
    '<p:clrMap bg1="lt1" tx1="dk1" bg2="lt2" tx2="dk2" accent1="accent1" accent2="accent2" accent3="accent3"'
    ' accent4="accent4" accent5="accent5" accent6="accent6" hlink="hlink" folHlink="folHlink"/>'
    '<p:sldLayoutIdLst><p:sldLayoutId id="2147483649" r:id="rId1"/></p:sldLayoutIdLst></p:sldMaster>'
)
_LAYOUT = (
    f'{_XML}<p:sldLayout {_NS} type="blank" preserve="1"><p:cSld name="Blank"><p:spTree>{_GROUP}'
    "</p:spTree></p:cSld><p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:sldLayout>"
)


def _theme() -> str:
    colours = "".join(
        f'<a:{name}><a:srgbClr val="{value}"/></a:{name}>'
        for name, value in (
            ("dk1", "000000"), ("lt1", "FFFFFF"), ("dk2", "1F2A44"), ("lt2", "E7E6E6"),
            ("accent1", "4472C4"), ("accent2", "ED7D31"), ("accent3", "A5A5A5"), ("accent4", "FFC000"),
            ("accent5", "5B9BD5"), ("accent6", "70AD47"), ("hlink", "0563C1"), ("folHlink", "954F72"),
        )
    )  # fmt: skip
    fonts = '<a:latin typeface="Liberation Sans"/><a:ea typeface=""/><a:cs typeface=""/>'
    fill = '<a:solidFill><a:schemeClr val="phClr"/></a:solidFill>'
    line = f'<a:ln w="9525">{fill}</a:ln>'
    return (
        f'{_XML}<a:theme xmlns:a="{_A}" name="Corpus"><a:themeElements>'
        f'<a:clrScheme name="Corpus">{colours}</a:clrScheme>'
        f'<a:fontScheme name="Corpus"><a:majorFont>{fonts}</a:majorFont><a:minorFont>{fonts}</a:minorFont>'
        "</a:fontScheme>"
        f'<a:fmtScheme name="Corpus"><a:fillStyleLst>{fill * 3}</a:fillStyleLst>'
        f"<a:lnStyleLst>{line * 3}</a:lnStyleLst>"
        f"<a:effectStyleLst>{'<a:effectStyle><a:effectLst/></a:effectStyle>' * 3}</a:effectStyleLst>"
        f"<a:bgFillStyleLst>{fill * 3}</a:bgFillStyleLst></a:fmtScheme>"
        "</a:themeElements></a:theme>"
    )


def picture_pptx(slides: list[Slide]) -> bytes:
    count = len(slides)
    ids = "".join(f'<p:sldId id="{256 + i}" r:id="rId{3 + i}"/>' for i in range(count))
    presentation = (
        f'{_XML}<p:presentation {_NS}><p:sldMasterIdLst><p:sldMasterId id="2147483648" r:id="rId1"/>'
        f'</p:sldMasterIdLst><p:sldIdLst>{ids}</p:sldIdLst><p:sldSz cx="{SLIDE[0]}" cy="{SLIDE[1]}"/>'
        '<p:notesSz cx="6858000" cy="9144000"/></p:presentation>'
    )
    kind = f"{_OOXML}.presentationml"
    parts: dict[str, str | bytes] = {
        "[Content_Types].xml": _types(
            {"png": "image/png"},
            {
                "/ppt/presentation.xml": f"{kind}.presentation.main+xml",
                "/ppt/slideMasters/slideMaster1.xml": f"{kind}.slideMaster+xml",
                "/ppt/slideLayouts/slideLayout1.xml": f"{kind}.slideLayout+xml",
                "/ppt/theme/theme1.xml": f"{_OOXML}.theme+xml",
            }
            | {f"/ppt/slides/slide{i}.xml": f"{kind}.slide+xml" for i in range(1, count + 1)},
        ),
        "_rels/.rels": _rels([("officeDocument", "ppt/presentation.xml")]),
        "ppt/presentation.xml": presentation,
        "ppt/_rels/presentation.xml.rels": _rels(
            [("slideMaster", "slideMasters/slideMaster1.xml"), ("theme", "theme/theme1.xml")]
            + [("slide", f"slides/slide{i}.xml") for i in range(1, count + 1)]
        ),
        "ppt/slideMasters/slideMaster1.xml": _MASTER,
        "ppt/slideMasters/_rels/slideMaster1.xml.rels": _rels(
            [("slideLayout", "../slideLayouts/slideLayout1.xml"), ("theme", "../theme/theme1.xml")]
        ),
        "ppt/slideLayouts/slideLayout1.xml": _LAYOUT,
        "ppt/slideLayouts/_rels/slideLayout1.xml.rels": _rels(
            [("slideMaster", "../slideMasters/slideMaster1.xml")]
        ),
        "ppt/theme/theme1.xml": _theme(),
    }
    for index, slide in enumerate(slides, start=1):
        parts[f"ppt/slides/slide{index}.xml"] = _slide(slide)
        targets = [("slideLayout", "../slideLayouts/slideLayout1.xml")]
        if slide.picture is not None:
            targets.append(("image", f"../media/slide{index}.png"))
            parts[f"ppt/media/slide{index}.png"] = slide.picture
        parts[f"ppt/slides/_rels/slide{index}.xml.rels"] = _rels(targets)
    return zip_parts(parts)
