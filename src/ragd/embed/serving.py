"""ragd's own dense models, served to other components (``POST /v1/embeddings``, ``POST /embed``).

The vectors are the index's: the same embedder, the same prefixes, the same truncation to the
model's window.  A request picks a model by name (:meth:`ServedModels.resolve`) and says whether
its texts are queries or documents (:class:`InputType`), which picks ``embed_query`` (the query
prefix) or ``embed_documents`` (the document prefix) — so a caller gets exactly what a search
compares against stored chunks.

Limits (:data:`MAX_INPUTS` texts of at most :data:`MAX_INPUT_CHARS` characters) and shape errors
are :class:`~ragd.errors.InvalidRequest` (400) naming the limit; an unknown model is
:class:`~ragd.errors.NotFound` (404) listing the served ones.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from ragd.chunk.approx_counter import ApproxTokenCounter
from ragd.embed.base import DenseEmbedder
from ragd.embed.model_source import PACKAGED_MODELS, PACKAGED_PREFIX
from ragd.embed.spaces import DEFAULT_MODEL
from ragd.errors import InvalidRequest, NotFound
from ragd.types import DenseVector

#: texts in one request at most (OpenAI's own limit)
MAX_INPUTS = 2048
#: characters in one text at most (far past any model's window: the model reads its window only)
MAX_INPUT_CHARS = 100_000
#: another name for the default model, for clients that must name one
RAGD_ALIAS = "ragd"
#: queries embedded at once (the local model batches them; a remote one gets one request each)
QUERY_GROUP = 32


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

    async def embed(self, model: ServedModel, texts: Sequence[str], kind: InputType) -> Embedded:
        """The index's vectors for ``texts`` as queries or documents, and the tokens read."""
        check_inputs(texts)
        dense = model.embedder
        counting = asyncio.create_task(asyncio.to_thread(count_tokens, dense, texts, kind))
        try:
            if kind is InputType.QUERY:
                vectors: list[DenseVector] = []
                for start in range(0, len(texts), QUERY_GROUP):
                    group = texts[start : start + QUERY_GROUP]
                    vectors.extend(await asyncio.gather(*(dense.embed_query(t) for t in group)))
            else:
                vectors = await dense.embed_documents(texts)
        finally:
            tokens = await counting
        return Embedded(vectors=vectors, tokens=tokens)


def check_inputs(texts: Sequence[str]) -> None:
    """At least one text, none empty, none too long, not too many."""
    if not texts:
        raise InvalidRequest("the input is empty: send a string or a list of strings")
    if len(texts) > MAX_INPUTS:
        raise InvalidRequest(
            f"{len(texts)} inputs in one request; at most {MAX_INPUTS}", hint="split them into batches"
        )
    for index, text in enumerate(texts):
        if not text:
            raise InvalidRequest(f"input {index} is an empty string")
        if len(text) > MAX_INPUT_CHARS:
            raise InvalidRequest(
                f"input {index} has {len(text):,} characters; at most {MAX_INPUT_CHARS:,}",
                hint="the model reads only its window of tokens: send less text",
            )


def count_tokens(dense: DenseEmbedder, texts: Sequence[str], kind: InputType) -> int:
    """Tokens the model reads: its tokenizer's count of the prefixed text, at most its window
    (an estimate when the model is remote and no ``tokenizer`` file is configured).  Blocks."""
    counter = dense.tokenizer or ApproxTokenCounter()
    spec = dense.spec
    prefix = spec.query_prefix if kind is InputType.QUERY else spec.document_prefix
    return sum(min(counter.count(prefix + text), spec.max_tokens) for text in texts)


def _served(name: str, dense: DenseEmbedder, configured: str | None, *extra: str) -> ServedModel:
    names = [name, *extra, dense.spec.model]
    if configured:
        names += [configured, configured.removeprefix(PACKAGED_PREFIX)]
    packaged = (configured or "").removeprefix(PACKAGED_PREFIX)
    if configured and configured.startswith(PACKAGED_PREFIX) and packaged in PACKAGED_MODELS:
        names.append(f"sentence-transformers/{packaged}")  # its hub id (Open WebUI's default model)
    return ServedModel(name=name, embedder=dense, aliases=tuple(dict.fromkeys(n for n in names if n)))
