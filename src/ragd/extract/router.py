"""The extractor the pipeline calls: checks size, detects the file type, hands it to its reader.

    blob -size check-> bytes -detect (mime.py)-> FileKind -> TextExtractor | CsvExtractor | KreuzbergExtractor

Files over ``ExtractSettings.max_file_bytes`` are refused (:class:`PayloadTooLarge`)
from their size alone, before they are read; 0-byte files are
:class:`EmptyDocument`; types without a reader are :class:`UnsupportedType` with
the list of supported kinds.  :func:`build_extractor` wires the default readers.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping

from ragd.errors import EmptyDocument, NotFound, PayloadTooLarge, UnsupportedType
from ragd.extract.base import Extractor
from ragd.extract.kreuzberg_extractor import KreuzbergExtractor
from ragd.extract.mime import FileKind, detect
from ragd.extract.ocr import OcrCheck
from ragd.extract.tabular import CsvExtractor
from ragd.extract.text_extractor import TextExtractor
from ragd.settings import ExtractSettings
from ragd.types import Blob, Document

logger = logging.getLogger(__name__)


class RoutingExtractor:
    """An :class:`Extractor` that dispatches on the detected :class:`FileKind`."""

    name = "router"

    def __init__(self, routes: Mapping[FileKind, Extractor], max_file_bytes: int) -> None:
        self._routes = dict(routes)
        self._max_file_bytes = max_file_bytes

    def extract(self, blob: Blob) -> Document:
        size = blob_size(blob)
        if size > self._max_file_bytes:
            raise PayloadTooLarge(
                f"{blob.name!r} is {size:,} bytes, over the {self._max_file_bytes:,}-byte limit",
                hint="raise RAGD_EXTRACT__MAX_FILE_BYTES or split the file",
            )
        if size == 0:
            raise EmptyDocument(f"{blob.name!r} is empty (0 bytes)", hint="nothing to index")
        data = _read(blob)
        file_type = detect(blob.name, blob.mime_type, data)
        extractor = self._routes.get(file_type.kind)
        if extractor is None:
            supported = ", ".join(kind.value for kind in self._routes)
            message = f"ragd has no reader for {file_type.kind.value} ({blob.name!r})"
            raise UnsupportedType(message, hint=f"supported: {supported}")
        logger.debug("extracting %r (%s) with %s", blob.name, file_type.mime, extractor.name)
        return extractor.extract(dataclasses.replace(blob, data=data, path=None, mime_type=file_type.mime))


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


def engines(settings: ExtractSettings, ocr_check: OcrCheck | None = None) -> dict[str, Extractor]:
    """Every reader by engine name (``POST /api/v1/extract`` lets a caller pick one)."""
    return {
        "kreuzberg": KreuzbergExtractor(settings, ocr_check),
        "text": TextExtractor(),
        "csv": CsvExtractor(),
    }


def build_extractor(settings: ExtractSettings, ocr_check: OcrCheck | None = None) -> RoutingExtractor:
    """The default readers: plain text and CSV in Python, everything else through kreuzberg."""
    by_name = engines(settings, ocr_check)
    routes: dict[FileKind, Extractor] = dict.fromkeys(FileKind, by_name["kreuzberg"])
    routes.update(
        {FileKind.TEXT: by_name["text"], FileKind.CSV: by_name["csv"], FileKind.TSV: by_name["csv"]}
    )
    return RoutingExtractor(routes, settings.max_file_bytes)


def pinned(extractor: Extractor, max_file_bytes: int) -> RoutingExtractor:
    """``extractor`` for every file type, behind the same size and emptiness checks."""
    return RoutingExtractor(dict.fromkeys(FileKind, extractor), max_file_bytes)
