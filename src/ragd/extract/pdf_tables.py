"""Ruled tables of a PDF's text layer, rewritten as Markdown tables in its page texts.

kreuzberg reads a PDF page as plain text: a table comes out as its cells' words line by line, a
merged cell's words wherever PDFium met them, and nothing says which value sits under which
column.  For the tables drawn with rules (a bordered table from Word or LibreOffice, most
report writers), PDFium tells us enough to do better:

* the page's path objects give its horizontal and vertical rules (:mod:`ragd.extract.pdf_rules`);
  :func:`ragd.extract.table_grid.find_grids` turns them into grids with merged cells, and
  :func:`ragd.extract.table_check.plausible` turns away frames that are no table (charts, forms,
  tables whose columns or rows are not all ruled);
* each cell's text is the text PDFium finds inside it (``get_text_bounded``) on one line
  (:func:`cell_text`); a merged cell's text sits in its first cell, the cells it covers stay empty;
  the first row is the header;
* the table's characters must be one run of the page's text (nothing from outside the table
  drawn between its first and last character): that run is found in the cleaned page text
  (compared without white space) and replaced by the Markdown table, a blank line either side;
* a table that goes on over a page break (same columns, at the foot of one page and the head of
  the next) gets its header row again on the next page, unless the file draws it there itself.

Anything that does not fit leaves the page as it was: the table is then read as before, as lines
of text.  Tables drawn without rules (columns of aligned text) are not detected.  The text still
comes from the same characters, so page spans and word boxes (:mod:`ragd.extract.pdf_layout`
aligns the page text to PDFium's characters, skipping the ``|`` and ``---`` it does not find) keep
working.  Bounded: a page drawing more than :data:`ragd.extract.pdf_rules.MAX_SEGMENTS` path
segments or the document more than :data:`MAX_DOCUMENT_SEGMENTS`, and characters past
:data:`MAX_CHARS` on a page, are not looked at.
"""

from __future__ import annotations

import ctypes
import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from ragd.extract.documents import normalise_newlines
from ragd.extract.paged_text import clean_page_text
from ragd.extract.pdf_pages import PDFIUM_LOCK, PdfUnreadable, open_pdf
from ragd.extract.pdf_rules import page_rules
from ragd.extract.table_check import Glyph, plausible
from ragd.extract.table_grid import JOIN, THIN, Box, Grid, find_grids, holds
from ragd.extract.tabular import markdown_table

logger = logging.getLogger(__name__)

#: path segments read per document at most: past them, later pages are not looked at
MAX_DOCUMENT_SEGMENTS = 1_000_000
#: characters of a page's text layer looked at, at most
MAX_CHARS = 100_000
#: a table ending this close to a page's foot (share of its height), and the next page's first
#: table starting this close to its head, with the same columns, are one table across the pages
PAGE_EDGE = 0.3


@dataclass(frozen=True, slots=True)
class PageTable:
    """A table found on a page: its rows of cell texts (the first is the header) and the page
    text PDFium gives for the run of characters it replaces."""

    rows: tuple[tuple[str, ...], ...]
    run: str
    #: column edges (points, left to right)
    edges: tuple[float, ...] = ()
    #: top and bottom of the table as fractions of the page's height from its top
    top: float = 0.0
    bottom: float = 1.0

    def markdown(self) -> str:
        return markdown_table(self.rows).rstrip("\n")

    def continues(self, before: PageTable) -> bool:
        """Whether this table, first on its page, carries on ``before``, last on the previous page:
        the same columns, ``before`` reaching the page's last :data:`PAGE_EDGE` and this one
        starting in the first, and a first row other than ``before``'s header."""
        return (
            len(self.edges) == len(before.edges)
            and all(abs(a - b) <= THIN for a, b in zip(self.edges, before.edges, strict=True))
            and before.bottom >= 1 - PAGE_EDGE
            and self.top <= PAGE_EDGE
            and self.rows[0] != before.rows[0]
        )


def with_tables(data: bytes, page_texts: Sequence[str]) -> list[str]:
    """``page_texts`` (cleaned, one per page of the PDF ``data``) with each ruled table the page
    draws as a Markdown table; the texts unchanged when PDFium cannot open the file."""
    out = list(page_texts)
    budget = [MAX_DOCUMENT_SEGMENTS]
    before: PageTable | None = None  # the last table of the previous page
    try:
        with open_pdf(data) as pdf:
            with PDFIUM_LOCK:
                count = min(len(pdf), len(out))
            for index in range(count):
                tables: list[PageTable] = []
                if out[index]:
                    with PDFIUM_LOCK:
                        tables = page_tables(pdf, index, budget)
                    if tables and before is not None and tables[0].continues(before):
                        tables[0] = dataclasses.replace(tables[0], rows=(before.rows[0], *tables[0].rows))
                    if tables:
                        out[index] = splice(out[index], tables)
                before = tables[-1] if tables else None
                if budget[0] <= 0:
                    logger.info(
                        "tables looked for on the first %d pages only (path segment budget)", index + 1
                    )
                    break
    except PdfUnreadable:
        return list(page_texts)
    return out


