"""The models ``GET /v1/models`` lists, read once so ``GET /v1/models/{id}`` answers the same objects.

The upstream's models come first (the service key only), then ``rag/<collection>`` for every
collection the caller may search (and the aliases of ``RAGD_CHAT__MODELS``).  An upstream that is
down costs its own models only: ragd's are listed all the same.
"""

from __future__ import annotations

import logging
from typing import Any

from ragd.answer.routing import rag_model_names
from ragd.bootstrap import Services
from ragd.errors import UpstreamFailed
from ragd.kb.access import searchable_collections
from ragd.kb_types import Principal
from ragd.observe.metrics import Metrics
from ragd.types import PointFilter

log = logging.getLogger(__name__)

MAX_LISTED_COLLECTIONS = 1000


async def listed_models(caller: Principal, svc: Services, m: Metrics) -> list[dict[str, Any]]:
    """OpenAI's model objects the caller is offered: the upstream's, then ragd's (empty without
    the chat proxy)."""
    if svc.chat is None or svc.upstream is None:
        return []
    try:
        models = await svc.upstream.models() if caller.is_service else []  # tenants: ragd's only
    except UpstreamFailed as exc:
        log.warning("GET /v1/models: the upstream's models are left out: %s", exc.code)
        m.chat_upstream_failures.labels("models").inc()
        models = []
    found = await svc.store.facet("meta.collection_name", PointFilter(), limit=MAX_LISTED_COLLECTIONS)
    collections = (
        list(found)
        if caller.is_service
        else await searchable_collections(caller, svc.knowledge().catalog, list(found))
    )
    names = rag_model_names(
        sorted(collections),
        aliases=svc.settings.chat.models if caller.is_service else {},  # aliases may name any collection
        default_model=svc.settings.llm.model,
        upstream_models=[str(entry["id"]) for entry in models],
    )
    listed = {str(entry["id"]) for entry in models}
    rag = [{"id": n, "object": "model", "created": 0, "owned_by": "ragd"} for n in names if n not in listed]
    return [*models, *rag]


def listed_model(listed: list[dict[str, Any]], model_id: str) -> dict[str, Any] | None:
    """The object ``listed`` shows for ``model_id``, if any."""
    return next((entry for entry in listed if str(entry.get("id")) == model_id), None)
