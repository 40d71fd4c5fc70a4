"""Building a :class:`Document` with the extraction port's invariants enforced in one place.

Every extractor returns through :func:`make_document`: the text is never empty or
whitespace-only (that is an :class:`EmptyDocument`), and ``meta`` only carries
values that say something (no ``None``, empty strings or empty lists).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragd.errors import EmptyDocument
from ragd.types import Document, PageSpan


def make_document(
    text: str,
    *,
    extractor: str,
    source: str,
    mime_type: str | None,
    pages: Sequence[PageSpan] = (),
    meta: Mapping[str, Any] | None = None,
) -> Document:
    """A Document, or :class:`EmptyDocument` when ``text`` holds nothing but whitespace."""
    if not text.strip():
        raise EmptyDocument(
            f"{source!r} contains no text",
            hint="nothing to index: the file is blank or holds only whitespace",
        )
    return Document(
        text=text,
        extractor=extractor,
        mime_type=mime_type,
        pages=tuple(pages),
        meta=compact_meta(meta or {}),
    )


def normalise_newlines(text: str) -> str:
    """``\\r\\n`` and lone ``\\r`` become ``\\n``."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def compact_meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    """Only the entries with a value worth storing: drops None, blank strings, empty lists."""
    return {key: clean for key, value in meta.items() if (clean := _clean(value)) is not None}


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, (list, tuple)):
        items = [item for item in map(_clean, value) if item is not None]
        return items or None
    return value
