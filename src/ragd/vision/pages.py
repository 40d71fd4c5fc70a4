"""A file's pages as the pictures the vision engines send: PDF pages rendered by PDFium, Office
files through their PDF (:mod:`ragd.extract.office_pdf`), image files frame by frame; the first
``RAGD_VISION__MAX_PAGES`` of them, each bitmap bounded in pixels whatever the file declares
(held as PNG: at most ``MAX_PAGES`` of them, a few MB)."""

from __future__ import annotations

from dataclasses import dataclass

from ragd.errors import EncryptedDocument, ExtractionError, UnsupportedType
from ragd.extract.mime import FileKind
from ragd.extract.office_pdf import OFFICE_KINDS, to_pdf
from ragd.extract.pdf_pages import PdfUnreadable, page_count, render_pages
from ragd.vision.budget import Deadline
from ragd.vision.images import image_pages
from ragd.vision.kit import VisionKit

#: what the vision-llm engine reads
PAGED_KINDS = frozenset({FileKind.PDF, FileKind.IMAGE, *OFFICE_KINDS})


@dataclass(frozen=True, slots=True)
class Pages:
    """The pictures of the first pages (PNG) and how many pages the file has."""

    images: list[bytes]
    total: int


def file_pages(kit: VisionKit, kind: FileKind, data: bytes, source: str, deadline: Deadline) -> Pages:
    max_pages = kit.settings.max_pages
    if kind is FileKind.IMAGE:
        frames, total = image_pages(data, source, max_pages=max_pages, max_pixels=kit.max_pixels)
        return Pages(frames, total)
    if kind in OFFICE_KINDS:
        deadline.check()
        data = to_pdf(data, source, kit.extract, timeout_s=deadline.left())
    elif kind is not FileKind.PDF:
        raise UnsupportedType(
            f"the vision engines read PDF, Office files and images, not {kind.value} ({source!r})",
            hint="ingest it with the default engine",
        )
    return pdf_pages(kit, data, source)


def pdf_pages(kit: VisionKit, pdf: bytes, source: str) -> Pages:
    try:
        total = page_count(pdf)
    except PdfUnreadable as exc:
        raise unreadable(exc, source) from exc
    # rendered whole before any call: PDFium's lock is held while the document is open, never
    # across a model call (and no half-read generator is left to close in another thread)
    rendered = render_pages(
        pdf, dpi=kit.settings.dpi, max_pages=kit.settings.max_pages, max_pixels=kit.max_pixels
    )
    return Pages([page.png() for page in rendered], total)


def unreadable(exc: PdfUnreadable, source: str) -> ExtractionError:
    if "password" in str(exc).lower():
        return EncryptedDocument(
            f"{source!r} is password-protected",
            hint="remove the password (save an unprotected copy) and ingest it again",
        )
    return ExtractionError(
        f"PDFium cannot open {source!r}: {exc}",
        hint="the file may be corrupt or truncated: open it in its application and save it again",
    )
