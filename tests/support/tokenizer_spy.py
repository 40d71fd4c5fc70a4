"""A stand-in for a ``tokenizers.Tokenizer`` that records how much text it is given (the
window-cut tests: a long input must be cut before any tokenizer reads it)."""

from __future__ import annotations

from typing import Any


class Spy:
    """Wraps a tokenizer; records the length of every text it is given."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.read: list[int] = []

    def encode(self, text: str, *args: Any, **kwargs: Any) -> Any:
        self.read.append(len(text))
        return self.inner.encode(text, *args, **kwargs)

    def encode_batch(self, texts: list[str], *args: Any, **kwargs: Any) -> Any:
        self.read.extend(len(text) for text in texts)
        return self.inner.encode_batch(texts, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
