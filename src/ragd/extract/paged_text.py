"""Paged documents (PDF pages, PPTX slides) to one text with exact 0-based page spans.

kreuzberg's per-page text is raw PDFium output: CRLF line ends, ``\\x02`` for a
hyphen at a line break, and runs of control characters where a font has no
Unicode map (glyph garbage).  :func:`clean_page_text` turns that into clean text:
garbled lines (mostly control characters) are dropped, stray control characters
removed, ``\\x02`` becomes ``-``, trailing spaces and blank-line runs collapse, and a
table of contents' dot leaders (``Notices . . . . . . . vii``) become one ``…``
(:func:`collapse_leaders`): two thirds of the shared IBM Redbook's contents page were dots and
their spaces, so each of its chunks held a few titles among hundreds of dots, and outranked the
sections it points to (few words: a strong BM25 match for a title).

:func:`join_pages` concatenates the cleaned pages with a blank line between them
and returns :class:`PageSpan` records that are sorted, contiguous and cover the
whole text (the separator belongs to the page before it); empty pages get no span.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragd.extract.documents import normalise_newlines
from ragd.types import PageSpan

PAGE_SEPARATOR = "\n\n"
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_GARBLED_SHARE = 0.15
_BLANK_RUNS = re.compile(r"\n{3,}")
_IMAGE_XOBJECT = re.compile(rb"/Subtype\s*/Image\b")
_MIN_CHARS_PER_PAGE = 8
#: a leader: five or more dots (or middle dots), each perhaps followed by one space, or three ellipses
_LEADER = re.compile(r"[ \t\u00a0]*(?:(?:[.\u00b7][ \t\u00a0]?){5,}|(?:\u2026[ \t\u00a0]?){3,})[ \t\u00a0]*")
_LEADER_CHARS = frozenset(".\u00b7\u2026")
LEADER = "\u2026"


def clean_page_text(raw: str) -> str:
    """One page's text without PDFium's control characters and glyph garbage."""
    lines = normalise_newlines(raw).split("\n")
    kept = [_clean_line(line) for line in lines if not _garbled(line)]
    return _BLANK_RUNS.sub("\n\n", "\n".join(kept)).strip()


def collapse_leaders(line: str) -> str:
    """``line`` with each run of leader dots replaced by one ``…`` between single spaces (the words
    and page numbers either side are kept; an ellipsis of three or four dots in prose is no leader)."""
    if _LEADER_CHARS.isdisjoint(line):
        return line

    def mark(run: re.Match[str]) -> str:
        before = " " if run.start() > 0 else ""
        return f"{before}{LEADER}{' ' if run.end() < len(line) else ''}"

    return _LEADER.sub(mark, line)


def join_pages(pages: Sequence[str]) -> tuple[str, tuple[PageSpan, ...]]:
    """Document text from per-page texts (already clean), and the span of every non-empty page."""
    parts: list[str] = []
    spans: list[PageSpan] = []
    offset = 0
    for number, page_text in enumerate(pages):
        if not page_text:
            continue
        if parts:
            parts.append(PAGE_SEPARATOR)
            offset += len(PAGE_SEPARATOR)
            last = spans[-1]
            spans[-1] = PageSpan(last.page, last.start, offset)
        parts.append(page_text)
        spans.append(PageSpan(number, offset, offset + len(page_text)))
        offset += len(page_text)
    return "".join(parts), tuple(spans)


def is_negligible(text: str, page_count: int) -> bool:
    """True when the text layer is too thin to be the document (a scan, perhaps with page numbers)."""
    letters_and_digits = sum(1 for ch in text if ch.isalnum())
    return letters_and_digits < _MIN_CHARS_PER_PAGE * max(page_count, 1)


def has_images(data: bytes) -> bool:
    """Whether the PDF holds image objects (a scan does; a blank PDF does not)."""
    return _IMAGE_XOBJECT.search(data) is not None


def _garbled(line: str) -> bool:
    control = len(_CONTROL.findall(line))
    return control >= 2 and control > len(line) * _GARBLED_SHARE


def _clean_line(line: str) -> str:
    return collapse_leaders(_CONTROL.sub("", line.replace("\x02", "-"))).rstrip()
