"""Numbered context for a model: hits become :class:`Citation` records, cut to a token budget.

Pure functions.  The budget counts the tokens of the sources' text (the tokenizer is the dense
embedder's when it is local, else an estimate).  Sources are kept in rank order while they fit
and cut whole past that; the first is always kept — cut to the budget when it alone exceeds it —
so a tight budget never leaves the model with no context.  Each source is rendered as::

    <document index="1" source="alpha.md" path="docs/alpha.md" chunk="0" score="0.853" file_id="a">
    …text…
    </document>

with ``page`` (1-based, for people) and ``section`` (the heading breadcrumb) when known; or, in
ragproxy's *sources-list* style (:class:`~ragd.types.PromptStyle`), as::

    [1] alpha.md
    docs/alpha.md
    …text…

Each source's text may be cut to a number of characters first (:func:`cap_chars`).
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from ragd.answer.links import source_title
from ragd.chunk.base import TokenCounter
from ragd.types import ChunkMeta, Citation, Hit

ELLIPSIS = " …"


def citation(hit: Hit, number: int) -> Citation:
    """``hit`` as source ``[number]``."""
    meta = ChunkMeta.parse(hit.meta)
    return Citation(
        number=number,
        chunk_id=hit.id,
        file_id=meta.file_id,
        name=meta.label,
        source=meta.source or meta.label,
        text=hit.content,
        score=float(hit.score),
        split_id=meta.split_id,
        page=meta.page,
        headers=meta.headers,
    )


def number_hits(hits: Iterable[Hit], start: int = 1) -> list[Citation]:
    return [citation(hit, start + i) for i, hit in enumerate(hits)]


def truncate_tokens(text: str, counter: TokenCounter, limit: int) -> str:
    """``text`` cut after its first ``limit`` tokens (at least one), marked with an ellipsis."""
    spans = counter.token_spans(text)
    if len(spans) <= limit:
        return text
    return text[: spans[max(limit, 1) - 1][1]].rstrip() + ELLIPSIS


def fit_budget(citations: Sequence[Citation], counter: TokenCounter, budget: int) -> list[Citation]:
    """The leading sources whose text fits ``budget`` tokens together; never empty if any were given."""
    kept: list[Citation] = []
    used = 0
    for item in citations:
        tokens = counter.count(item.text)
        if used + tokens > budget:
            if not kept:
                kept.append(replace(item, text=truncate_tokens(item.text, counter, budget)))
            break
        kept.append(item)
        used += tokens
    return kept


def render_source(item: Citation) -> str:
    attrs: dict[str, Any] = {
        "index": item.number,
        "source": item.name,
        "path": item.source,
        "chunk": item.split_id,
        "score": f"{item.score:.3f}",
        "file_id": item.file_id,
        "page": None if item.page is None else item.page + 1,
        "section": " > ".join(item.headers) or None,
    }
    rendered = " ".join(f'{k}="{html.escape(str(v), quote=True)}"' for k, v in attrs.items() if v is not None)
    return f"<document {rendered}>\n{item.text}\n</document>"


def render_context(citations: Iterable[Citation]) -> str:
    return "\n".join(render_source(c) for c in citations)


def cap_chars(citations: Sequence[Citation], limit: int | None) -> list[Citation]:
    """Each source's text cut after ``limit`` characters (before white space when there is some in
    its last fifth), marked with an ellipsis; ``None`` keeps them whole."""
    if limit is None:
        return list(citations)
    return [
        item if len(item.text) <= limit else replace(item, text=_cut(item.text, limit)) for item in citations
    ]


def _cut(text: str, limit: int) -> str:
    head = text[:limit]
    space = head.rfind(" ", limit - limit // 5)
    return (head[:space] if space > 0 else head).rstrip() + ELLIPSIS


def render_sources_list(citations: Iterable[Citation]) -> str:
    """ragproxy's style: ``[n] title``, the URL (a web page's) or path (a file's) when it says more
    than the title, then the text; one blank line between sources."""
    return "\n\n".join(_listed(c) for c in citations)


def _listed(item: Citation) -> str:
    title = source_title(item)
    where = item.source if item.source and item.source != item.name else ""
    head = f"[{item.number}] {title}" + (f"\n{where}" if where else "")
    return f"{head}\n{item.text}"
