"""The extractor the pipeline calls: checks size, detects the file type, hands it to its reader.

    blob -size check-> bytes -detect (mime.py)-> FileKind
         -> Text | Csv | Odp | Email | XmlText | KreuzbergExtractor -markup check-> Document

Files over ``ExtractSettings.max_file_bytes`` are refused (:class:`PayloadTooLarge`)
from their size alone, before they are read; so are zip-based files whose parts
unpack to more than ``max_unpacked_bytes`` (a zip bomb), before they are unpacked,
and files whose text is longer than ``max_chars``; 0-byte files are
:class:`EmptyDocument`; types without a reader are :class:`UnsupportedType` with
the list of supported kinds.  Text that is mostly markup (a format no reader
understood) is :class:`ExtractionUnusable` (:mod:`ragd.extract.markup_check`),
except for kinds whose text is meant to be source (code, data, Markdown, CSV).
:func:`build_extractor` wires the default readers, and the vision engines when a
:class:`ragd.vision.kit.VisionKit` is given (an endpoint is configured: :mod:`ragd.vision.routing`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping

from ragd.errors import EmptyDocument, NotFound, PayloadTooLarge, UnsupportedType
from ragd.extract.base import Extractor
from ragd.extract.email_message import EmailExtractor
from ragd.extract.kreuzberg_extractor import KreuzbergExtractor
from ragd.extract.markup_check import check_readable
from ragd.extract.mime import ZIP_KINDS, FileKind, detect, markup_expected
from ragd.extract.ocr import OcrCheck
from ragd.extract.odp import OdpExtractor
from ragd.extract.packages import check_unpacked_size
from ragd.extract.tabular import CsvExtractor
from ragd.extract.text_extractor import TextExtractor
from ragd.extract.xml_text import XmlTextExtractor
from ragd.settings import ExtractSettings
from ragd.types import Blob, Document
from ragd.vision.kit import VisionKit

logger = logging.getLogger(__name__)


class RoutingExtractor:
    """An :class:`Extractor` that dispatches on the detected :class:`FileKind`."""

    name = "router"

    def __init__(
        self,
        routes: Mapping[FileKind, Extractor],
        settings: ExtractSettings,
        *,
        engines: Mapping[str, Extractor] | None = None,
        vision: VisionKit | None = None,
    ) -> None:
        self._routes = dict(routes)
        self._settings = settings
        self._engines = dict(engines or {})
        self._vision = vision

    def engine(self, name: str) -> Extractor | None:
        """The engine ``name`` this router was built with (None when it has none of that name)."""
        return self._engines.get(name)

    def close(self) -> None:
        """Close the vision client's connections, if any."""
        if self._vision is not None:
            self._vision.close()

    def extract(self, blob: Blob) -> Document:
        size = blob_size(blob)
        limits = self._settings
        if size > limits.max_file_bytes:
            raise PayloadTooLarge(
                f"{blob.name!r} is {size:,} bytes, over the {limits.max_file_bytes:,}-byte limit",
                hint="raise RAGD_EXTRACT__MAX_FILE_BYTES or split the file",
            )
        if size == 0:
            raise EmptyDocument(f"{blob.name!r} is empty (0 bytes)", hint="nothing to index")
        data = _read(blob)
        file_type = detect(blob.name, blob.mime_type, data)
        if file_type.kind in ZIP_KINDS:
            check_unpacked_size(blob.name, data, limits.max_unpacked_bytes)
        extractor = self._routes.get(file_type.kind)
        if extractor is None:
            supported = ", ".join(kind.value for kind in self._routes)
            message = f"ragd has no reader for {file_type.kind.value} ({blob.name!r})"
            raise UnsupportedType(message, hint=f"supported: {supported}")
        logger.debug("extracting %r (%s) with %s", blob.name, file_type.mime, extractor.name)
        typed = dataclasses.replace(blob, data=data, path=None, mime_type=file_type.mime)
        document = extractor.extract(typed)
        if len(document.text) > limits.max_chars:
            raise PayloadTooLarge(
                f"{blob.name!r} holds {len(document.text):,} characters of text, "
                f"over the {limits.max_chars:,}-character limit",
                hint="raise RAGD_EXTRACT__MAX_CHARS or split the file",
            )
        if not markup_expected(blob.name, file_type.kind):
            check_readable(document.text, blob.name)
        return document


def blob_size(blob: Blob) -> int:
    """The blob's size in bytes, without reading a file-backed blob."""
    if blob.data is not None:
        return len(blob.data)
    if blob.path is None:
        raise ValueError("blob has neither data nor path")
    try:
        return blob.path.stat().st_size
    except FileNotFoundError as exc:
        raise NotFound(f"{str(blob.path)!r} does not exist") from exc


def _read(blob: Blob) -> bytes:
    try:
        return blob.read()
    except FileNotFoundError as exc:
        raise NotFound(f"{blob.name!r} disappeared before it could be read") from exc


def engines(
    settings: ExtractSettings, ocr_check: OcrCheck | None = None, vision: VisionKit | None = None
) -> dict[str, Extractor]:
    """Every reader by engine name (``POST /api/v1/extract`` lets a caller pick one); the vision
    engines (``vision-llm``, ``hybrid-diagram``) only with a ``vision`` kit."""
    kreuzberg = KreuzbergExtractor(settings, ocr_check)
    found: dict[str, Extractor] = {
        "kreuzberg": kreuzberg,
        "text": TextExtractor(),
        "csv": CsvExtractor(),
        "odp": OdpExtractor(),
        "email": EmailExtractor(html=kreuzberg),
        "xml": XmlTextExtractor(),
    }
    if vision is not None:
        from ragd.vision.routing import vision_engines  # loaded only when an endpoint is configured

        found.update(vision_engines(vision))
    return found


def build_extractor(
    settings: ExtractSettings, ocr_check: OcrCheck | None = None, vision: VisionKit | None = None
) -> RoutingExtractor:
    """The default readers: text, CSV, ODP, e-mail and generic XML in Python, the rest through
    kreuzberg; with a ``vision`` kit, the vision engines where ``settings.engine`` puts them."""
    by_name = engines(settings, ocr_check, vision)
    routes: dict[FileKind, Extractor] = dict.fromkeys(FileKind, by_name["kreuzberg"])
    routes.update(
        {
            FileKind.TEXT: by_name["text"],
            FileKind.CSV: by_name["csv"],
            FileKind.TSV: by_name["csv"],
            FileKind.ODP: by_name["odp"],
            FileKind.EML: by_name["email"],
            FileKind.XML: by_name["xml"],
        }
    )
    if vision is not None:
        from ragd.vision.routing import vision_routes

        routes = vision_routes(settings, vision, routes, by_name)
    return RoutingExtractor(routes, settings, engines=by_name, vision=vision)


def pinned(extractor: Extractor, settings: ExtractSettings) -> RoutingExtractor:
    """``extractor`` for every file type, behind the same size, emptiness and markup checks."""
    return RoutingExtractor(dict.fromkeys(FileKind, extractor), settings)
