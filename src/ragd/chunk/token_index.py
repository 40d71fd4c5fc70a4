"""Where a document's tokens are, so any span's token count is a bisection away.

The document is tokenized once (``TokenCounter.token_spans``); every chunker
then measures spans with :meth:`TokenIndex.count`, the number of tokens that
*start* inside the span.  That equals the tokenizer's own count of the span's
text whenever the span is cut at white space and the tokenizer works word by
word (see :mod:`ragd.chunk.window`); elsewhere it is an estimate the final
window check corrects.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from functools import cached_property

import numpy as np
import numpy.typing as npt

#: White space every tokenizer we know treats as a word break.  Other Unicode
#: spaces and control characters are not trusted: some tokenizers delete them
#: and glue the neighbouring words together.
BREAK_CHARS = " \t\n\r"
_BREAK_CODES = np.array([ord(c) for c in BREAK_CHARS], dtype=np.uint32)
#: A token spanning more characters than this is a whole run the tokenizer gave up on (WordPiece
#: turns a "word" of over 100 characters into one [UNK]): text without spaces, base64, a minified
#: line.  It is counted as pseudo-tokens of ``RUN_PIECE`` characters, so chunk sizes stay bounded
#: and such text is cut into chunks like any other instead of landing in one giant chunk.
LONG_TOKEN_CHARS = 100
RUN_PIECE = 4


def is_clean_cut(text: str, start: int, end: int) -> bool:
    """True when ``text[start:end]`` begins and ends next to a word break (or the text's ends)."""
    clean_start = start == 0 or text[start - 1] in BREAK_CHARS
    return clean_start and (end >= len(text) or text[end] in BREAK_CHARS)


def split_long_runs(
    starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Token spans with every token longer than :data:`LONG_TOKEN_CHARS` cut into :data:`RUN_PIECE`
    pieces.  Ordinary text has no such token and comes back as it is (the same arrays)."""
    lengths = ends - starts
    long = lengths > LONG_TOKEN_CHARS
    if not bool(long.any()):
        return starts, ends
    pieces = np.where(long, (lengths + RUN_PIECE - 1) // RUN_PIECE, 1)
    owner = np.repeat(np.arange(len(starts)), pieces)
    within = np.arange(len(owner)) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    cut = long[owner]
    new_starts = starts[owner] + np.where(cut, within * RUN_PIECE, 0)
    new_ends = np.where(cut, np.minimum(new_starts + RUN_PIECE, ends[owner]), ends[owner])
    return new_starts, new_ends


class TokenIndex:
    """Token start offsets of one document, in order."""

    def __init__(self, text: str, spans: Sequence[tuple[int, int]] | npt.NDArray[np.int64]) -> None:
        pairs = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
        starts, ends = split_long_runs(pairs[:, 0], pairs[:, 1])
        #: counts are the tokenizer's own (no run was cut into pseudo-tokens)
        self.exact = len(starts) == len(pairs)
        if starts.size > 1 and bool(np.any(starts[1:] < starts[:-1])):
            order = np.argsort(starts, kind="stable")
            starts, ends = starts[order], ends[order]
        self.starts: list[int] = starts.tolist()
        self._text = text
        self._starts_np = starts
        self._ends_np = ends

    def __len__(self) -> int:
        return len(self.starts)

    def count(self, start: int, end: int) -> int:
        """Tokens whose first character lies in ``[start, end)``."""
        return bisect_left(self.starts, end) - bisect_left(self.starts, start)

    def first_at(self, offset: int) -> int:
        """Index of the first token starting at or after character ``offset``."""
        return bisect_left(self.starts, offset)

    def cut_before(self, i: int) -> int:
        """The first token sharing token ``i``'s start: a chunk can only end before that one.

        (One character may yield several tokens, e.g. a Hangul syllable split into jamo.)
        """
        return self.first_at(self.starts[i])

    def next_start(self, i: int) -> int:
        """The first token starting after token ``i``'s first character."""
        return bisect_right(self.starts, self.starts[i])

    @cached_property
    def word_starts(self) -> npt.NDArray[np.bool_]:
        """Per token: does a word break lie between it and the token before (and is its start new)?

        Characters the tokenizer drops (control characters, variation
        selectors) may sit between the break and the token.
        """
        if not self.starts:
            return np.zeros(0, dtype=np.bool_)
        length = len(self._text)
        codes = np.frombuffer(self._text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        breaks_before = np.zeros(length + 1, dtype=np.int64)
        np.cumsum(np.isin(codes, _BREAK_CODES), out=breaks_before[1:])
        starts = np.clip(self._starts_np, 0, length)
        previous_ends = np.zeros_like(starts)
        previous_ends[1:] = np.minimum(np.clip(self._ends_np[:-1], 0, length), starts[1:])
        words = breaks_before[starts] > breaks_before[previous_ends]
        words[0] = True
        words[1:] &= starts[1:] != starts[:-1]
        return words
