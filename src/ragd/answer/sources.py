"""The numbered sources of one answer: what ``[n]`` means, growing as tools find more.

The context's sources are 1..n; ``search_documents`` results that are new get the next numbers,
ones already numbered keep theirs, so a number never changes meaning within an answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from ragd.answer.context import citation
from ragd.types import Citation, Hit


class SourceBook:
    def __init__(self, citations: Iterable[Citation] = ()) -> None:
        self._by_id: dict[str, Citation] = {}
        for item in citations:
            self._by_id.setdefault(item.chunk_id, item)

    @property
    def citations(self) -> tuple[Citation, ...]:
        return tuple(sorted(self._by_id.values(), key=lambda c: c.number))

    @property
    def numbers(self) -> set[int]:
        return {c.number for c in self._by_id.values()}

    def preview(self, hits: Iterable[Hit]) -> list[Citation]:
        """``hits`` as citations: known chunks with their numbers, new ones numbered next (not kept yet)."""
        following = max(self.numbers, default=0) + 1
        out: list[Citation] = []
        for hit in hits:
            known = self._by_id.get(hit.id)
            if known is not None:
                out.append(replace(citation(hit, known.number), text=known.text))
            elif all(c.chunk_id != hit.id for c in out):
                out.append(citation(hit, following))
                following += 1
        return out

    def keep(self, citations: Sequence[Citation]) -> None:
        for item in citations:
            self._by_id.setdefault(item.chunk_id, item)

    def find_file(self, reference: str) -> str | None:
        """The file id of a source whose path, name or file id is exactly ``reference``."""
        for item in self.citations:
            if reference in (item.file_id, item.source, item.name):
                return item.file_id or None
        return None
