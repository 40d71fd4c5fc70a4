"""Where ``auto`` sends a .docx: the router's decision on what its body is made of.

    word/document.xml -read_docx (ragd.vision.docx_scan)-> DocxSignals -route_docx-> Route

:func:`docx_signals` counts a .docx's drawing shapes, text boxes, words and body pictures
(:mod:`ragd.vision.docx_scan`: streamed, bounded, corrupt packages are ``EXTRACTION_FAILED``).
:func:`route_docx` is pure: signals and :class:`RouterThresholds` in, a :class:`Route` out (the
engine, the signal that chose it and the numbers behind it, as the ingest answer and every chunk
show them).  docs/formats.md#how-auto-routes-a-file says what each signal means.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ragd.extract.packages import check_unpacked_size
from ragd.vision.docx_scan import (
    DEFAULT_MAX_SHAPES,
    DEFAULT_MAX_XML_BYTES,
    BodyImage,
    DocxSignals,
    read_docx,
)

__all__ = [
    "VISION_ENGINE",
    "BodyImage",
    "DocxSignals",
    "Route",
    "RouterThresholds",
    "docx_signals",
    "read_docx",
    "route_docx",
]

#: the engine a raster figure goes to (labels that exist only as pixels)
VISION_ENGINE = "vision-llm"


@dataclass(frozen=True, slots=True)
class RouterThresholds:
    """When a .docx is a diagram (the seed's detectors, as shares rather than absolute EMU)."""

    #: text boxes (signal ``textbox``), or drawing shapes of any kind (signal ``drawing``), a
    #: vector diagram has at least
    min_textboxes: int = 20
    #: ... and its drawing words per body word, ``drawing / (body + 1)``, at least
    min_drawing_ratio: float = 2.0
    #: the largest body picture covers at least this share of its page's usable area: a raster
    #: figure (the seed's 1.79 in² floor is ~3 % of a Letter or A4 page; a logo ~1-2 %)
    min_image_area: float = 0.05
    #: a raster figure has at most this many body words per large picture (None: no such guard):
    #: a long report with one big photo is prose, not a figure
    max_words_per_image: int | None = None


@dataclass(frozen=True, slots=True)
class Route:
    """The router's decision: the engine, the signal that chose it (``textbox``, ``drawing``,
    ``raster`` or ``default``) and the numbers behind it (what chunks and the ingest answer show
    beside ``signal``)."""

    engine: str
    signal: str
    signals: dict[str, int | float] = field(default_factory=dict)


def route_docx(
    signals: DocxSignals, thresholds: RouterThresholds, *, diagram_engine: str, default_engine: str
) -> Route:
    """The engine for a .docx with these signals.

    ``textbox``: at least ``min_textboxes`` text boxes and a drawing ratio of at least
    ``min_drawing_ratio`` (the seed's vector flowchart) -> ``diagram_engine``.  ``drawing``: the
    same ratio with at least ``min_textboxes`` drawing shapes of any kind (a dozen labelled steps
    joined by a dozen connectors) -> ``diagram_engine``.  ``raster``: the largest body picture
    covers at least ``min_image_area`` of its page (and, with ``max_words_per_image``, the body
    has no more words than that per such picture) -> ``vision-llm``.  Else ``default``.
    """
    t = thresholds
    ratio = round(signals.ratio, 2)
    capped: dict[str, int | float] = {"capped": 1} if signals.capped else {}
    enough_ratio = signals.drawing_words > 0 and signals.ratio >= t.min_drawing_ratio
    if enough_ratio and signals.textboxes >= max(t.min_textboxes, 1):
        counts = {"textboxes": signals.textboxes, "body_words": signals.body_words, "ratio": ratio}
        return Route(diagram_engine, "textbox", {**counts, **capped})
    if enough_ratio and signals.shapes >= max(t.min_textboxes, 1):
        counts = {
            "shapes": signals.shapes,
            "textboxes": signals.textboxes,
            "body_words": signals.body_words,
            "ratio": ratio,
        }
        return Route(diagram_engine, "drawing", {**counts, **capped})
    share = round(signals.largest_image_share, 3)
    large = sum(1 for image in signals.images if image.page_share >= t.min_image_area)
    if large and signals.largest_image_share >= t.min_image_area:
        counts = {"images": signals.image_count, "image_share": share, "body_words": signals.body_words}
        words_per_image = signals.body_words / large
        if t.max_words_per_image is None:
            return Route(VISION_ENGINE, "raster", {**counts, **capped})
        counts["words_per_image"] = round(words_per_image, 1)
        if words_per_image <= t.max_words_per_image:
            return Route(VISION_ENGINE, "raster", {**counts, **capped})
    measured = {
        "textboxes": signals.textboxes,
        "shapes": signals.shapes,
        "body_words": signals.body_words,
        "ratio": ratio,
        "images": signals.image_count,
        "image_share": share,
    }
    return Route(default_engine, "default", {**measured, **capped})


def docx_signals(
    data: bytes,
    *,
    name: str = "document.docx",
    max_shapes: int = DEFAULT_MAX_SHAPES,
    max_xml_bytes: int = DEFAULT_MAX_XML_BYTES,
    max_unpacked_bytes: int | None = None,
) -> DocxSignals:
    """Count a .docx's drawing shapes, words and body pictures (module docstring).

    ``max_unpacked_bytes``: refuse a package whose parts declare more (``FILE_TOO_LARGE``, as the
    router does before any reader); the read is bounded by the caps either way.
    """
    if max_unpacked_bytes is not None:
        check_unpacked_size(name, data, max_unpacked_bytes)
    return read_docx(data, name=name, max_shapes=max_shapes, max_xml_bytes=max_xml_bytes)[1]
