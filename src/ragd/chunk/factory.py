"""Builds the configured chunker, sized to the embedding model's window.

``version`` strings name the strategy, its effective (clamped) parameters,
the window and an algorithm version; they go into the index manifest, so any
change that moves chunk boundaries changes the version and forces a re-index.
See :mod:`ragd.chunk.window` for the clamping rule.
"""

from __future__ import annotations

import logging

from ragd.chunk.approx_counter import ApproxTokenCounter
from ragd.chunk.base import Chunker, TokenCounter
from ragd.chunk.manual_chunker import ManualChunker
from ragd.chunk.markdown_chunker import MarkdownChunker
from ragd.chunk.recursive_chunker import RecursiveChunker
from ragd.chunk.sentence_chunker import SentenceChunker
from ragd.chunk.token_chunker import TokenChunker
from ragd.chunk.window import ModelWindow, clamp_token_sizes
from ragd.settings import ChunkSettings
from ragd.types import ChunkStrategy

logger = logging.getLogger(__name__)


def build_chunker(
    settings: ChunkSettings, *, counter: TokenCounter | None, max_tokens: int, document_prefix: str
) -> Chunker:
    """The chunker for ``settings.strategy``.

    ``counter`` is the embedding model's tokenizer (None for a remote model:
    tokens are then estimated conservatively); ``max_tokens`` its window
    including special tokens; ``document_prefix`` what the embedder puts
    before every chunk.  Raises :class:`ragd.errors.ConfigurationError` when
    the window leaves no room for text.
    """
    if counter is None:
        logger.info("no local tokenizer: chunk sizes use a conservative token estimate")
    window = ModelWindow(counter or ApproxTokenCounter(), max_tokens, document_prefix)
    strategy = settings.strategy
    if strategy is ChunkStrategy.MANUAL:
        return ManualChunker(window)
    if strategy in (ChunkStrategy.TOKEN, ChunkStrategy.MARKDOWN):
        size, overlap = clamp_token_sizes(settings.token_size, settings.token_overlap, window.text_tokens)
        if size < settings.token_size:
            logger.info(
                "chunk size clamped from %d to %d tokens (overlap %d) to fit the model window",
                settings.token_size,
                size,
                overlap,
            )
        token_type = TokenChunker if strategy is ChunkStrategy.TOKEN else MarkdownChunker
        return token_type(window, size=size, overlap=overlap)
    char_overlap = min(settings.char_overlap, settings.char_size // 2)
    char_type = SentenceChunker if strategy is ChunkStrategy.SENTENCE else RecursiveChunker
    return char_type(window, size=settings.char_size, overlap=char_overlap)
