"""The ``markdown`` strategy: chunks follow the heading hierarchy.

Every heading opens a section; a chunk's ``headers`` is the breadcrumb of
headings above it (the embedder prepends it).  A chunk that starts with its
section's heading line leaves that heading out of the breadcrumb, since its
text already says it; later pieces of a long section carry it.

Sections are measured in the model's tokens:

* a *tiny* section (under a quarter of ``size``) absorbs the sections after it
  while the group still fits and they sit under the same parent headings;
* a section over the budget is cut on paragraphs, lines, sentences, words
  (tables between rows) and packed back up to ``size`` tokens, with
  ``overlap`` tokens of whole pieces repeated between neighbours.
"""

from __future__ import annotations

from bisect import bisect_right

from ragd.chunk.assemble import assemble
from ragd.chunk.context import DocContext, Draft, Fits, Span
from ragd.chunk.packing import pack_units
from ragd.chunk.structure import Section
from ragd.chunk.units import RECURSIVE_LADDER, decompose, structured_units
from ragd.chunk.window import Headers, ModelWindow
from ragd.types import Chunk, Document

ALGORITHM_VERSION = 1


class _Sections:
    """A document's sections and the breadcrumb of any offset in it."""

    def __init__(self, ctx: DocContext) -> None:
        self.ctx = ctx
        self.items = ctx.layout.sections(len(ctx.text))
        self._starts = [section.start for section in self.items]

    def headers_at(self, offset: int) -> Headers:
        if not self.items:
            return ()
        section = self.items[max(0, bisect_right(self._starts, offset) - 1)]
        base = section.parents if offset == section.start else section.path
        return self.ctx.headers_at(base, offset)


class MarkdownChunker:
    """Heading-aware chunks of at most ``size`` tokens."""

    def __init__(self, window: ModelWindow, *, size: int, overlap: int) -> None:
        self._window = window
        self.size = size
        self.overlap = overlap
        self.tiny = max(1, size // 4)
        self.version = f"markdown:v{ALGORITHM_VERSION}:size={size}:overlap={overlap}:{window.describe()}"

    def chunk(self, document: Document) -> list[Chunk]:
        ctx = DocContext(document.text, self._window)
        sections = _Sections(ctx)
        fits = ctx.token_fits(self.size, sections.headers_at)
        drafts: list[Draft] = []
        for group in self._groups(ctx, sections.items, fits):
            drafts.extend(self._split(ctx, group, fits, sections))
        return assemble(document, ctx, drafts, sections.headers_at)

    def _groups(self, ctx: DocContext, sections: list[Section], fits: Fits) -> list[list[Section]]:
        """Consecutive sections merged while the group is tiny, fits, and shares the first one's parents."""
        groups: list[list[Section]] = []
        for section in sections:
            if groups and self._joins(ctx, groups[-1], section, fits):
                groups[-1].append(section)
            else:
                groups.append([section])
        return groups

    def _joins(self, ctx: DocContext, group: list[Section], section: Section, fits: Fits) -> bool:
        first = group[0]
        parents = first.parents
        return (
            section.path[: len(parents)] == parents
            and ctx.tokens.count(first.start, group[-1].end) < self.tiny
            and fits(first.start, section.end)
        )

    def _split(self, ctx: DocContext, group: list[Section], fits: Fits, sections: _Sections) -> list[Draft]:
        start, end = group[0].start, group[-1].end
        if fits(start, end):
            return [Draft(start, end, sections.headers_at(start))]
        text = ctx.text

        def paragraphs(low: int, high: int) -> list[Span]:
            return decompose(text, (low, high), fits, RECURSIVE_LADDER)

        units = structured_units(text, ctx.layout, (start, end), fits, paragraphs)
        return pack_units(
            units, fits=fits, overlap=self.overlap, measure=ctx.tokens.count, headers_at=sections.headers_at
        )
