"""A .docx's main document part, read once as a stream: its drawing shapes, words and pictures.

What :func:`read_docx` counts (the ``auto`` router's inputs, :mod:`ragd.vision.detect`):

* **drawing shapes**: DrawingML shapes (``wps:wsp``), legacy VML shapes (``v:shape``,
  ``v:rect``, ``v:line`` …), connectors among them (``wps:cNvCnPr``, ``v:line``,
  ``o:connectortype``), groups and canvases (``wpg``, ``v:group``, ``wpc``); those holding a
  text box (``wps:txbx``, ``v:textbox``) are **text boxes**, and their words **drawing words**;
* **body words**: the words of paragraphs outside any shape (a word split over runs counts once);
* **body pictures**: ``wp:inline`` / ``wp:anchor`` drawings holding an ``a:blip`` (and VML
  ``v:imagedata``), with their display extent in EMU and its share of the usable area of their
  section's page (``w:pgSz`` less ``w:pgMar``).

Word writes every shape twice, a DrawingML choice and a VML fallback
(``mc:AlternateContent``): fallbacks are skipped, so nothing is counted twice.  Headers and
footers are other parts and are never read, so a logo in a letterhead counts for nothing.

The read is bounded whatever the package declares: expat events, never a tree; counting stops
after ``max_shapes`` drawing elements or ``max_xml_bytes`` of XML, and the signals say so
(``capped``); a document type declaration is refused.  A package that is not a readable zip, has
no main document or holds malformed XML is :class:`ragd.errors.ExtractionError`
(``EXTRACTION_FAILED``, as the text extractor reports a corrupt file).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ragd.vision.ooxml_parts import (
    PackageUnreadable,
    StopReading,
    main_part,
    make_parser,
    open_package,
    r_attr,
    stream_part,
    unreadable,
)

DEFAULT_MAX_SHAPES = 10_000
DEFAULT_MAX_XML_BYTES = 128 * 1024 * 1024
#: body images listed in :attr:`DocxSignals.images` (all are counted)
MAX_LISTED_IMAGES = 1_000
_EMU_PER_TWIP = 635
# Word's page when a document has no w:sectPr: US Letter, 1-inch margins (twips)
_DEFAULT_PAGE = (12_240 - 2 * 1_440, 15_840 - 2 * 1_440)
_WORD = re.compile(r"\S+")
_NAMESPACES = {
    "http://schemas.openxmlformats.org/wordprocessingml/2006/main": "w",
    "http://purl.oclc.org/ooxml/wordprocessingml/main": "w",
    "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing": "wp",
    "http://purl.oclc.org/ooxml/drawingml/wordprocessingDrawing": "wp",
    "http://schemas.openxmlformats.org/drawingml/2006/main": "a",
    "http://purl.oclc.org/ooxml/drawingml/main": "a",
    "http://schemas.microsoft.com/office/word/2010/wordprocessingShape": "wps",
    "http://schemas.microsoft.com/office/word/2010/wordprocessingGroup": "wpg",
    "http://schemas.microsoft.com/office/word/2010/wordprocessingCanvas": "wpc",
    "urn:schemas-microsoft-com:vml": "v",
    "urn:schemas-microsoft-com:office:office": "o",
    "http://schemas.openxmlformats.org/markup-compatibility/2006": "mc",
}
_VML_SHAPES = frozenset(
    {"v:shape", "v:rect", "v:roundrect", "v:oval", "v:line", "v:polyline", "v:arc", "v:curve", "v:image"}
)
_GROUPS = frozenset({"wpg:wgp", "wpg:grpSp", "v:group", "wpc:wpc"})
_BREAKS = frozenset({"w:tab", "w:br", "w:cr"})
_O_CONNECTOR = "{urn:schemas-microsoft-com:office:office}connectortype"
_O_HR = "{urn:schemas-microsoft-com:office:office}hr"
_O_RELID = "{urn:schemas-microsoft-com:office:office}relid"
_CSS_LENGTH = re.compile(r"(width|height)\s*:\s*([0-9.]+)\s*(pt|in|cm|mm|px|pc|emu)?", re.IGNORECASE)
_EMU_PER_UNIT = {
    "pt": 12_700,
    "in": 914_400,
    "cm": 360_000,
    "mm": 36_000,
    "px": 9_525,
    "pc": 152_400,
    "emu": 1,
}


@dataclass(frozen=True, slots=True)
class BodyImage:
    """A picture in the document's body: its relationship id (``""`` for a linked or unnamed
    one), its display size in EMU (914,400 to the inch) and its share of its page's usable area
    (at most 1)."""

    rel_id: str
    cx: int
    cy: int
    page_share: float


@dataclass(frozen=True, slots=True)
class DocxSignals:
    """What :func:`docx_signals` counted in a .docx's main document part."""

    #: drawing shapes holding a text box (DrawingML ``wps:txbx`` or VML ``v:textbox``)
    textboxes: int = 0
    #: every drawing shape: text boxes, plain shapes, lines and connectors (not groups)
    shapes: int = 0
    connectors: int = 0
    groups: int = 0
    #: words inside text boxes
    drawing_words: int = 0
    #: words of the body's paragraphs (outside shapes)
    body_words: int = 0
    #: body pictures counted; the first :data:`MAX_LISTED_IMAGES` are in ``images``
    image_count: int = 0
    images: tuple[BodyImage, ...] = ()
    #: usable page of the last section (page less margins), EMU
    page_width_emu: int = _DEFAULT_PAGE[0] * _EMU_PER_TWIP
    page_height_emu: int = _DEFAULT_PAGE[1] * _EMU_PER_TWIP
    #: counting stopped at a cap (``max_shapes`` or ``max_xml_bytes``): counts are lower bounds
    capped: bool = False

    @property
    def ratio(self) -> float:
        """Drawing words per body word, ``drawing_words / (body_words + 1)`` (the seed's ratio)."""
        return self.drawing_words / (self.body_words + 1)

    @property
    def largest_image_share(self) -> float:
        """The largest body picture's share of its page's usable area (0 without pictures)."""
        return max((image.page_share for image in self.images), default=0.0)


