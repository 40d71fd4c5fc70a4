"""Cutting text into atomic units that the packer joins into chunks.

Units tile a span: each ends where the next begins, separators stay at the
end of the unit before them.  A unit that does not fit on its own is cut on
the next separator of a ladder (paragraphs, lines, sentences, words) and, as
a last resort, between characters.  Tables come pre-cut into their header
block and one unit per row, so a chunk boundary inside a table falls between
rows; only a row too big on its own is cut further.

Changing these rules changes chunk boundaries: bump every strategy's
``ALGORITHM_VERSION`` with them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from itertools import pairwise

from ragd.chunk.context import Fits, Span
from ragd.chunk.structure import Layout, Table

#: Turns a text span (no tables inside) into units.
TextUnits = Callable[[int, int], list[Span]]

PARAGRAPHS = re.compile(r"\n[ \t]*\n\s*")
LINES = re.compile(r"\n\s*")
SENTENCES = re.compile(r"[.!?…]+[\"'”’)\]]*\s+|[。！？]+[\"'”’」』)\]]*\s*")
WORDS = re.compile(r"\s+")

#: The recursive strategy's separator ladder (characters come last).
RECURSIVE_LADDER = (PARAGRAPHS, LINES, SENTENCES, WORDS)
WORD_LADDER = (WORDS,)
#: Table pieces: the header block is two lines; a row is one line, cut between words.
ROW_LADDER = (LINES, WORDS)


def characters(start: int, end: int) -> int:
    """The character measure of a span (for overlaps configured in characters)."""
    return end - start


def split_at(text: str, start: int, end: int, patterns: Sequence[re.Pattern[str]]) -> list[Span]:
    """``[start, end)`` cut after every match of any of ``patterns``."""
    cuts = {match.end() for pattern in patterns for match in pattern.finditer(text, start, end)}
    edges = [start, *sorted(cut for cut in cuts if start < cut < end), end]
    return list(pairwise(edges))


def hard_split(start: int, end: int, fits: Fits) -> list[Span]:
    """``[start, end)`` cut greedily into the longest spans that fit (at least one character each)."""
    out: list[Span] = []
    while start < end:
        stop = longest_fit(start, end, fits)
        out.append((start, stop))
        start = stop
    return out


def longest_fit(start: int, end: int, fits: Fits) -> int:
    """The largest ``stop`` in ``(start, end]`` with ``fits(start, stop)`` (at least ``start + 1``).

    Gallops, then bisects, so the cost follows the piece's length, not the span's.
    """
    good, width = start + 1, 1
    while good < end:
        probe = min(end, start + 2 * width)
        if not fits(start, probe):
            bad = probe
            break
        good, width = probe, 2 * width
    else:
        return good
    while bad - good > 1:
        middle = (good + bad) // 2
        if fits(start, middle):
            good = middle
        else:
            bad = middle
    return good


def decompose(
    text: str, span: Span, fits: Fits, ladder: Sequence[re.Pattern[str]], level: int = 0
) -> list[Span]:
    """Units tiling ``span`` that each fit: cut on ``ladder[level:]``, then between characters."""
    start, end = span
    if start >= end:
        return []
    if fits(start, end):
        return [span]
    if level == len(ladder):
        return hard_split(start, end, fits)
    out: list[Span] = []
    for piece in split_at(text, start, end, (ladder[level],)):
        out.extend(decompose(text, piece, fits, ladder, level + 1))
    return out


def table_units(text: str, table: Table, fits: Fits) -> list[Span]:
    """The whole table when it fits, else its header block and one unit per row."""
    if fits(table.start, table.end):
        return [(table.start, table.end)]
    edges = sorted({table.start, *table.row_starts, table.end})
    out: list[Span] = []
    for piece in pairwise(edges):
        out.extend(decompose(text, piece, fits, ROW_LADDER))
    return out


def structured_units(text: str, layout: Layout, span: Span, fits: Fits, text_units: TextUnits) -> list[Span]:
    """Units of ``span``: its tables row by row, the text between them by ``text_units``."""
    start, end = span
    out: list[Span] = []
    for table in layout.tables_within(start, end):
        out.extend(text_units(start, table.start))
        out.extend(table_units(text, table, fits))
        start = table.end
    out.extend(text_units(start, end))
    return out
