"""kreuzberg 4.10.4 as ragd's document extractor: the one module that imports kreuzberg.

How each kind is read (measured on ../shared/documents, see tests/extract):

* PDF: plain text page by page (kreuzberg's Markdown mode garbles words), cleaned
  and joined with exact 0-based page spans (:mod:`ragd.extract.paged_text`); tables drawn
  with rules become Markdown tables (:mod:`ragd.extract.pdf_tables`).  A PDF
  whose text layer is negligible but which holds images is a scan: it is OCRed page
  by page when ``ocr == "auto"`` and Tesseract is installed, else
  :class:`OcrUnavailable` says how to enable OCR.  Every word gets its box on its page
  (``Document.boxes``): PDFium's for a text layer (:mod:`ragd.extract.pdf_layout`), Tesseract's for
  a scan (:mod:`ragd.extract.scan_layout`); with ``office_pages``, an Office file's words get
  theirs, and the file its pages, from its PDF (:mod:`ragd.extract.office_layout`).
* Images: OCR only (same rules).
* DOCX, PPTX, XLSX/XLS, ODT, EPUB, HTML, IPYNB, JATS: Markdown, which keeps
  headings (``#``) and tables (``|`` rows; one ``## <sheet>`` section per sheet).
  PPTX gets its speaker notes back and one page span per slide; HTML loses
  kreuzberg's broken metadata header, and HTML nested deeper than kreuzberg
  reads is flattened first (:mod:`ragd.extract.html_depth`); JATS keeps its numeric character references
  (:mod:`ragd.extract.markup_fixes`).
* DOC (Word 97-2003): plain text (Markdown mode runs every paragraph into one),
  tables rebuilt one row per line (:func:`ragd.extract.markup_fixes.word_table_rows`).
* MSG: plain text (headers and body), then the attachments' names (as for EML).
* RTF, ODS, PPT: Markdown (RTF and ODS keep tables; PPT gives one paragraph per
  text run, its table cells included, and its speaker notes, without slide spans).
  E-mail (EML), ODP and generic XML are read by :mod:`ragd.extract.email_message`,
  :mod:`ragd.extract.odp` and :mod:`ragd.extract.xml_text`.

Only local features are used: no cache, chunking, embeddings, keywords, layout
model or language detection (they would download models or write files).  Every
call is bounded by ``ExtractSettings.timeout_s`` through kreuzberg's own
``extraction_timeout_secs``; kreuzberg errors become ragd errors here.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import re
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import kreuzberg

from ragd.errors import EmptyDocument, EncryptedDocument, ExtractionError, PayloadTooLarge, UnsupportedType
from ragd.extract.documents import make_document, normalise_newlines
from ragd.extract.html_depth import limit_depth, limit_epub_depth
from ragd.extract.markup_fixes import (
    compact_tables,
    inline_char_refs,
    strip_html_front_matter,
    word_table_rows,
)
from ragd.extract.mime import FileKind, FileType, file_type_for_mime, file_type_for_name
from ragd.extract.ocr import OcrCheck, TesseractProbe, ocr_disabled, ocr_unavailable
from ragd.extract.office_layout import with_office_pages
from ragd.extract.office_pdf import OFFICE_KINDS
from ragd.extract.paged_text import clean_page_text, has_images, is_negligible, join_pages
from ragd.extract.pdf_layout import text_boxes
from ragd.extract.pdf_pages import PdfUnreadable, page_count
from ragd.extract.pdf_tables import with_tables
from ragd.extract.pptx_notes import read_speaker_notes, with_notes
from ragd.extract.scan_layout import ScannedPage, render_for_ocr, scan_boxes, scanned_page
from ragd.settings import ExtractSettings
from ragd.types import Blob, Document, PageSpan, TextBox

logger = logging.getLogger(__name__)

_PLAIN_KINDS = frozenset(
    {FileKind.PDF, FileKind.DOC, FileKind.EML, FileKind.MSG, FileKind.IMAGE, FileKind.XML}
)
_NON_UTF8_DECLARATION = re.compile(rb"<\?xml[^>]*encoding=[\"'](?!utf-?8)", re.IGNORECASE)


class KreuzbergExtractor:
    """Office, PDF, e-book, markup and image files through kreuzberg."""

    name = "kreuzberg"

    def __init__(self, settings: ExtractSettings, ocr_check: OcrCheck | None = None) -> None:
        self._settings = settings
        self._ocr_check = ocr_check or TesseractProbe()

    def extract(self, blob: Blob) -> Document:
        file_type = file_type_for_mime(blob.mime_type) or file_type_for_name(blob.name)
        if file_type is None:
            raise UnsupportedType(f"kreuzberg cannot tell what {blob.name!r} is", hint="give it an extension")
        call = _Call(blob.name, file_type, self._settings.timeout_s)
        data = blob.read()
        if file_type.kind is FileKind.PDF:
            return self._pdf(call, data)
        if file_type.kind is FileKind.IMAGE:
            language = self._require_ocr(call.source, image=True)
            return self._document(call, self._ocr_image(call, data, file_type.mime, language), ocr=True)
        if file_type.kind is FileKind.PPTX:
            return self._office_pages(call, data, self._slides(call, data))
        if file_type.kind is FileKind.JATS:
            data = _inline_refs(data)
        elif file_type.kind is FileKind.HTML:
            data = limit_depth(data)
        elif file_type.kind is FileKind.EPUB:
            data = limit_epub_depth(data)
        result = self._run(call, data, self._config(call, _format(file_type.kind)))
        text = normalise_newlines(result.content).strip()
        if file_type.kind is FileKind.HTML:
            text = strip_html_front_matter(text)
        elif file_type.kind is FileKind.DOC:
            text = word_table_rows(text)
        elif file_type.kind is FileKind.MSG and (names := list(result.metadata.get("attachments") or [])):
            text = f"{text}\n\nAttachments: {', '.join(names)}"  # as for EML: names, not contents
        document = self._document(call, compact_tables(text), meta=_meta(result, file_type.kind))
        return self._office_pages(call, data, document)

    def _pdf(self, call: _Call, data: bytes) -> Document:
        pages_config = kreuzberg.PageConfig(extract_pages=True)
        result = self._run(call, data, self._config(call, "plain", pages=pages_config))
        page_texts = with_tables(data, [clean_page_text(page["content"]) for page in result.pages or []])
        text, spans = join_pages(page_texts)
        meta = {**_meta(result, FileKind.PDF), "page_count": len(page_texts)}
        if not is_negligible(text, len(page_texts)) or not has_images(data):
            document = self._document(call, text, pages=spans, meta=meta)
            return self._laid_out(document, lambda: text_boxes(data, text, spans))
        language = self._require_ocr(call.source)
        logger.info("OCR of %r: %d scanned pages", call.source, len(page_texts))
        scans = self._ocr_pdf(call, data, language)
        text, spans = join_pages([scan.text for scan in scans])
        document = self._document(call, text, pages=spans, meta=meta, ocr=True)
        return self._laid_out(document, lambda: scan_boxes(text, spans, scans))

    def _laid_out(self, document: Document, boxes: Callable[[], tuple[TextBox, ...]]) -> Document:
        """``document`` with its word boxes (``RAGD_EXTRACT__PAGE_BOXES``)."""
        return dataclasses.replace(document, boxes=boxes()) if self._settings.page_boxes else document

    def _office_pages(self, call: _Call, data: bytes, document: Document) -> Document:
        """An Office file's document with pages and boxes from its PDF (``RAGD_EXTRACT__OFFICE_PAGES``)."""
        wanted = self._settings.office_pages and self._settings.page_boxes
        if not wanted or call.file_type.kind not in OFFICE_KINDS:
            return document
        return with_office_pages(document, data, call.source, self._settings, timeout_s=call.seconds_left())

    def _slides(self, call: _Call, data: bytes) -> Document:
        marker = f"RAGDSLIDE{uuid.uuid4().hex}N"
        pages_config = kreuzberg.PageConfig(
            extract_pages=True, insert_page_markers=True, marker_format=f"\n\n{marker}{{page_num}}\n\n"
        )
        result = self._run(call, data, self._config(call, "markdown", pages=pages_config))
        slides = [compact_tables(s) for s in _split_marked(normalise_newlines(result.content), marker)]
        text, spans = join_pages(with_notes(slides, read_speaker_notes(data)))
        return self._document(
            call, text, pages=spans, meta={**_meta(result, FileKind.PPTX), "page_count": len(slides)}
        )

    def _ocr_pdf(self, call: _Call, data: bytes, language: str) -> list[ScannedPage]:
        """Each page drawn by PDFium at :data:`ragd.extract.scan_layout.OCR_SIDE` pixels on its
        longer side (what kreuzberg's Tesseract reads without scaling it: its word boxes are then
        in the image's pixels) and OCRed; one page in memory at a time."""
        try:
            count = page_count(data)
            scans = []
            for index in range(count):
                image = render_for_ocr(data, index)
                result = self._ocr_result(call, image.png, "image/png", language)
                text = normalise_newlines(result.content).strip()
                scans.append(scanned_page(text, result.ocr_elements, image))
            return scans
        except PdfUnreadable as exc:
            raise _translate(exc, call) from exc

    def _ocr_image(self, call: _Call, data: bytes, mime: str, language: str) -> str:
        return normalise_newlines(self._ocr_result(call, data, mime, language).content).strip()

    def _ocr_result(self, call: _Call, data: bytes, mime: str, language: str) -> kreuzberg.ExtractionResult:
        ocr = kreuzberg.OcrConfig(backend="tesseract", language=language)
        return self._run(call, data, self._config(call, "plain", ocr=ocr), mime=mime)

    def _require_ocr(self, source: str, *, image: bool = False) -> str:
        """The OCR language, or the error saying why OCR cannot run for ``source``."""
        language = self._settings.ocr_language
        if self._settings.ocr == "off":
            raise ocr_disabled(source, image=image)
        status = self._ocr_check(language)
        if not status.available:
            raise ocr_unavailable(source, language, status.reason, image=image)
        if "tesseract" not in kreuzberg.list_ocr_backends():
            raise ocr_unavailable(
                source, language, "this kreuzberg build has no Tesseract backend", image=image
            )
        return language

    def _config(
        self,
        call: _Call,
        output_format: str,
        *,
        pages: kreuzberg.PageConfig | None = None,
        ocr: kreuzberg.OcrConfig | None = None,
    ) -> kreuzberg.ExtractionConfig:
        return kreuzberg.ExtractionConfig(
            use_cache=False,
            output_format=output_format,
            pages=pages,
            ocr=ocr,
            extraction_timeout_secs=call.seconds_left(),
        )

    def _run(
        self, call: _Call, data: bytes, config: kreuzberg.ExtractionConfig, mime: str | None = None
    ) -> kreuzberg.ExtractionResult:
        try:
            result = kreuzberg.extract_bytes_sync(data, mime or call.file_type.mime, config)
        except (kreuzberg.KreuzbergError, RuntimeError, ValueError, OSError, MemoryError) as exc:
            raise _translate(exc, call, ocr_language=config.ocr.language if config.ocr else None) from exc
        call.seconds_left()  # kreuzberg's limit is whole seconds: a call that ran past ours is cut too
        for warning in result.processing_warnings:
            logger.debug("kreuzberg warning for %r: %s: %s", call.source, warning.source, warning.message)
        return result

    def _document(
        self,
        call: _Call,
        text: str,
        *,
        pages: Sequence[PageSpan] = (),
        meta: dict[str, Any] | None = None,
        ocr: bool = False,
    ) -> Document:
        if ocr and not text.strip():
            raise EmptyDocument(f"{call.source!r} has no text, and OCR found none either")
        return make_document(
            text,
            extractor=self.name,
            source=call.source,
            mime_type=call.file_type.mime,
            pages=pages,
            meta={**(meta or {}), "ocr": "tesseract" if ocr else None},
        )


