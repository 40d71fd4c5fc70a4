"""Which chat requests get retrieval: model names ``rag/<collection>[/<model>]``, aliases, an override.

    rag/kb                   retrieval over ``kb``, answered by the default upstream model
    rag/kb/llama3.1:8b       retrieval over ``kb``, answered by ``llama3.1:8b`` (the rest may hold "/")
    docs                     an alias from the settings, mapped to one of the above
    llama3 + rag_collection  retrieval over the named collection, answered by ``llama3``
    llama3 + a default       retrieval over the default collection (``ragd proxy``'s folder)

Anything else is not ours: the request goes to the upstream unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ragd.errors import InvalidRequest

RAG_PREFIX = "rag/"
COLLECTION_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,128}")


@dataclass(frozen=True, slots=True)
class RagTarget:
    """Retrieval over ``collection``; the answer comes from the upstream model ``model``."""

    collection: str
    model: str


def rag_target(
    model: str,
    *,
    aliases: Mapping[str, str],
    default_model: str,
    collection: str | None = None,
    default_collection: str | None = None,
) -> RagTarget | None:
    """The retrieval target of a request for ``model``, or None when it is plain passthrough.

    ``collection`` (the request's ``rag_collection``) overrides the model name's collection and
    turns retrieval on for any model; ``default_collection`` (a setting) turns it on for every
    model that names no collection (not ``rag/…``, not an alias).  Raises :class:`InvalidRequest`
    for a malformed ``rag/`` name, an invalid collection name, or no upstream model to answer with.
    """
    name = aliases.get(model, model)
    if name.startswith(RAG_PREFIX):
        named, _, upstream = name[len(RAG_PREFIX) :].partition("/")
        if not named and collection is None:
            raise InvalidRequest(f"model {model!r} names no collection: use rag/<collection>[/<model>]")
    elif collection is not None or default_collection is not None:
        named, upstream = default_collection or "", name
    else:
        return None
    chosen = collection if collection is not None else named
    if not COLLECTION_PATTERN.fullmatch(chosen):
        raise InvalidRequest(f"collection name {chosen[:130]!r} must match ^[A-Za-z0-9_-]{{1,128}}$")
    upstream = upstream.strip() or default_model
    if not upstream:
        raise InvalidRequest(
            f"model {model!r} names no upstream model",
            hint="use rag/<collection>/<model>, or set RAGD_LLM__MODEL as the default",
        )
    return RagTarget(collection=chosen, model=upstream)


def rag_model_names(
    collections: Iterable[str],
    *,
    aliases: Mapping[str, str],
    default_model: str,
    upstream_models: Sequence[str],
    limit: int = 2000,
) -> list[str]:
    """The model names ``/v1/models`` offers for retrieval: aliases, then one per collection.

    With a default upstream model that is ``rag/<collection>``; without one, every
    ``rag/<collection>/<model>`` (each name must say which model answers).  At most ``limit``.
    """
    names = list(aliases)
    for collection in collections:
        if not COLLECTION_PATTERN.fullmatch(collection):
            continue
        if default_model:
            names.append(f"{RAG_PREFIX}{collection}")
        else:
            names.extend(f"{RAG_PREFIX}{collection}/{model}" for model in upstream_models)
        if len(names) >= limit:
            break
    return list(dict.fromkeys(names))[:limit]
