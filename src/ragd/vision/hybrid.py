"""The ``hybrid-diagram`` engine: a Word diagram's own words, and the graph the model sees.

A flowchart drawn in Word keeps its labels in text boxes and shapes: text readers drop or scatter
them, and a vision model reading them from pixels garbles words and skips branches.  This engine
takes each from the one that is right about it:

* the text: the package's own paragraphs, text boxes and shapes included, verbatim
  (:mod:`ragd.vision.docx_text`);
* the structure: for a vector diagram (the ``textbox`` signal), the rendered page(s) with profile
  ``diagram-topology``, the labels given beside the image so the model copies them: the
  ``mermaid`` blocks of its answers become a ``## Diagram (Mermaid)`` section; for a raster
  figure (the ``raster`` signal, labels are pixels), each large picture of the package with
  profile ``figure``, its description a section of its own.

Which pass runs comes from the router's signal (:func:`ragd.vision.detect.route_docx`) or, when
asked for, from the profile (:meth:`HybridDiagramExtractor.with_profile`).  A file that is not a
.docx is read by ``vision-llm`` (profile
``diagram`` unless another is asked for); so is a vector diagram with fewer than three lines of
text (no labels to copy).  Chunks record ``meta.extractor = "hybrid-diagram"``
and the pass's profile.
"""

from __future__ import annotations

import logging
import re

from ragd.extract.documents import make_document
from ragd.extract.mime import FileKind, file_type_for_mime, file_type_for_name
from ragd.extract.office_pdf import to_pdf
from ragd.settings import ExtractSettings
from ragd.types import Blob, Document
from ragd.vision.budget import Deadline
from ragd.vision.detect import RouterThresholds, docx_signals, route_docx
from ragd.vision.docx_text import docx_lines
from ragd.vision.figures import docx_figures
from ragd.vision.kit import VisionKit
from ragd.vision.pages import pdf_pages
from ragd.vision.profiles import grounding_text, profile
from ragd.vision.vision_llm import VisionLlmExtractor

logger = logging.getLogger(__name__)

NAME = "hybrid-diagram"
TOPOLOGY = "diagram-topology"
FIGURE = "figure"
_MIN_LINES = 3
_MERMAID = re.compile(r"```mermaid\b.*?```", re.DOTALL)
_DIAGRAM_HEADING = "## Diagram (Mermaid)"


def thresholds(settings: ExtractSettings) -> RouterThresholds:
    """The router's thresholds from ``RAGD_EXTRACT__ROUTER_*``."""
    return RouterThresholds(
        min_textboxes=settings.router_min_textboxes,
        min_drawing_ratio=settings.router_min_drawing_ratio,
        min_image_area=settings.router_min_image_area,
        max_words_per_image=settings.router_max_words_per_image or None,
    )


class HybridDiagramExtractor:
    """Implements :class:`ragd.extract.base.Extractor` (.docx; other files through vision-llm)."""

    name = NAME

    def __init__(self, kit: VisionKit, profile_name: str | None = None) -> None:
        self._kit = kit
        self._pass = profile_name if profile_name in (TOPOLOGY, FIGURE) else None
        fallback = profile_name if profile_name and self._pass is None else "diagram"
        self._vision = VisionLlmExtractor(kit, fallback)

    def with_profile(self, name: str) -> HybridDiagramExtractor:
        """``diagram-topology`` or ``figure``: the .docx pass; another profile: that of the
        files read by vision-llm instead."""
        profile(name)  # an unknown name is a ValueError here, not later
        return HybridDiagramExtractor(self._kit, name)

    def extract(self, blob: Blob) -> Document:
        file_type = file_type_for_mime(blob.mime_type) or file_type_for_name(blob.name)
        if file_type is None or file_type.kind is not FileKind.DOCX:
            return self._vision.extract(blob)
        data = blob.read()
        lines = docx_lines(data, blob.name)
        which = self._pass or self._pass_for(data, blob.name)
        if which == TOPOLOGY and len(lines) < _MIN_LINES:  # no labels to copy: the picture is all
            logger.debug("%r has %d lines of text: read by vision-llm", blob.name, len(lines))
            return self._vision.extract(blob)
        deadline = self._kit.deadline(blob.name)
        native = "\n".join(lines)
        if which == FIGURE:
            section, warnings = self._figures(data, blob.name, deadline)
        else:
            section, warnings = self._topology(data, blob.name, native, deadline)
        text = "\n\n".join(part for part in (native, section) if part)
        return make_document(
            text,
            extractor=NAME,
            source=blob.name,
            mime_type=file_type.mime,
            meta={"vision_profile": which, "extraction_warnings": warnings},
        )

    def _pass_for(self, data: bytes, source: str) -> str:
        route = route_docx(
            docx_signals(data, name=source),
            thresholds(self._kit.extract),
            diagram_engine=NAME,
            default_engine=NAME,
        )
        return FIGURE if route.signal == "raster" else TOPOLOGY

    def _topology(self, data: bytes, source: str, native: str, deadline: Deadline) -> tuple[str, list[str]]:
        deadline.check()
        pages = pdf_pages(
            self._kit, to_pdf(data, source, self._kit.extract, timeout_s=deadline.left()), source
        )
        asked = profile(TOPOLOGY)
        context = grounding_text(native)
        blocks = []
        for image in pages.images:
            answer = self._kit.client.ask(image, asked, deadline=deadline, context=context)
            blocks += _MERMAID.findall(answer)
        warnings = []
        if pages.total > self._kit.settings.max_pages:
            warnings.append(
                f"the graph was drawn from the first {self._kit.settings.max_pages} of {pages.total} pages"
            )
        if not blocks:
            warnings.append(
                "the vision model drew no Mermaid graph of the diagram: its text alone is indexed"
            )
            logger.warning("%r: %s", source, warnings[-1])
            return "", warnings
        return f"{_DIAGRAM_HEADING}\n\n" + "\n\n".join(blocks), warnings

    def _figures(self, data: bytes, source: str, deadline: Deadline) -> tuple[str, list[str]]:
        settings = self._kit.settings
        figures = docx_figures(
            data,
            min_area_share=settings.figure_min_area,
            max_images=max(settings.max_images, 1),
            max_pixels=self._kit.max_pixels,
            name=source,
        )
        asked = profile(FIGURE)
        sections = []
        for number, figure in enumerate(figures, start=1):
            answer = self._kit.client.ask(figure.png, asked, deadline=deadline)
            if answer:
                sections.append(f"**Figure {number}**\n\n{answer}")
        if not sections:
            return "", ["the vision model found nothing to describe in the document's pictures"]
        return "\n\n".join(sections), []
