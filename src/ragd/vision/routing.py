"""How the vision engines join the type router (``RAGD_EXTRACT__ENGINE``), when an endpoint is set.

* ``auto`` (the default): every file keeps its text reader, except

  - a .docx, routed by its content (:func:`ragd.vision.detect.route_docx`): text boxes and drawing
    shapes outweighing the body's words (``textbox``, ``drawing``) to
    ``RAGD_EXTRACT__ROUTER_DIAGRAM_ENGINE``, a large body picture (``raster``) to vision-llm, the
    rest to ``RAGD_EXTRACT__ROUTER_DEFAULT``; each decision is logged at DEBUG with its signals;
  - a PDF or a slide deck read by its text reader: its pictures above ``RAGD_VISION__FIGURE_MIN_AREA``
    of their page (at most ``RAGD_VISION__MAX_IMAGES``, :mod:`ragd.vision.figures`) are described
    with profile ``figure`` and put after their page's text (:mod:`ragd.vision.splice`); a scan
    (its text came from OCR) is left alone;
  - with ``ROUTER_DEFAULT=vision-llm``, PDF, Office and image files that are not diagrams go to
    vision-llm.

  Every document gets ``meta["extraction_route"]`` (``{"signal": "textbox", "textboxes": 50, …}``;
  ``{"signal": "default"}`` for files the router did not send to a vision engine), which reaches
  every chunk's payload and the ``extraction`` key of ``PUT /api/v1/ingest``'s answer.
* ``vision-llm`` / ``hybrid-diagram``: every PDF, Office and image file through that engine; other
  files keep their reader.  No route is stamped (nothing was decided).

Failure: figures always fail open (the page's text is exact; the document carries a warning in
``meta["extraction_warnings"]``).  A whole file routed to a vision engine fails with the endpoint's
error (``VISION_UNAVAILABLE``, ``CONVERTER_UNAVAILABLE``) unless ``RAGD_VISION__FAIL_OPEN``: then
its text reader reads it, with a warning.  An answer over the token cap always fails its file.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from ragd.errors import ConverterUnavailable, RagError, VisionOutputTooLong, VisionUnavailable
from ragd.extract.base import Extractor
from ragd.extract.mime import FileKind
from ragd.settings import ExtractSettings
from ragd.types import Blob, Document
from ragd.vision import hybrid
from ragd.vision.budget import Deadline
from ragd.vision.detect import Route, docx_signals, route_docx
from ragd.vision.figures import Figure, pdf_figures, pptx_figures
from ragd.vision.hybrid import HybridDiagramExtractor
from ragd.vision.kit import VisionKit
from ragd.vision.pages import PAGED_KINDS
from ragd.vision.profiles import profile
from ragd.vision.splice import Section, insert_sections
from ragd.vision.vision_llm import VisionLlmExtractor

logger = logging.getLogger(__name__)

ROUTE_KEY = "extraction_route"
WARNINGS_KEY = "extraction_warnings"
TEXT_ENGINE = "kreuzberg"  # the router's name for "the file's text reader"
DEFAULT_ROUTE: Mapping[str, Any] = {"signal": "default"}
#: the signals of a vector diagram (a raster figure is read with RAGD_VISION__PROFILE: its page is
#: mostly prose)
DIAGRAM_SIGNALS = frozenset({"textbox", "drawing"})


class FigureFinder(Protocol):
    def __call__(
        self, data: bytes, *, min_area_share: float, max_images: int, max_pixels: int, name: str
    ) -> list[Figure]: ...


_FIGURES: Mapping[FileKind, FigureFinder] = {FileKind.PDF: pdf_figures, FileKind.PPTX: pptx_figures}


def vision_engines(kit: VisionKit) -> dict[str, Extractor]:
    """The vision engines by name (``POST /api/v1/extract`` picks them as ``engine``)."""
    return {"vision-llm": VisionLlmExtractor(kit), "hybrid-diagram": HybridDiagramExtractor(kit)}


def vision_routes(
    settings: ExtractSettings,
    kit: VisionKit,
    routes: Mapping[FileKind, Extractor],
    by_name: Mapping[str, Extractor],
) -> dict[FileKind, Extractor]:
    """``routes`` (the type router's readers) with the vision engines in place, per ``settings.engine``."""
    out = dict(routes)
    if settings.engine == "kreuzberg":
        return out
    if settings.engine in ("vision-llm", "hybrid-diagram"):
        for kind in PAGED_KINDS & out.keys():
            out[kind] = FailOpen(by_name[settings.engine], routes[kind], kit)
        return out
    for kind, reader in routes.items():
        if kind is FileKind.DOCX:
            out[kind] = AutoDocx(reader, kit, by_name)
        elif settings.router_default == "vision-llm" and kind in PAGED_KINDS:
            out[kind] = Stamped(FailOpen(by_name["vision-llm"], reader, kit))
        elif kind in _FIGURES:
            out[kind] = Stamped(WithFigures(reader, kit, _FIGURES[kind]))
        else:
            out[kind] = Stamped(reader)
    return out


def with_warnings(document: Document, warnings: Sequence[str]) -> Document:
    """``document`` with ``warnings`` added to ``meta["extraction_warnings"]``."""
    if not warnings:
        return document
    known = list(document.meta.get(WARNINGS_KEY) or [])
    return dataclasses.replace(document, meta={**document.meta, WARNINGS_KEY: [*known, *warnings]})


def stamped(document: Document, route: Mapping[str, Any]) -> Document:
    return dataclasses.replace(document, meta={**document.meta, ROUTE_KEY: dict(route)})


class Stamped:
    """A reader whose documents carry the ``default`` route (the router read them as text)."""

    def __init__(self, reader: Extractor) -> None:
        self._reader = reader
        self.name = reader.name

    def extract(self, blob: Blob) -> Document:
        return stamped(self._reader.extract(blob), DEFAULT_ROUTE)


class FailOpen:
    """A vision engine, and the text reader that reads the file instead when the endpoint fails
    and ``RAGD_VISION__FAIL_OPEN`` is set."""

    def __init__(self, engine: Extractor, fallback: Extractor, kit: VisionKit) -> None:
        self._engine = engine
        self._fallback = fallback
        self._kit = kit
        self.name = engine.name

    def extract(self, blob: Blob) -> Document:
        try:
            return self._engine.extract(blob)
        except (VisionUnavailable, ConverterUnavailable) as exc:
            if not self._kit.settings.fail_open:
                raise
            warning = f"read by {self._fallback.name} without the vision model ({exc.code}): {exc.message}"
            logger.warning("%r: %s", blob.name, warning)
            return with_warnings(self._fallback.extract(blob), [warning])


class AutoDocx:
    """The ``auto`` route of a .docx: a diagram to the diagram engine, the rest to the default."""

    def __init__(self, text: Extractor, kit: VisionKit, by_name: Mapping[str, Extractor]) -> None:
        self._text = text
        self._kit = kit
        self._by_name = by_name
        self.name = text.name

    def extract(self, blob: Blob) -> Document:
        settings = self._kit.extract
        route = self._route(blob)
        logger.debug("routing %r to %s (signal %s): %s", blob.name, route.engine, route.signal, route.signals)
        if route.engine == TEXT_ENGINE:
            document = self._text.extract(blob)
        else:
            engine = self._by_name[route.engine]
            if route.engine == hybrid.NAME:
                engine = _profiled(engine, hybrid.FIGURE if route.signal == "raster" else hybrid.TOPOLOGY)
            elif route.signal in DIAGRAM_SIGNALS:  # a vector diagram read by vision-llm
                engine = _profiled(engine, settings.router_diagram_profile)
            document = FailOpen(engine, self._text, self._kit).extract(blob)
        decision: dict[str, Any] = {"signal": route.signal, **route.signals}
        return stamped(document, decision)

    def _route(self, blob: Blob) -> Route:
        settings = self._kit.extract
        try:
            signals = docx_signals(blob.read(), name=blob.name)
        except Exception as exc:  # a package the detector cannot read: its text reader will say why
            logger.debug("no routing signals for %r: %r", blob.name, exc)
            return Route(settings.router_default, "default", {"unreadable": 1})
        return route_docx(
            signals,
            hybrid.thresholds(settings),
            diagram_engine=settings.router_diagram_engine,
            default_engine=settings.router_default,
        )


def _profiled(engine: Extractor, name: str) -> Extractor:
    with_profile: Callable[[str], Extractor] | None = getattr(engine, "with_profile", None)
    return engine if with_profile is None else with_profile(name)


class WithFigures:
    """A text reader, and the pictures of the file described next to their page's text."""

    def __init__(self, text: Extractor, kit: VisionKit, finder: FigureFinder) -> None:
        self._text = text
        self._kit = kit
        self._finder = finder
        self.name = text.name

    def extract(self, blob: Blob) -> Document:
        deadline = self._kit.deadline(blob.name)
        document = self._text.extract(blob)
        settings = self._kit.settings
        if document.meta.get("ocr") or settings.max_images == 0:
            return document  # a scan's pages are pictures whose words OCR has read
        try:
            figures = self._finder(
                blob.read(),
                min_area_share=settings.figure_min_area,
                max_images=settings.max_images,
                max_pixels=self._kit.max_pixels,
                name=blob.name,
            )
        except (RagError, ValueError, OSError, MemoryError) as exc:
            warning = f"its pictures were not read ({type(exc).__name__}): {exc}"[:300]
            logger.warning("%r: %s", blob.name, warning)
            return with_warnings(document, [warning])
        sections, warnings = self._describe(figures, deadline)
        return with_warnings(insert_sections(document, sections), warnings)

    def _describe(self, figures: Sequence[Figure], deadline: Deadline) -> tuple[list[Section], list[str]]:
        asked = profile(hybrid.FIGURE)
        sections: list[Section] = []
        warnings: list[str] = []
        for index, figure in enumerate(figures):
            where = f"page {figure.page + 1}"
            try:
                answer = self._kit.client.ask(figure.png, asked, deadline=deadline)
            except VisionOutputTooLong as exc:
                warnings.append(f"a picture on {where} was left out: {exc.message}")
                continue
            except VisionUnavailable as exc:
                warnings.append(f"{len(figures) - index} picture(s) not described: {exc.message}")
                logger.warning("%s", warnings[-1])
                break
            if answer:
                label = f"**Figure on {where}** (described by the vision model)"
                sections.append(Section(figure.page, f"{label}\n\n{answer}", "vision-llm", asked.name))
        return sections, warnings
