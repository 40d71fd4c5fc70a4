"""Where a document's tokens are, so any span's token count is a bisection away.

The document is tokenized once (``TokenCounter.token_spans``); every chunker
then measures spans with :meth:`TokenIndex.count`, the number of tokens that
*start* inside the span.  That equals the tokenizer's own count of the span's
text whenever the span is cut at white space and the tokenizer works word by
word (see :mod:`ragd.chunk.window`); elsewhere it is an estimate the final
window check corrects.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from functools import cached_property

import numpy as np
import numpy.typing as npt

#: White space every tokenizer we know treats as a word break.  Other Unicode
#: spaces and control characters are not trusted: some tokenizers delete them
#: and glue the neighbouring words together.
BREAK_CHARS = " \t\n\r"
_BREAK_CODES = np.array([ord(c) for c in BREAK_CHARS], dtype=np.uint32)


def is_clean_cut(text: str, start: int, end: int) -> bool:
    """True when ``text[start:end]`` begins and ends next to a word break (or the text's ends)."""
    clean_start = start == 0 or text[start - 1] in BREAK_CHARS
    return clean_start and (end >= len(text) or text[end] in BREAK_CHARS)


class TokenIndex:
    """Token start offsets of one document, in order."""

    def __init__(self, text: str, spans: Sequence[tuple[int, int]]) -> None:
        self.starts: list[int] = [start for start, _ in spans]
        starts = np.array(self.starts, dtype=np.int64)
        if starts.size > 1 and bool(np.any(starts[1:] < starts[:-1])):
            starts.sort()
            self.starts = starts.tolist()
        self._text = text
        self._starts_np = starts

    def __len__(self) -> int:
        return len(self.starts)

    def count(self, start: int, end: int) -> int:
        """Tokens whose first character lies in ``[start, end)``."""
        return bisect_left(self.starts, end) - bisect_left(self.starts, start)

    def first_at(self, offset: int) -> int:
        """Index of the first token starting at or after character ``offset``."""
        return bisect_left(self.starts, offset)

    @cached_property
    def word_starts(self) -> npt.NDArray[np.bool_]:
        """Per token: does it start a word (text start, or a word break just before it)?"""
        if not self.starts:
            return np.zeros(0, dtype=np.bool_)
        codes = np.frombuffer(self._text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        break_before = np.ones(len(self._text) + 1, dtype=np.bool_)
        break_before[1:] = np.isin(codes, _BREAK_CODES)
        return break_before[np.clip(self._starts_np, 0, len(self._text))]
