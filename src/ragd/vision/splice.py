"""Pure: a document with sections of another engine's text put next to the pages they belong to.

A picture's description goes right after the text of its page, and that page's span grows to hold
it; a picture of a page that has no text (no span) gets a span of its own, between its neighbours;
in an unpaged document, sections go at the end.  Every later span, box and region moves along, and
each section becomes a :class:`ragd.types.Region` naming the engine and profile that wrote it, so
its chunks carry ``meta.extractor`` and ``meta.vision_profile`` of the picture while the page's
text keeps those of its text reader.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from ragd.types import Document, PageSpan, Region

_GAP = "\n\n"


@dataclass(frozen=True, slots=True)
class Section:
    """Text to put after page ``page``'s text (0-based; None: at the end)."""

    page: int | None
    text: str
    extractor: str
    profile: str | None = None


@dataclass(frozen=True, slots=True)
class _Insert:
    at: int  # offset in the old text
    order: tuple[float, int]
    before: str  # inserted before the section's text
    section: Section
    after: str = ""
    new_page: bool = False  # the section is a page of its own


def insert_sections(document: Document, sections: Sequence[Section]) -> Document:
    """``document`` with every section inserted (a page's sections in the given order)."""
    sections = [s for s in sections if s.text.strip()]
    if not sections:
        return document
    inserts = sorted(_plan(document, sections), key=lambda i: (i.at, i.order))
    parts: list[str] = []
    cursor = shift = 0
    points: list[int] = []  # old offsets of the inserts, in order
    totals: list[int] = []  # characters inserted up to and including each
    new_regions: list[Region] = []
    grown: dict[int, int] = {}
    new_spans: list[PageSpan] = []
    for insert in inserts:
        parts.append(document.text[cursor : insert.at])
        cursor = insert.at
        text = insert.section.text.strip()
        start = insert.at + shift + len(insert.before)
        region = Region(start, start + len(text), insert.section.extractor, insert.section.profile)
        new_regions.append(region)
        piece = f"{insert.before}{text}{insert.after}"
        parts.append(piece)
        shift += len(piece)
        points.append(insert.at)
        totals.append(shift)
        page = insert.section.page
        if page is not None and insert.new_page:
            new_spans.append(PageSpan(page, region.start, region.end + len(insert.after)))
        elif page is not None:
            grown[page] = region.end
    parts.append(document.text[cursor:])

    def start_of(offset: int) -> int:  # text inserted at the offset comes before it
        index = bisect.bisect_right(points, offset)
        return offset + (totals[index - 1] if index else 0)

    def end_of(offset: int) -> int:  # text inserted at the offset comes after it
        index = bisect.bisect_left(points, offset)
        return offset + (totals[index - 1] if index else 0)

    pages = [
        PageSpan(s.page, start_of(s.start), max(end_of(s.end), grown.get(s.page, 0))) for s in document.pages
    ]
    moved_regions = [
        dataclasses.replace(r, start=start_of(r.start), end=end_of(r.end)) for r in document.regions
    ]
    return dataclasses.replace(
        document,
        text="".join(parts),
        pages=_merged(sorted([*pages, *new_spans], key=lambda s: s.start)),
        boxes=tuple(
            dataclasses.replace(b, start=start_of(b.start), end=end_of(b.end)) for b in document.boxes
        ),
        regions=tuple(sorted([*moved_regions, *new_regions], key=lambda r: r.start)),
    )


def _plan(document: Document, sections: Sequence[Section]) -> list[_Insert]:
    spans = {span.page: span for span in document.pages}
    ordered = sorted(document.pages, key=lambda s: s.page)
    end = len(document.text)
    plan = []
    for order, section in enumerate(sections):
        page = section.page
        key = (float("inf") if page is None else float(page), order)
        if page is None or not document.pages:
            plan.append(_Insert(end, key, _GAP, section))
        elif page in spans:
            span = spans[page]
            at = span.start + len(document.text[span.start : span.end].rstrip())
            plan.append(_Insert(at, key, _GAP, section))
        else:
            later = next((s for s in ordered if s.page > page), None)
            if later is None:
                plan.append(_Insert(end, key, _GAP, section, new_page=True))
            else:
                plan.append(_Insert(later.start, key, "", section, after=_GAP, new_page=True))
    return plan


def _merged(spans: list[PageSpan]) -> tuple[PageSpan, ...]:
    """Spans with neighbours of the same page joined (a page of two pictures and no text)."""
    out: list[PageSpan] = []
    for span in spans:
        if out and out[-1].page == span.page and out[-1].end >= span.start:
            out[-1] = PageSpan(span.page, out[-1].start, max(out[-1].end, span.end))
        else:
            out.append(span)
    return tuple(out)