@dataclass(frozen=True, slots=True)
class _Call:
    """One extraction: what is being read, and its time limit (all kreuzberg calls share it)."""

    source: str
    file_type: FileType
    limit_s: float
    started: float = field(default_factory=time.monotonic)

    def seconds_left(self) -> int:
        """Whole seconds left for the next kreuzberg call (at least 1); raises when time is up."""
        left = self.started + self.limit_s - time.monotonic()
        if left <= 0:
            raise _timeout(self)
        return max(1, math.ceil(left))


def _format(kind: FileKind) -> str:
    return "plain" if kind in _PLAIN_KINDS else "markdown"


def _split_marked(content: str, marker: str) -> list[str]:
    """Slide texts from content with ``<marker><n>`` before slide n (1-based)."""
    parts = re.split(f"{re.escape(marker)}(\\d+)", content)
    slides: dict[int, str] = {}
    for number, body in zip(parts[1::2], parts[2::2], strict=True):
        slides[int(number)] = slides.get(int(number), "") + body
    if not slides:
        return [content]
    ordered = [slides.get(n, "") for n in range(1, max(slides) + 1)]
    ordered[0] = parts[0] + ordered[0]
    return ordered


def _inline_refs(data: bytes) -> bytes:
    if _NON_UTF8_DECLARATION.search(data[:512]):
        return data
    try:
        return inline_char_refs(data.decode("utf-8")).encode("utf-8")
    except UnicodeDecodeError:
        return data


