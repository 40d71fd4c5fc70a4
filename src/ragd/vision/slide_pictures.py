"""Where the pictures of a PPTX sit: each slide's ``p:pic`` with its media part and its box.

A picture's position is its ``a:xfrm`` (offset and extent, EMU) on the slide, through the
transforms of the groups holding it (``p:grpSp``: its ``a:off``/``a:ext`` against its
``a:chOff``/``a:chExt``); a picture placeholder without a position of its own takes its
layout's (then its master's) placeholder of the same ``idx`` or ``type``.  The slide size is
``p:sldSz`` of ``ppt/presentation.xml`` (10 × 7.5 in when absent).  Slides are read in
presentation order, each part at most :data:`ragd.vision.ooxml_parts.MAX_SMALL_PART` bytes.
DrawingML fallbacks (``mc:Fallback``) are skipped.
"""

from __future__ import annotations

import logging
import zipfile
from dataclasses import dataclass, field

from ragd.vision.ooxml_parts import PackageUnreadable, parse_small, r_attr, relationship_types, relationships

logger = logging.getLogger(__name__)

_P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
_DEFAULT_SLIDE = (9_144_000, 6_858_000)
_XFRM_PARTS = {
    f"{_A}off": ("x", "y"),
    f"{_A}ext": ("cx", "cy"),
    f"{_A}chOff": ("x", "y"),
    f"{_A}chExt": ("cx", "cy"),
}
_Map = tuple[float, float, float, float]  # x -> sx * x + tx, y -> sy * y + ty
_IDENTITY: _Map = (1.0, 0.0, 1.0, 0.0)


@dataclass(frozen=True, slots=True)
class SlidePicture:
    """A picture on slide ``slide`` (0-based): its media part, its box in fractions of the slide
    from the top-left (clipped to the slide) and the share of the slide it covers."""

    slide: int
    target: str
    box: tuple[float, float, float, float]
    share: float


def slide_pictures(package: zipfile.ZipFile) -> list[SlidePicture]:
    """Every placed picture of every slide, in presentation and drawing order.  A slide that
    cannot be read (malformed, or over the part size cap) is skipped; an unreadable
    ``presentation.xml`` is :class:`PackageUnreadable`."""
    size, slides = _presentation(package)
    found: list[SlidePicture] = []
    for index, part in enumerate(slides):
        if part not in package.NameToInfo:
            continue
        try:
            found.extend(_pictures_of(package, index, part, size))
        except PackageUnreadable as exc:
            logger.debug("pictures of slide %d skipped: %s", index + 1, exc)
    return found


def _pictures_of(
    package: zipfile.ZipFile, index: int, part: str, size: tuple[int, int]
) -> list[SlidePicture]:
    media = relationships(package, part)
    found = []
    for rel_id, own, placeholder in _Slide.read(package, part):
        target = media.get(rel_id)
        rect = own or _inherited(package, part, placeholder)
        if target is None or rect is None:
            continue
        box, share = _fraction(rect, size)
        if share > 0:
            found.append(SlidePicture(index, target, box, share))
    return found


def _presentation(package: zipfile.ZipFile) -> tuple[tuple[int, int], list[str]]:
    """The slide size (EMU) and the slide parts in presentation order."""
    part = relationship_types(package, "").get("officeDocument", "ppt/presentation.xml")
    targets = relationships(package, part)
    size = list(_DEFAULT_SLIDE)
    order: list[str] = []

    def start(tag: str, attrs: dict[str, str]) -> None:
        if tag == f"{_P}sldSz":
            size[:] = [_int(attrs.get("cx")) or _DEFAULT_SLIDE[0], _int(attrs.get("cy")) or _DEFAULT_SLIDE[1]]
        elif tag == f"{_P}sldId" and r_attr(attrs, "id") in targets:
            order.append(targets[r_attr(attrs, "id")])

    parse_small(package, part, start)
    return (size[0], size[1]), order


