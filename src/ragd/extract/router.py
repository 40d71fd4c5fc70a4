"""Picks the extractor for a file: plain readers for text formats, kreuzberg for the rest."""

from __future__ import annotations

import logging
import shutil

import kreuzberg

from ragd.errors import (
    EmptyDocument,
    EncryptedDocument,
    ExtractionError,
    OcrUnavailable,
    PayloadTooLarge,
    UnsupportedType,
)
from ragd.settings import ExtractSettings
from ragd.types import Blob, Document

log = logging.getLogger(__name__)

TEXT_SUFFIXES = frozenset(
    ".txt .md .markdown .rst .py .js .ts .tsx .jsx .java .go .rs .c .h .cpp .hpp .cs .rb .php .sh .sql "
    ".yaml .yml .toml .ini .cfg .json .css .scss .kt .swift .scala .lua .r .pl .tex .log".split()
)
KREUZBERG_SUFFIXES = frozenset(
    ".pdf .docx .doc .pptx .ppt .xlsx .xls .ods .odt .odp .epub .eml .msg .html .htm .xhtml .xml .nxml "
    ".csv .tsv .ipynb .rtf .png .jpg .jpeg .tif .tiff .bmp".split()
)
SCANNABLE = frozenset(".pdf .png .jpg .jpeg .tif .tiff .bmp".split())


def _decode(raw: bytes) -> str:
    for encoding in ("utf-8", "cp1252"):
        try:
            return raw.decode(encoding)
        except UnicodeDecodeError:
            continue
    return raw.decode("utf-8", errors="replace")


class RoutingExtractor:
    """Implements :class:`ragd.extract.base.Extractor` by file type."""

    name = "router"

    def __init__(self, settings: ExtractSettings) -> None:
        self._settings = settings

    def extract(self, blob: Blob) -> Document:
        size = len(blob.data) if blob.data is not None else (blob.path.stat().st_size if blob.path else 0)
        if size > self._settings.max_file_bytes:
            raise PayloadTooLarge(
                f"{blob.name}: {size} bytes is over the {self._settings.max_file_bytes} limit"
            )
        if size == 0:
            raise EmptyDocument(f"{blob.name}: the file is empty")
        suffix = blob.suffix
        if suffix in TEXT_SUFFIXES:
            text = _decode(blob.read())
            if not text.strip():
                raise EmptyDocument(f"{blob.name}: the file holds only white space")
            return Document(text=text, extractor="text", mime_type="text/plain")
        if suffix not in KREUZBERG_SUFFIXES:
            kinds = " ".join(sorted(TEXT_SUFFIXES | KREUZBERG_SUFFIXES))
            raise UnsupportedType(
                f"{blob.name}: cannot read {suffix or 'files without an extension'}",
                hint=f"supported: {kinds}",
            )
        return self._kreuzberg(blob, suffix)

    def _kreuzberg(self, blob: Blob, suffix: str) -> Document:
        try:
            if blob.path is not None:
                result = kreuzberg.extract_file_sync(blob.path)
            else:
                mime = kreuzberg.detect_mime_type_from_bytes(blob.read())
                result = kreuzberg.extract_bytes_sync(blob.read(), mime)
        except Exception as exc:
            message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if "password" in message.lower() or "encrypt" in message.lower():
                raise EncryptedDocument(f"{blob.name}: the file is password-protected") from exc
            raise ExtractionError(f"{blob.name}: could not be parsed ({message[:200]})") from exc
        text = result.content or ""
        if not text.strip():
            if suffix in SCANNABLE:
                if self._settings.ocr == "auto" and shutil.which("tesseract"):
                    raise ExtractionError(f"{blob.name}: OCR found no text")
                raise OcrUnavailable(
                    f"{blob.name}: no text layer (scanned?)",
                    hint="install Tesseract (apt-get install tesseract-ocr tesseract-ocr-eng) "
                    "and keep RAGD_EXTRACT__OCR=auto",
                )
            raise EmptyDocument(f"{blob.name}: no text found")
        return Document(text=text, extractor="kreuzberg", mime_type=result.mime_type)


def build_extractor(settings: ExtractSettings) -> RoutingExtractor:
    return RoutingExtractor(settings)
