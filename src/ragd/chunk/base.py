"""The chunking port: a :class:`Document` in, ordered :class:`Chunk` records out."""

from __future__ import annotations

from typing import Protocol

from ragd.types import Chunk, Document


class TokenCounter(Protocol):
    """The embedding model's own tokenizer, as the chunkers need it."""

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """Character span ``[start, end)`` of every token of ``text`` (no special tokens)."""
        ...

    def count(self, text: str) -> int:
        """Number of tokens in ``text`` (no special tokens)."""
        ...


class Chunker(Protocol):
    """Splits a document.  Chunks are non-empty, in order, numbered 0.. by ``split_id``."""

    version: str

    def chunk(self, document: Document) -> list[Chunk]: ...
