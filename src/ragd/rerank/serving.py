"""ragd's configured rerankers, served to other components (``POST /v1/rerank``).

The same rerankers a search runs (``default``: RAGD_RERANK__*, more in RAGD_RERANKERS), found by
their ragd name or the model they are configured with; scores are theirs (in [0, 1]), best first.

A request past its limits (:class:`~ragd.model_inputs.InputLimits`, and :data:`MAX_DOCUMENTS`) is
413 ``INPUT_TOO_LARGE``; long texts are cut to the window before they are tokenized.  Documents are
scored :data:`SLICE` at a time, each slice one turn of the caller's ``turn`` (the model endpoints'
fair turns), so another key's request, or a search's rerank, waits for one slice, not for all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass

from ragd.errors import InputTooLarge, InvalidRequest, NotFound
from ragd.model_inputs import InputLimits
from ragd.rerank.base import Reranker

#: documents in one request at most (Cohere's own limit)
MAX_DOCUMENTS = 1000
#: documents scored in one turn
SLICE = 32
DEFAULT_RERANKER = "default"
_ALIASES = ("ragd",)


@dataclass(frozen=True, slots=True)
class Ranked:
    """One document's place: its index in the request and its relevance score."""

    index: int
    score: float


class ServedRerankers:
    """The configured rerankers, found by name (``default``, a RAGD_RERANKERS key) or model."""

    def __init__(self, rerankers: Mapping[str, Reranker], models: Mapping[str, str]) -> None:
        """``models``: each reranker's configured ``model`` setting by name (another alias)."""
        self._rerankers = dict(rerankers)
        self._by_alias: dict[str, str] = {}
        ordered = sorted(self._rerankers, key=lambda name: name != DEFAULT_RERANKER)
        for name in ordered:  # the default first: its names win a clash
            aliases = [name, *(_ALIASES if name == DEFAULT_RERANKER else ()), self._rerankers[name].name]
            aliases.append(models.get(name, ""))
            for alias in aliases:
                if alias:
                    self._by_alias.setdefault(alias, name)

    def resolve(self, model: str | None) -> tuple[str, Reranker]:
        """The reranker a request names (None or empty: the default), with its ragd name."""
        if not self._rerankers:
            raise NotFound(
                "no reranker is configured",
                hint="set RAGD_RERANK__PROVIDER=remote (and RAGD_RERANK__BASE_URL) or local "
                "(and RAGD_RERANK__PATH)",
            )
        name = self._by_alias.get(model.strip()) if model else DEFAULT_RERANKER
        if name is None or name not in self._rerankers:
            served = ", ".join(self._rerankers)
            raise NotFound(
                f"unknown reranker {(model or DEFAULT_RERANKER)[:64]!r}; ragd serves: {served}",
                hint="name one of them (or the model it is configured with)",
            )
        return name, self._rerankers[name]


async def rank(
    reranker: Reranker,
    query: str,
    documents: Sequence[str],
    *,
    limits: InputLimits | None = None,
    turn: Callable[[], AbstractAsyncContextManager[None]] | None = None,
) -> list[Ranked]:
    """Every document scored against ``query``, best first (ties keep the documents' order)."""
    check_texts(query, documents, limits or InputLimits())
    scores: list[float] = []
    for start in range(0, len(documents), SLICE):
        async with (turn or nullcontext)():
            scores.extend(await reranker.rerank(query, documents[start : start + SLICE]))
    ranked = [Ranked(index=i, score=float(s)) for i, s in enumerate(scores)]
    return sorted(ranked, key=lambda r: (-r.score, r.index))


def check_texts(query: str, documents: Sequence[str], limits: InputLimits) -> None:
    if not query.strip():
        raise InvalidRequest("the query is empty")
    if not documents:
        raise InvalidRequest("there are no documents to rerank")
    most = min(MAX_DOCUMENTS, limits.inputs)
    if len(documents) > most:
        raise InputTooLarge(
            f"{len(documents):,} documents in one request; at most {most:,}",
            hint="split them into batches (RAGD_SERVER__MAX_EMBED_INPUTS)",
        )
    limits.check_text("the query", query)
    for index, document in enumerate(documents):
        limits.check_text(f"document {index}", document)
    limits.check_total(len(query) + sum(len(document) for document in documents), "the query and documents")
