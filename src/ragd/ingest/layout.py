"""Where a chunk sits in its document's layout: its boxes on the pages, and the engine that made it.

Pure functions over the extractor's :class:`ragd.types.TextBox` and :class:`ragd.types.Region`
records, in the document text's character offsets (the chunker's ``start``/``end``).

:func:`chunk_boxes` merges the word or line boxes a chunk overlaps into one rectangle per line
(boxes of one page whose vertical extents overlap by half the shorter height, in reading order),
and caps the list at :data:`MAX_BOXES` by merging neighbours, so a chunk's payload stays small
whatever the page holds.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from ragd.types import Region, TextBox

#: at most this many rectangles per chunk (a passage of a dense page is a few dozen lines)
MAX_BOXES = 48
_DIGITS = 4

Box = tuple[int, float, float, float, float]


def chunk_boxes(boxes: Sequence[TextBox], start: int, end: int) -> tuple[Box, ...]:
    """One rectangle per line of characters ``[start, end)``: ``(page, x0, y0, x1, y1)``."""
    if not boxes or end <= start:
        return ()
    starts = [b.start for b in boxes]  # extractors emit boxes in text order
    first = max(bisect.bisect_right(starts, start) - 1, 0)
    lines: list[list[float]] = []  # [page, x0, y0, x1, y1]
    for box in boxes[first:]:
        if box.start >= end:
            break
        if box.end <= start:
            continue
        last = lines[-1] if lines else None
        if last is not None and last[0] == box.page and _same_line(last, box):
            last[1], last[2] = min(last[1], box.x0), min(last[2], box.y0)
            last[3], last[4] = max(last[3], box.x1), max(last[4], box.y1)
        else:
            lines.append([box.page, box.x0, box.y0, box.x1, box.y1])
    while len(lines) > MAX_BOXES:
        lines = _halve(lines)
    return tuple(
        (int(p), round(x0, _DIGITS), round(y0, _DIGITS), round(x1, _DIGITS), round(y1, _DIGITS))
        for p, x0, y0, x1, y1 in lines
    )


def region_of(regions: Sequence[Region], start: int, end: int) -> Region | None:
    """The region that holds most of characters ``[start, end)``, if any overlaps them."""
    best: Region | None = None
    best_overlap = 0
    for region in regions:
        overlap = min(end, region.end) - max(start, region.start)
        if overlap > best_overlap:
            best, best_overlap = region, overlap
    return best


def _same_line(line: list[float], box: TextBox) -> bool:
    top, bottom = max(line[2], box.y0), min(line[4], box.y1)
    shorter = min(line[4] - line[2], box.y1 - box.y0)
    return bottom - top >= shorter / 2


def _halve(lines: list[list[float]]) -> list[list[float]]:
    """Neighbouring lines of one page merged pairwise (a coarser outline of the same passage);
    lines that no neighbour on their page can take are cut at :data:`MAX_BOXES`."""
    merged: list[list[float]] = []
    i = 0
    while i < len(lines):
        a = lines[i]
        b = lines[i + 1] if i + 1 < len(lines) else None
        if b is not None and b[0] == a[0]:
            merged.append([a[0], min(a[1], b[1]), min(a[2], b[2]), max(a[3], b[3]), max(a[4], b[4])])
            i += 2
        else:
            merged.append(a)
            i += 1
    return merged if len(merged) < len(lines) else merged[:MAX_BOXES]
