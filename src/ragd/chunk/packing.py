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
#: a paragraph of at most this many tokens right above a table is its title or caption
LEAD_IN_TOKENS = 32


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
    ctx: DocContext,
    start: int,
    end: int,
    *,
    size: int,
    overlap: int,
    headers_at: HeadersAt,
    before_tables: bool = False,
) -> list[Draft]:
    """Windows of at most ``size`` tokens over ``text[start:end]``, cut at :class:`CutPoints`.

    With ``before_tables``, a window that would end inside a table starting in it ends before the
    table instead (:func:`table_cut`), and the next one starts there, without overlap."""
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
        before = table_cut(ctx, current, stop, reach) if before_tables and stop < high else None
        stop = stop if before is None else before
        drafts.append(Draft(offset(current), offset(stop), headers_at(offset(current))))
        if stop >= high:
            return drafts
        if before is not None:
            current = stop
            continue
        shared = min(overlap, (stop - current) // 2)
        following = first_between(cuts.preferred, max(stop - shared, current + 1), stop) if shared else None
        current = following if following is not None and limit(following) > stop else stop


def table_cut(ctx: DocContext, current: int, stop: int, reach: int) -> int | None:
    """Where a window from token ``current`` (allowed up to ``reach``) ends instead of ``stop``
    when ``stop`` falls inside a table that starts after ``current``: before the table, or before
    its lead-in (the paragraph right above it, when it has at most :data:`LEAD_IN_TOKENS`
    tokens: its title or caption goes with it).  None when that would leave the window no more
    than half full (the table is then cut between rows, as any long table)."""
    tokens = ctx.tokens
    table = ctx.layout.table_at(tokens.starts[stop])
    if table is None or table.start <= tokens.starts[current]:
        return None
    cut = tokens.first_at(_lead_in(ctx, table.start))
    if cut == stop or (cut < stop and (cut - current) * 2 > reach - current):
        return cut
    return None


def _lead_in(ctx: DocContext, table_start: int) -> int:
    """Where the short paragraph right above a table starts (the table's start when it has none)."""
    text = ctx.text
    end = table_start
    while end > 0 and text[end - 1].isspace():
        end -= 1
    if end == 0 or text.count("\n", end, table_start) < 2:
        return table_start  # no blank line between them: the table is not led in by a paragraph
    begin = text.rfind("\n\n", 0, end)
    begin = 0 if begin < 0 else begin + 2
    if ctx.layout.table_at(begin) is not None or ctx.tokens.count(begin, end) > LEAD_IN_TOKENS:
        return table_start
    return begin