def read_docx(
    data: bytes,
    *,
    name: str = "document.docx",
    max_shapes: int = DEFAULT_MAX_SHAPES,
    max_xml_bytes: int = DEFAULT_MAX_XML_BYTES,
) -> tuple[str, DocxSignals]:
    """The main document part's path in the package, and its signals."""
    scan = _Scan(max_shapes)
    try:
        with open_package(data) as package:
            part = main_part(package, "word/document.xml")
            if part not in package.NameToInfo:
                raise PackageUnreadable("it has no main document part (word/document.xml)")
            parser = make_parser(scan.start, scan.end, scan.text)
            complete = stream_part(package, part, parser, max_bytes=max_xml_bytes)
    except PackageUnreadable as exc:
        raise unreadable(name, "DOCX", exc) from exc
    return part, scan.signals(capped=scan.capped or not complete)


def _short(tag: str) -> str:
    """``{uri}local`` as ``prefix:local`` for the namespaces the scan knows, else ``""``."""
    if tag[:1] != "{":
        return ""
    uri, _, local = tag[1:].partition("}")
    prefix = _NAMESPACES.get(uri)
    return f"{prefix}:{local}" if prefix else ""


def _count_words(text: str, inside_word: bool) -> tuple[int, bool]:
    """Words starting in ``text`` (a word continuing from the previous run is not new), and
    whether ``text`` ends inside a word."""
    count = len(_WORD.findall(text))
    if count and inside_word and not text[0].isspace():
        count -= 1
    return count, (not text[-1].isspace()) if text else inside_word


def _emu(value: str | None) -> int:
    try:
        return max(0, min(int(value or 0), 10**12))
    except ValueError:
        return 0


def _twips(value: str | None) -> int:
    try:
        return abs(int(float(value or 0)))
    except ValueError:
        return 0


def _vml_extent(style: str) -> tuple[int, int]:
    """``width``/``height`` of a VML ``style`` attribute, in EMU."""
    size = {"width": 0, "height": 0}
    for key, number, unit in _CSS_LENGTH.findall(style):
        size[key.lower()] = min(int(float(number) * _EMU_PER_UNIT[(unit or "px").lower()]), 10**12)
    return size["width"], size["height"]