def _int(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0


def _fraction(
    rect: tuple[float, float, float, float], size: tuple[int, int]
) -> tuple[tuple[float, float, float, float], float]:
    x, y, cx, cy = rect
    width, height = size
    x0, x1 = (min(max(v / width, 0.0), 1.0) for v in (x, x + cx))
    y0, y1 = (min(max(v / height, 0.0), 1.0) for v in (y, y + cy))
    return (x0, y0, x1, y1), (x1 - x0) * (y1 - y0)


def _inherited(
    package: zipfile.ZipFile, part: str, placeholder: tuple[str, str] | None
) -> tuple[float, float, float, float] | None:
    """A placeholder picture's position from its layout, else its master."""
    if placeholder is None:
        return None
    for kind in ("slideLayout", "slideMaster"):
        part = relationship_types(package, part).get(kind, "")
        if part not in package.NameToInfo:
            return None
        boxes = _Slide.placeholders(package, part)
        idx, ph_type = placeholder
        rect = boxes.get(("idx", idx)) if idx else None
        rect = rect or boxes.get(("type", ph_type or "body"))
        if rect is not None:
            return rect
    return None


@dataclass
class _Shape:
    """An open ``p:pic`` (or, in a layout, any placeholder shape) while its slide is read."""

    rel_id: str = ""
    xfrm: dict[str, int] = field(default_factory=dict)
    placeholder: tuple[str, str] | None = None


class _Slide:
    """One streamed read of a slide (or layout) part."""

    def __init__(self) -> None:
        self.maps: list[_Map] = [_IDENTITY]  # the transform into slide space, per open group
        self.group_xfrm: list[dict[str, int]] = []
        self.shape: _Shape | None = None
        self.target: dict[str, int] | None = None  # the a:xfrm being read (a shape's or a group's)
        self.skip = 0
        self.pictures: list[tuple[str, tuple[float, float, float, float] | None, tuple[str, str] | None]] = []
        self.placeholder_boxes: dict[tuple[str, str], tuple[float, float, float, float]] = {}
        self.all_shapes = False

    @classmethod
    def read(
        cls, package: zipfile.ZipFile, part: str
    ) -> list[tuple[str, tuple[float, float, float, float] | None, tuple[str, str] | None]]:
        slide = cls()
        parse_small(package, part, slide.start, slide.end)
        return slide.pictures

    @classmethod
    def placeholders(
        cls, package: zipfile.ZipFile, part: str
    ) -> dict[tuple[str, str], tuple[float, float, float, float]]:
        slide = cls()
        slide.all_shapes = True
        parse_small(package, part, slide.start, slide.end)
        return slide.placeholder_boxes

    def start(self, tag: str, attrs: dict[str, str]) -> None:
        if self.skip or tag == _MC_FALLBACK:
            self.skip += 1
            return
        if tag == f"{_P}grpSp":
            self.group_xfrm.append({})
        elif tag == f"{_P}grpSpPr" and self.group_xfrm:
            self.target = self.group_xfrm[-1]
        elif tag == f"{_P}pic" or (self.all_shapes and tag == f"{_P}sp"):
            self.shape = _Shape()
        elif tag == f"{_P}spPr" and self.shape is not None:
            self.target = self.shape.xfrm
        elif tag in _XFRM_PARTS and self.target is not None:
            name = tag.rpartition("}")[2]
            first, second = _XFRM_PARTS[tag]
            self.target[f"{name}.{first}"] = _int(attrs.get(first))
            self.target[f"{name}.{second}"] = _int(attrs.get(second))
        elif tag == f"{_A}blip" and self.shape is not None and not self.shape.rel_id:
            self.shape.rel_id = r_attr(attrs, "embed")
        elif tag == f"{_P}ph" and self.shape is not None:
            self.shape.placeholder = (attrs.get("idx", ""), attrs.get("type", ""))

    def end(self, tag: str) -> None:
        if self.skip:
            self.skip -= 1
            return
        if tag in (f"{_P}grpSpPr", f"{_P}spPr"):
            if tag == f"{_P}grpSpPr" and self.group_xfrm:
                self.maps.append(_compose(self.maps[-1], self.group_xfrm[-1]))
            self.target = None
        elif tag == f"{_P}grpSp" and self.group_xfrm:
            self.group_xfrm.pop()
            if len(self.maps) > 1:
                self.maps.pop()
        elif self.shape is not None and (tag == f"{_P}pic" or (self.all_shapes and tag == f"{_P}sp")):
            self._close(self.shape)
            self.shape = None

    def _close(self, shape: _Shape) -> None:
        rect = None
        if "ext.cx" in shape.xfrm:
            sx, tx, sy, ty = self.maps[-1]
            x, y = shape.xfrm.get("off.x", 0), shape.xfrm.get("off.y", 0)
            rect = (sx * x + tx, sy * y + ty, sx * shape.xfrm["ext.cx"], sy * shape.xfrm["ext.cy"])
        if self.all_shapes:
            if rect is not None and shape.placeholder is not None:
                idx, ph_type = shape.placeholder
                if idx:
                    self.placeholder_boxes.setdefault(("idx", idx), rect)
                self.placeholder_boxes.setdefault(("type", ph_type or "body"), rect)
            return
        if shape.rel_id:
            self.pictures.append((shape.rel_id, rect, shape.placeholder))


def _compose(outer: _Map, xfrm: dict[str, int]) -> _Map:
    """The map of a group's children into slide space: the group's own (child space -> its
    parent's space) followed by ``outer``."""
    ch_cx, ch_cy = xfrm.get("chExt.cx", 0), xfrm.get("chExt.cy", 0)
    sx = xfrm.get("ext.cx", 0) / ch_cx if ch_cx else 1.0
    sy = xfrm.get("ext.cy", 0) / ch_cy if ch_cy else 1.0
    tx = xfrm.get("off.x", 0) - xfrm.get("chOff.x", 0) * sx
    ty = xfrm.get("off.y", 0) - xfrm.get("chOff.y", 0) * sy
    osx, otx, osy, oty = outer
    return (osx * sx, osx * tx + otx, osy * sy, osy * ty + oty)
