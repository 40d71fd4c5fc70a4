"""What every chunker needs to know about one document while it chunks it.

A :class:`DocContext` tokenizes the text once, parses its Markdown layout
lazily, and caches breadcrumbs and their token costs for this document only
(a long-running service chunks many documents with one chunker).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from ragd.chunk.cut_points import CutPoints
from ragd.chunk.structure import Layout, parse_layout
from ragd.chunk.token_index import TokenIndex, is_clean_cut
from ragd.chunk.window import SPECIAL_TOKENS, Headers, ModelWindow
from ragd.types import Chunk

#: Characters ``[start, end)`` of the document.
Span = tuple[int, int]
#: ``(start, end) -> bool``: may ``text[start:end]`` be one chunk?
Fits = Callable[[int, int], bool]
#: The breadcrumb of a chunk starting at a character offset.
HeadersAt = Callable[[int], Headers]


@dataclass(frozen=True, slots=True)
class Draft:
    """A chunk before trimming and numbering: characters ``[start, end)`` and its breadcrumb."""

    start: int
    end: int
    headers: Headers


class DocContext:
    """One document's text, tokens and layout, plus per-document caches."""

    def __init__(self, text: str, window: ModelWindow) -> None:
        self.text = text
        self.window = window
        arrays = getattr(window.counter, "token_arrays", None)  # compact spans, when the counter has them
        self.tokens = TokenIndex(text, arrays(text) if arrays else window.counter.token_spans(text))
        self._fitted: dict[Headers, Headers] = {}
        self._costs: dict[Headers, int] = {}

    @cached_property
    def layout(self) -> Layout:
        return parse_layout(self.text)

    @cached_property
    def cuts(self) -> CutPoints:
        return CutPoints.build(self.tokens, self.layout.tables)

    def fit_headers(self, headers: Headers) -> Headers:
        """``headers`` shortened to fit half the window (see :meth:`ModelWindow.shorten`)."""
        fitted = self._fitted.get(headers)
        if fitted is None:
            fitted = self._fitted[headers] = self.window.shorten(headers)
        return fitted

    def headers_at(self, base: Headers, offset: int) -> Headers:
        """``base`` plus the table header row when ``offset`` lies inside a table body."""
        header_row = self.layout.header_row_at(offset)
        return self.fit_headers((*base, header_row) if header_row else base)

    def table_headers_at(self, offset: int) -> Headers:
        return self.headers_at((), offset)

    def breadcrumb_cost(self, headers: Headers) -> int:
        """Tokens of the breadcrumb line for ``headers`` (cached for this document)."""
        cost = self._costs.get(headers)
        if cost is None:
            cost = self._costs[headers] = self.window.breadcrumb_tokens(headers)
        return cost

    def text_budget(self, headers: Headers, size: int) -> int:
        """Tokens of chunk text allowed under ``headers``, at most ``size``."""
        return self.window.text_budget(self.breadcrumb_cost(headers), size)

    def token_fits(self, size: int, headers_at: HeadersAt) -> Fits:
        """Fits when the span's tokens stay within ``size`` and the window next to its breadcrumb."""

        def fits(start: int, end: int) -> bool:
            return self.tokens.count(start, end) <= self.text_budget(headers_at(start), size)

        return fits

    def char_fits(self, size: int, headers_at: HeadersAt) -> Fits:
        """Fits when the span has at most ``size`` characters and fits the model window."""
        window_fits = self.token_fits(self.window.text_tokens, headers_at)
        return lambda start, end: end - start <= size and window_fits(start, end)

    def overflow(self, start: int, end: int, headers: Headers) -> int:
        """Tokens by which ``text[start:end]`` under ``headers`` exceeds the window (<= 0: it fits)."""
        window = self.window
        estimate = window.prefix_tokens + self.breadcrumb_cost(headers) + self.tokens.count(start, end)
        estimate += SPECIAL_TOKENS
        if window.word_by_word and self.tokens.exact and is_clean_cut(self.text, start, end):
            return estimate - window.max_tokens
        chunk = Chunk(text=self.text[start:end], split_id=0, start=start, end=end, headers=headers)
        used = window.embedded_tokens(chunk)
        if not self.tokens.exact:  # a run the tokenizer calls one [UNK] still counts by its length
            used = max(used, estimate)
        return used - window.max_tokens
