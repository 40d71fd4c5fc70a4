"""Pages and word boxes for Office files, through their PDF (``RAGD_EXTRACT__OFFICE_PAGES``).

A .docx, .odt or .xlsx read by its text reader has no pages: its text is Markdown made from the
package, not from a layout.  With ``office_pages`` on, the file is converted to PDF as its page
images will be (:func:`ragd.extract.office_pdf.to_pdf`: LibreOffice or Gotenberg), and the
document's text is aligned with the PDF's characters (:func:`ragd.extract.text_layout.word_boxes`
over all pages at once): each word gets its page and box, and the document gets page spans where
its words move to the next page (a slide deck keeps the spans its reader gave it).

It costs a conversion per file (LibreOffice: about 1-3 s; docs/formats.md#page-images), so it is
off by default.  Pages are an extra: a conversion that fails or has no converter leaves the
document as its reader made it, with a warning in the log, never a failed file.
"""

from __future__ import annotations

import bisect
import dataclasses
import logging

from ragd.errors import RagError
from ragd.extract.office_pdf import to_pdf
from ragd.extract.pdf_layout import document_glyphs
from ragd.extract.pdf_pages import PdfUnreadable
from ragd.extract.text_layout import MAX_DOCUMENT_BOXES, word_boxes
from ragd.settings import ExtractSettings
from ragd.types import Document, PageSpan, TextBox

logger = logging.getLogger(__name__)

#: characters a converted document may have for its words to get boxes
MAX_GLYPHS = 1_000_000


def with_office_pages(
    document: Document, data: bytes, name: str, settings: ExtractSettings, *, timeout_s: float
) -> Document:
    """``document`` (read from ``data``, an Office file called ``name``) with pages and boxes from
    its PDF; as it is when the file cannot be converted."""
    try:
        pdf = to_pdf(data, name, settings, timeout_s=timeout_s)
        chars, boxes, starts = document_glyphs(pdf, MAX_GLYPHS)
    except (RagError, PdfUnreadable) as exc:
        logger.warning("no pages for %r: %s", name, exc)
        return document
    if not starts:
        return document

    def page_of(k: int) -> int:
        return bisect.bisect_right(starts, k) - 1

    found = sorted(word_boxes(page_of, 0, document.text, chars, boxes.__getitem__), key=lambda b: b.start)
    found = found[:MAX_DOCUMENT_BOXES]
    pages = document.pages or page_spans(found, len(document.text))
    meta = {**document.meta, "page_count": document.meta.get("page_count") or len(starts)}
    return dataclasses.replace(document, pages=pages, boxes=tuple(found), meta=meta)


def page_spans(boxes: list[TextBox], length: int) -> tuple[PageSpan, ...]:
    """Sorted, contiguous spans covering ``[0, length)``: a new page where a word is first drawn on
    a later page than the words before it (a word drawn on an earlier page moves nothing back)."""
    spans: list[PageSpan] = []
    for box in boxes:
        if not spans:
            spans.append(PageSpan(box.page, 0, length))
        elif box.page > spans[-1].page:
            last = spans[-1]
            spans[-1] = PageSpan(last.page, last.start, box.start)
            spans.append(PageSpan(box.page, box.start, length))
    return tuple(spans)