def page_tables(pdf: pdfium.PdfDocument, index: int, budget: list[int] | None = None) -> list[PageTable]:
    """The ruled tables of page ``index`` whose characters form one run of its text (hold the lock);
    ``budget`` (path segments left for the document) is spent by what the page draws."""
    page = pdf[index]
    try:
        rules = page_rules(page, budget)
        grids = find_grids(rules) if rules else []
        if not grids:
            return []
        textpage = page.get_textpage()
        try:
            return _tables(textpage, grids, page.get_height())
        finally:
            textpage.close()
    finally:
        page.close()


def _tables(textpage: pdfium.PdfTextPage, grids: list[Grid], height: float) -> list[PageTable]:
    glyphs = _glyphs(textpage)
    found: list[tuple[int, PageTable]] = []
    for grid in grids:
        run = _run(glyphs, grid.box)
        if run is None or not plausible(grid, [glyph for _, glyph in glyphs]):
            continue
        texts = [cell_text(textpage.get_text_bounded(*block.box)) for block in grid.blocks]
        first, last = run
        rows = tuple(tuple(row) for row in grid.cells(texts))
        run_text = textpage.get_text_range(first, last - first + 1)
        top, bottom = (1 - grid.ys[0] / height, 1 - grid.ys[-1] / height) if height > 0 else (0.0, 1.0)
        found.append((first, PageTable(rows, run_text, grid.xs, top, bottom)))
    return [table for _, table in sorted(found, key=lambda item: item[0])]


def cell_text(raw: str) -> str:
    """A cell's text from PDFium's (lines wrapped by the cell's width): one line, white space
    single spaces; lines that end or start with a hyphen join without a space (a long name or
    number broken at its hyphen)."""
    out = ""
    for line in normalise_newlines(raw.replace("\ufffe", "-").replace("\x02", "-")).split("\n"):
        words = " ".join(line.split())
        if words:
            glue = "" if not out or out.endswith("-") or words.startswith("-") else " "
            out = f"{out}{glue}{words}"
    return out


def _glyphs(textpage: pdfium.PdfTextPage) -> list[tuple[int, Glyph]]:
    """The page's characters other than white space, with their index in the text page."""
    out: list[tuple[int, Glyph]] = []
    left, bottom, right, top = (ctypes.c_double() for _ in range(4))
    raw = textpage.raw
    for i in range(min(textpage.count_chars(), MAX_CHARS)):
        code = pdfium_c.FPDFText_GetUnicode(raw, i)
        if (
            code == 0
            or chr(code).isspace()
            or not pdfium_c.FPDFText_GetCharBox(raw, i, left, right, bottom, top)
        ):
            continue
        out.append((i, Glyph(left.value, bottom.value, right.value, top.value)))
    return out


def _run(glyphs: list[tuple[int, Glyph]], box: Box) -> tuple[int, int] | None:
    """The first and last index of the characters inside ``box``, when no character from outside
    comes between them; None when none is inside or the run is interleaved."""
    inside = [holds(box, *glyph.centre, margin=JOIN) for _, glyph in glyphs]
    if True not in inside:
        return None
    first = inside.index(True)
    last = len(inside) - 1 - inside[::-1].index(True)
    if not all(inside[first : last + 1]):
        return None
    return glyphs[first][0], glyphs[last][0]


def splice(page_text: str, tables: Sequence[PageTable]) -> str:
    """``page_text`` with each table's run (in order; compared without white space) replaced by
    the table in Markdown, a blank line either side; a table whose run is not found is left out."""
    compact, offsets = _without_space(page_text)
    parts: list[str] = []  # text, table, text, table, ..., text
    cursor = searched = 0
    for table in tables:
        needle, _ = _without_space(clean_page_text(table.run.replace("\ufffe", "\x02")))
        at = compact.find(needle, searched) if needle else -1
        if at < 0:
            logger.debug("a ruled table's text is not one run of the page text: left as text")
            continue
        start, end = offsets[at], offsets[at + len(needle) - 1] + 1
        parts.extend([page_text[cursor:start], table.markdown()])
        cursor, searched = end, at + len(needle)
    if not parts:
        return page_text
    parts.append(page_text[cursor:])
    return "\n\n".join(part.strip() for part in parts if part.strip())


def _without_space(text: str) -> tuple[str, list[int]]:
    """``text`` without white space, and the offset in ``text`` of each character kept."""
    offsets = [i for i, ch in enumerate(text) if not ch.isspace()]
    return "".join(text[i] for i in offsets), offsets
