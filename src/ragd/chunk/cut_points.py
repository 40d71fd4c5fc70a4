"""Where the token packer may end one chunk and start the next.

Preferred cuts are word starts, except inside a table body where only the
start of a row is allowed: a row is never split while it fits.  Fallback cuts
(every word start) are used only when nothing preferred fits in the window,
that is for a single row or word larger than the window; after them comes a
cut between any two tokens that start at different characters.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragd.chunk.structure import Table
from ragd.chunk.token_index import TokenIndex


def last_between(cuts: list[int], low: int, high: int) -> int | None:
    """The largest cut in ``(low, high]``, if any."""
    i = bisect_right(cuts, high) - 1
    return cuts[i] if i >= 0 and cuts[i] > low else None


def first_between(cuts: list[int], low: int, high: int) -> int | None:
    """The smallest cut in ``[low, high)``, if any."""
    i = bisect_left(cuts, low)
    return cuts[i] if i < len(cuts) and cuts[i] < high else None


@dataclass(frozen=True, slots=True)
class CutPoints:
    """Token indices ``i`` where a chunk may start (the previous one ends before token ``i``)."""

    preferred: list[int]
    fallback: list[int]

    @classmethod
    def build(cls, tokens: TokenIndex, tables: Sequence[Table]) -> CutPoints:
        words = tokens.word_starts
        preferred = words.copy()
        for table in tables:
            first, high = tokens.first_at(table.start), tokens.first_at(table.end)
            preferred[first + 1 : high] = False
            for i in (first, high, *(tokens.first_at(row) for row in table.row_starts)):
                if i < len(preferred):
                    preferred[i] = True
        return cls(np.flatnonzero(preferred).tolist(), np.flatnonzero(words).tolist())

    def end_before(self, tokens: TokenIndex, current: int, limit: int) -> int:
        """Where a chunk starting at token ``current`` ends when it may hold tokens up to ``limit``."""
        cut = last_between(self.preferred, current, limit)
        if cut is None:
            cut = last_between(self.fallback, current, limit)
        if cut is None:
            cut = tokens.cut_before(limit)
        return cut if cut > current else tokens.next_start(current)
