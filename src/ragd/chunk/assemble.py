"""From drafts to numbered :class:`Chunk` records every strategy can vouch for.

Each draft is trimmed of surrounding white space (so ``text`` is still
``document.text[start:end]``), dropped when nothing is left or when the
previous chunk already holds it, checked against the model window (and cut
by tokens when it overflows), then numbered from 0 and given its page.  A
draft that would start before a piece cut off its predecessor for the window
resumes where that piece ends.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

from ragd.chunk.context import DocContext, Draft, HeadersAt
from ragd.chunk.packing import pack_tokens
from ragd.chunk.units import hard_split
from ragd.chunk.window import Headers
from ragd.types import Chunk, Document

logger = logging.getLogger(__name__)

MAX_TOKEN_REFITS = 4


def trim(text: str, draft: Draft) -> Draft | None:
    """``draft`` without leading and trailing white space, or None when that is all it holds."""
    start, end = draft.start, draft.end
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return Draft(start, end, draft.headers) if start < end else None


def fit_window(ctx: DocContext, draft: Draft, headers_at: HeadersAt, depth: int = 0) -> Iterator[Draft]:
    """``draft`` (trimmed) if it fits the model window, else its pieces, each fitting.

    Pieces are cut by the document's tokens; where those mislead (a span cut
    inside a word the tokenizer treats as one unknown token, say), by
    characters, each piece counted for real.
    """
    over = ctx.overflow(draft.start, draft.end, draft.headers)
    if over <= 0:
        yield draft
        return
    if draft.end - draft.start <= 1:
        logger.warning("a one-character chunk exceeds the model window by %d tokens", over)
        yield draft
        return

    def piece_headers(offset: int) -> Headers:
        return draft.headers if offset == draft.start else headers_at(offset)

    estimate = ctx.tokens.count(draft.start, draft.end)
    if estimate >= 2 and depth < MAX_TOKEN_REFITS:
        budget = max(1, min(estimate - 1, estimate - over))
        pieces = pack_tokens(ctx, draft.start, draft.end, size=budget, overlap=0, headers_at=piece_headers)
    else:
        pieces = _split_characters(ctx, draft, piece_headers)
    for piece in pieces:
        trimmed = trim(ctx.text, piece)
        if trimmed is not None:
            yield from fit_window(ctx, trimmed, headers_at, depth + 1)


def _split_characters(ctx: DocContext, draft: Draft, headers_at: HeadersAt) -> list[Draft]:
    """``draft`` cut into the longest pieces that fit the window, counted with the tokenizer."""

    def fits(start: int, end: int) -> bool:
        return ctx.overflow(start, end, headers_at(start)) <= 0

    return [Draft(start, end, headers_at(start)) for start, end in hard_split(draft.start, draft.end, fits)]


def assemble(
    document: Document, ctx: DocContext, drafts: Iterable[Draft], headers_at: HeadersAt
) -> list[Chunk]:
    """Trimmed, window-checked, numbered chunks for ``drafts`` (in document order)."""
    text = document.text
    chunks: list[Chunk] = []
    for draft in drafts:
        trimmed = trim(text, _after(chunks[-1], draft, headers_at) if chunks else draft)
        if trimmed is None:
            continue
        for piece in fit_window(ctx, trimmed, headers_at):
            if chunks and piece.end <= chunks[-1].end:
                continue
            chunks.append(
                Chunk(
                    text=text[piece.start : piece.end],
                    split_id=len(chunks),
                    start=piece.start,
                    end=piece.end,
                    headers=piece.headers,
                    page=document.page_at(piece.start),
                )
            )
    return chunks


def _after(last: Chunk, draft: Draft, headers_at: HeadersAt) -> Draft:
    """``draft``, or its part after ``last`` when ``last`` (a piece cut for the window) starts later.

    Keeps starts in order and the overlap with ``last`` within the configured one.
    """
    if draft.start >= last.start:
        return draft
    return Draft(last.end, draft.end, headers_at(last.end))