class _Scan:
    """The event handlers of one streamed read of ``word/document.xml``."""

    def __init__(self, max_shapes: int) -> None:
        self.max_shapes = max_shapes
        self.capped = False
        self.counts = dict.fromkeys(("textboxes", "shapes", "connectors", "groups", "drawing", "body"), 0)
        self.image_count = 0
        self.images: list[BodyImage] = []
        self.pending: list[tuple[str, int, int]] = []
        self.page = _DEFAULT_PAGE
        self.skip = 0  # depth inside an mc:Fallback
        self.in_text = False
        self.textbox_depth = 0
        self.inside_word = {"body": False, "drawing": False}
        self.p_depth = 0
        self.sect_depth = 0
        self.section: dict[str, int] = {}
        self.paragraph_section: tuple[int, int] | None = None
        self.containers: list[dict[str, Any]] = []  # open wp:inline / wp:anchor
        self.vml: list[dict[str, Any]] = []  # open VML shapes

    # --- events ---------------------------------------------------------------------------
    def start(self, tag: str, attrs: dict[str, str]) -> None:
        if self.skip:
            self.skip += 1
            return
        name = _short(tag)
        if name == "mc:Fallback":
            self.skip = 1
        elif name == "w:t":
            self.in_text = True
        elif name in _BREAKS:
            self.inside_word[self._flow()] = False
        elif name == "w:p":
            self.p_depth += 1
        elif name in ("wps:txbx", "v:textbox"):
            self.counts["textboxes"] += 1
            self.textbox_depth += 1
            self.inside_word["drawing"] = False
        elif name == "wps:wsp":
            self._add("shapes")
        elif name == "wps:cNvCnPr":
            self.counts["connectors"] += 1
        elif name in _GROUPS:
            self._add("groups")
        else:
            self._start_other(name, attrs)

    def _start_other(self, name: str, attrs: dict[str, str]) -> None:
        if name in ("wp:inline", "wp:anchor"):
            self.containers.append({"cx": 0, "cy": 0, "rid": None})
        elif name == "wp:extent" and self.containers:
            self.containers[-1].update(cx=_emu(attrs.get("cx")), cy=_emu(attrs.get("cy")))
        elif name == "a:blip" and self.containers and self.containers[-1]["rid"] is None:
            self.containers[-1]["rid"] = r_attr(attrs, "embed")
        elif name in _VML_SHAPES:
            connector = name == "v:line" or attrs.get(_O_CONNECTOR, "none") != "none"
            self.vml.append({"style": attrs.get("style", ""), "rid": None, "connector": connector})
            self.vml[-1]["hr"] = attrs.get(_O_HR) in ("t", "true")
            if name == "v:image":
                self.vml[-1]["rid"] = r_attr(attrs, "id")
        elif name == "v:imagedata" and self.vml:
            self.vml[-1]["rid"] = r_attr(attrs, "id") or attrs.get(_O_RELID, "")
        elif name == "w:sectPr":
            self.sect_depth += 1
            if self.sect_depth == 1:
                self.section = {}
        elif name in ("w:pgSz", "w:pgMar") and self.sect_depth == 1:
            self.section.update({key.rpartition("}")[2]: _twips(value) for key, value in attrs.items()})

    def end(self, tag: str) -> None:
        if self.skip:
            self.skip -= 1
            return
        name = _short(tag)
        if name == "w:t":
            self.in_text = False
        elif name == "w:p":
            self.p_depth -= 1
            self.inside_word[self._flow()] = False
            if self.p_depth == 0 and self.paragraph_section is not None:
                self._close_section(self.paragraph_section)
                self.paragraph_section = None
        elif name in ("wps:txbx", "v:textbox"):
            self.textbox_depth -= 1
        elif name in ("wp:inline", "wp:anchor") and self.containers:
            found = self.containers.pop()
            if found["rid"] is not None:
                self._image(found["rid"], found["cx"], found["cy"])
        elif name in _VML_SHAPES and self.vml:
            self._end_vml(self.vml.pop())
        elif name == "w:sectPr":
            self.sect_depth -= 1
            if self.sect_depth == 0:
                self._end_section()

    def text(self, data: str) -> None:
        if self.in_text and not self.skip:
            flow = self._flow()
            count, self.inside_word[flow] = _count_words(data, self.inside_word[flow])
            self.counts[flow] += count

    # --- helpers --------------------------------------------------------------------------
    def _flow(self) -> str:
        return "drawing" if self.textbox_depth else "body"

    def _add(self, counter: str) -> None:
        self.counts[counter] += 1
        if self.counts["shapes"] + self.counts["groups"] + self.image_count >= self.max_shapes:
            self.capped = True
            raise StopReading

    def _end_vml(self, shape: dict[str, Any]) -> None:
        if shape["rid"] is not None:
            self._image(shape["rid"], *_vml_extent(shape["style"]))
        elif not shape["hr"]:
            self.counts["connectors"] += shape["connector"]
            self._add("shapes")

    def _image(self, rel_id: str, cx: int, cy: int) -> None:
        self.image_count += 1
        self.pending.append((rel_id, cx, cy))
        if self.counts["shapes"] + self.counts["groups"] + self.image_count >= self.max_shapes:
            self.capped = True
            raise StopReading

    def _end_section(self) -> None:
        s = self.section
        width = s.get("w", 0) or _DEFAULT_PAGE[0] + 2 * 1_440
        height = s.get("h", 0) or _DEFAULT_PAGE[1] + 2 * 1_440
        usable = (
            max(width - s.get("left", 0) - s.get("right", 0) - s.get("gutter", 0), 1),
            max(height - s.get("top", 0) - s.get("bottom", 0), 1),
        )
        if self.p_depth:  # a paragraph's own w:sectPr ends its section after the paragraph
            self.paragraph_section = usable
        else:
            self._close_section(usable)

    def _close_section(self, usable: tuple[int, int]) -> None:
        self.page = usable
        area = usable[0] * usable[1] * _EMU_PER_TWIP * _EMU_PER_TWIP
        room = MAX_LISTED_IMAGES - len(self.images)
        for rel_id, cx, cy in self.pending[: max(room, 0)]:
            self.images.append(BodyImage(rel_id, cx, cy, min(cx * cy / area, 1.0)))
        self.pending = []

    def signals(self, *, capped: bool) -> DocxSignals:
        if self.pending:
            self._close_section(self.paragraph_section or self.page)
        c = self.counts
        return DocxSignals(
            textboxes=c["textboxes"],
            shapes=c["shapes"],
            connectors=c["connectors"],
            groups=c["groups"],
            drawing_words=c["drawing"],
            body_words=c["body"],
            image_count=self.image_count,
            images=tuple(self.images),
            page_width_emu=self.page[0] * _EMU_PER_TWIP,
            page_height_emu=self.page[1] * _EMU_PER_TWIP,
            capped=capped,
        )
