"""ragd's own dense models, served to other components (``POST /v1/embeddings``, ``POST /embed``).

The vectors are the index's: the same embedder, the same prefixes, the same truncation to the
model's window.  A request picks a model by name (:meth:`ServedModels.resolve`) and says whether
its texts are queries or documents (:class:`InputType`), which picks ``embed_query`` (the query
prefix) or ``embed_documents`` (the document prefix) — so a caller gets exactly what a search
compares against stored chunks.

A request past its limits (:class:`~ragd.model_inputs.InputLimits`: texts in it, characters in
one text, characters in all) is :class:`~ragd.errors.InputTooLarge` (413) naming the limit and
its setting; a text within them but past the model's window is cut to the window before it is
tokenized, as the index does (:func:`~ragd.model_inputs.encode_heads`).  Shape errors are
:class:`~ragd.errors.InvalidRequest` (400); an unknown model is :class:`~ragd.errors.NotFound`
(404) listing the served ones.

A request's texts are embedded in slices of :data:`SLICE`, each slice one turn of a
:class:`~ragd.embed.fair_queue.FairTurns` shared by every request: at most ``model_slots`` slices
at once, the waiting ones served key by key, so another key's request goes next rather than after
all of this one's; a search's query goes its own way and waits for none of them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from ragd.chunk.approx_counter import ApproxTokenCounter
from ragd.embed.base import BatchQueryEmbedder, DenseEmbedder
from ragd.embed.fair_queue import FairTurns
from ragd.embed.model_source import PACKAGED_MODELS, PACKAGED_PREFIX
from ragd.embed.spaces import DEFAULT_MODEL
from ragd.errors import InvalidRequest, NotFound
from ragd.model_inputs import InputLimits, encode_heads
from ragd.types import DenseVector

#: texts embedded in one turn (one batch of the model)
SLICE = 16
#: another name for the default model, for clients that must name one
RAGD_ALIAS = "ragd"


class InputType(StrEnum):
    """What the texts are: a query gets the query prefix, a document the document prefix."""

    QUERY = "query"
    DOCUMENT = "document"

    @classmethod
    def parse(cls, value: str | None) -> InputType:
        """``None`` is a document (what the index stores); Cohere's and TEI's names are accepted."""
        if value is None:
            return cls.DOCUMENT
        found = _INPUT_TYPES.get(value.strip().lower())
        if found is None:
            valid = ", ".join(sorted(_INPUT_TYPES))
            raise InvalidRequest(f"unknown input type {value[:64]!r}; valid values: {valid}")
        return found


_INPUT_TYPES = {
    "query": InputType.QUERY,
    "search_query": InputType.QUERY,
    "document": InputType.DOCUMENT,
    "search_document": InputType.DOCUMENT,
    "passage": InputType.DOCUMENT,
}


@dataclass(frozen=True, slots=True)
class ServedModel:
    """One dense model: its ragd name (``default`` or a RAGD_EMBEDDERS key) and its embedder."""

    name: str
    embedder: DenseEmbedder
    #: every name a request may use for it, the ragd name first
    aliases: tuple[str, ...]

    @property
    def dimension(self) -> int:
        return self.embedder.spec.dimension


@dataclass(frozen=True, slots=True)
class Embedded:
    """Vectors in input order, and the tokens the model read (exact with a local tokenizer)."""

    vectors: list[DenseVector]
    tokens: int


class ServedModels:
    """The configured dense models, found by any of their names."""

    def __init__(self, models: Sequence[ServedModel]) -> None:
        self.models = tuple(models)
        self._by_alias: dict[str, ServedModel] = {}
        for model in self.models:  # the default model first: its names win a clash
            for alias in model.aliases:
                self._by_alias.setdefault(alias, model)

    @classmethod
    def build(
        cls, default: DenseEmbedder, named: Mapping[str, DenseEmbedder], configured: Mapping[str, str]
    ) -> ServedModels:
        """``configured``: each model's configured ``model`` setting by ragd name (another alias)."""
        models = [_served(DEFAULT_MODEL, default, configured.get(DEFAULT_MODEL), RAGD_ALIAS)]
        models += [_served(name, dense, configured.get(name)) for name, dense in named.items()]
        return cls(models)

    @property
    def default(self) -> ServedModel:
        return self.models[0]

    def resolve(self, name: str | None) -> ServedModel:
        """The model a request names (None or empty: the default); NotFound lists the served ones."""
        if not name:
            return self.default
        found = self._by_alias.get(name.strip())
        if found is None:
            served = "; ".join(f"{m.name} ({m.embedder.spec.model})" for m in self.models)
            raise NotFound(
                f"unknown embedding model {name[:64]!r}; ragd serves: {served}",
                hint=f"name one of them, or {RAGD_ALIAS!r} for the default model",
            )
        return found

    async def embed(
        self,
        model: ServedModel,
        texts: Sequence[str],
        kind: InputType,
        *,
        limits: InputLimits | None = None,
        turns: FairTurns | None = None,
    ) -> Embedded:
        """The index's vectors for ``texts`` as queries or documents, and the tokens read; slice by
        slice, each slice a turn of ``turns`` taken for the caller's key
        (:func:`~ragd.embed.fair_queue.working_for`)."""
        (limits or InputLimits()).check(texts)
        turns = turns or FairTurns()
        vectors: list[DenseVector] = []
        tokens = 0
        for start in range(0, len(texts), SLICE):
            part = texts[start : start + SLICE]
            async with turns.turn():
                counting = asyncio.to_thread(count_tokens, model.embedder, part, kind)
                embedded, counted = await asyncio.gather(_embed_slice(model.embedder, part, kind), counting)
            vectors.extend(embedded)
            tokens += counted
        return Embedded(vectors=vectors, tokens=tokens)


async def _embed_slice(dense: DenseEmbedder, texts: Sequence[str], kind: InputType) -> list[DenseVector]:
    if kind is InputType.DOCUMENT:
        return await dense.embed_documents(texts)
    if isinstance(dense, BatchQueryEmbedder):  # the local model: apart from searches' queries
        return await dense.embed_queries(texts)
    return list(await asyncio.gather(*(dense.embed_query(text) for text in texts)))


def count_tokens(dense: DenseEmbedder, texts: Sequence[str], kind: InputType) -> int:
    """Tokens the model reads: its tokenizer's count of the prefixed text, at most its window
    (an estimate when the model is remote and no ``tokenizer`` file is configured), reading about
    a window's worth of each text.  Blocks."""
    counter = dense.tokenizer or ApproxTokenCounter()
    spec = dense.spec
    prefix = spec.query_prefix if kind is InputType.QUERY else spec.document_prefix
    window = spec.max_tokens

    def count(cuts: list[str]) -> list[int]:
        return [counter.count(cut) for cut in cuts]

    counts = encode_heads([prefix + text for text in texts], window, count, lambda n: n >= window)
    return sum(min(n, window) for n in counts)


def _served(name: str, dense: DenseEmbedder, configured: str | None, *extra: str) -> ServedModel:
    names = [name, *extra, dense.spec.model]
    if configured:
        names += [configured, configured.removeprefix(PACKAGED_PREFIX)]
    packaged = (configured or "").removeprefix(PACKAGED_PREFIX)
    if configured and configured.startswith(PACKAGED_PREFIX) and packaged in PACKAGED_MODELS:
        names.append(f"sentence-transformers/{packaged}")  # its hub id (Open WebUI's default model)
    return ServedModel(name=name, embedder=dense, aliases=tuple(dict.fromkeys(n for n in names if n)))