def _meta(result: kreuzberg.ExtractionResult, kind: FileKind) -> dict[str, Any]:
    """The small, useful part of kreuzberg's metadata (empty values are dropped later)."""
    found = result.metadata
    language = found.get("language") if kind is not FileKind.IPYNB else None  # a notebook's is Python
    return {
        "title": found.get("title"),
        "subject": found.get("subject"),
        "authors": list(found.get("authors") or []),
        "created_at": found.get("created_at"),
        "languages": list(result.detected_languages or ([language] if language else [])),
    }


def _translate(
    exc: BaseException, call: _Call, *, ocr_language: str | None = None
) -> ExtractionError | PayloadTooLarge:
    message = squeeze_repeats(str(getattr(exc, "message", exc)))[:300]
    if isinstance(exc, kreuzberg.ExtractionTimeoutError):
        return _timeout(call)
    if "out of memory" in message.lower() or isinstance(exc, MemoryError):
        return PayloadTooLarge(
            f"reading {call.source!r} ran out of memory",
            hint="the file unpacks to more than the extraction process may use: "
            "raise RAGD_EXTRACT__MEMORY_MB, or split the file",
        )
    if "password" in message.lower():
        return EncryptedDocument(
            f"{call.source!r} is password-protected",
            hint="remove the password (save an unprotected copy) and ingest it again",
        )
    ocr_failed = isinstance(exc, (kreuzberg.OCRError, kreuzberg.MissingDependencyError)) or "OCR" in message
    if ocr_language is not None and ocr_failed:
        reason = f"kreuzberg's Tesseract failed ({message})"
        return ocr_unavailable(call.source, ocr_language, reason, image=call.file_type.kind is FileKind.IMAGE)
    return ExtractionError(
        f"could not read {call.source!r} as {call.file_type.kind.value}: {message}",
        hint="the file may be corrupt or truncated: open it in its application and save it again",
    )


def squeeze_repeats(message: str) -> str:
    """A library message with its ``a: b: a: b`` chain said once (PDFium's errors repeat their cause)."""
    parts = message.split(": ")
    i = 0
    while i < len(parts):
        for size in range(1, (len(parts) - i) // 2 + 1):
            if parts[i : i + size] == parts[i + size : i + 2 * size]:
                del parts[i + size : i + 2 * size]
                break
        else:
            i += 1
    return ": ".join(parts)


def _timeout(call: _Call) -> ExtractionError:
    return ExtractionError(
        f"extracting {call.source!r} timed out after {call.limit_s:g} s",
        hint="raise RAGD_EXTRACT__TIMEOUT_S, or split the file",
    )
