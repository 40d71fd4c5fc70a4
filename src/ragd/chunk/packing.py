"""Greedy packing: units into chunks, or a span into token windows, with overlap.

Both packers produce :class:`Draft` spans that tile their input (a chunk
ends where the next one's new text begins) and overlap their neighbour by at
most ``overlap`` (and at most half the previous chunk): the next chunk starts
at the earliest unit (cut) whose distance to the previous end is within the
overlap, provided the next chunk still gains new text.

Changing these rules changes chunk boundaries: bump every strategy's
``ALGORITHM_VERSION`` with them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ragd.chunk.context import DocContext, Draft, Fits, HeadersAt, Span
from ragd.chunk.cut_points import first_between

#: Size of a span in the unit the overlap is configured in (characters or tokens).
Measure = Callable[[int, int], int]


def pack_units(
    units: Sequence[Span], *, fits: Fits, overlap: int, measure: Measure, headers_at: HeadersAt
) -> list[Draft]:
    """Join consecutive ``units`` while they fit; overlap neighbours by whole units."""
    drafts: list[Draft] = []
    first, count = 0, len(units)
    while first < count:
        start = units[first][0]
        stop = first + 1
        while stop < count and fits(start, units[stop][1]):
            stop += 1
        drafts.append(Draft(start, units[stop - 1][1], headers_at(start)))
        if stop == count:
            break
        first = _overlap_start(units, first, stop, fits=fits, overlap=overlap, measure=measure)
    return drafts


def _overlap_start(
    units: Sequence[Span], first: int, stop: int, *, fits: Fits, overlap: int, measure: Measure
) -> int:
    """The earliest unit after ``first`` within the previous chunk's last ``overlap`` that leaves room.

    The overlap is also held to half the previous chunk, so chunks cut short
    by the model window still advance by at least half their length.
    """
    end, following = units[stop - 1][1], units[stop][1]
    overlap = min(overlap, measure(units[first][0], end) // 2)
    begin = stop
    while (
        begin - 1 > first
        and measure(units[begin - 1][0], end) <= overlap
        and fits(units[begin - 1][0], following)
    ):
        begin -= 1
    return begin


def pack_tokens(
    ctx: DocContext, start: int, end: int, *, size: int, overlap: int, headers_at: HeadersAt
) -> list[Draft]:
    """Windows of at most ``size`` tokens over ``text[start:end]``, cut at :class:`CutPoints`."""
    tokens, cuts = ctx.tokens, ctx.cuts
    low, high = tokens.first_at(start), tokens.first_at(end)

    def offset(i: int) -> int:
        return start if i == low else end if i >= high else tokens.starts[i]

    def limit(i: int) -> int:
        return i + ctx.text_budget(headers_at(offset(i)), size)

    drafts: list[Draft] = []
    current = low
    while True:
        reach = limit(current)
        stop = high if reach >= high else cuts.end_before(tokens, current, reach)
        drafts.append(Draft(offset(current), offset(stop), headers_at(offset(current))))
        if stop >= high:
            return drafts
        shared = min(overlap, (stop - current) // 2)
        following = first_between(cuts.preferred, max(stop - shared, current + 1), stop) if shared else None
        current = following if following is not None and limit(following) > stop else stop
