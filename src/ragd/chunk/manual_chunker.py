"""The ``manual`` strategy: the author marks chunk boundaries with lines that are exactly ``---``.

The marker lines themselves belong to no chunk.  A marked piece larger than
the model window is still cut by tokens (rows of a table kept whole), since
the embedder would otherwise drop its end silently.
"""

from __future__ import annotations

import re

from ragd.chunk.assemble import assemble
from ragd.chunk.context import DocContext, Draft
from ragd.chunk.window import ModelWindow
from ragd.types import Chunk, Document

ALGORITHM_VERSION = 1

SEPARATOR = re.compile(r"^---\r?$", re.MULTILINE)


def marked_spans(text: str) -> list[tuple[int, int]]:
    """The spans between ``---`` marker lines (marker lines excluded)."""
    spans, start = [], 0
    for match in SEPARATOR.finditer(text):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    return spans


class ManualChunker:
    """Author-marked chunks."""

    def __init__(self, window: ModelWindow) -> None:
        self._window = window
        self.version = f"manual:v{ALGORITHM_VERSION}:{window.describe()}"

    def chunk(self, document: Document) -> list[Chunk]:
        ctx = DocContext(document.text, self._window)
        drafts = [Draft(start, end, ()) for start, end in marked_spans(document.text)]
        return assemble(document, ctx, drafts, ctx.table_headers_at)
