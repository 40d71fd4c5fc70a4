"""``POST /search``: the retrieval-agent contract Open WebUI calls (``contracts.md`` §1.2-§1.4, §6).

Every resolved query's results are merged into **one** ranked, de-duplicated
list of at most ``k`` (Open WebUI reads only ``documents[0]``), so the response
always has exactly one inner list — empty when nothing matched.  ``distances``
are each hit's absolute relevance in [0, 1] (docs/scoring.md; the reranker's when
one ran), so Open WebUI's relevance threshold means the same for every query;
``min_score`` (alias ``score_threshold``) drops hits below a relevance.
``metadatas`` are the stored ``meta`` verbatim.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Annotated

from fastapi import APIRouter, Depends, Response
from pydantic_core import to_json

from ragd.api.auth import Caller
from ragd.api.deps import metrics, services
from ragd.api.schemas import SearchBody, SearchResponse
from ragd.bootstrap import Services
from ragd.errors import RagError
from ragd.kb.access import require_chunk_reader, searchable_collections
from ragd.kb.search import filter_matched
from ragd.kb_types import Principal
from ragd.observe.logging import sanitize
from ragd.observe.metrics import Metrics
from ragd.retrieve.agent import AgenticSearch
from ragd.retrieve.pipeline import PipelineRequest, PipelineResult
from ragd.types import Message

log = logging.getLogger(__name__)
router = APIRouter()
#: with a ``filter``: how many chunks of the searched collections it admitted (0: it matched nothing)
FILTER_MATCHED_HEADER = "X-Ragd-Filter-Matched"


def to_request(body: SearchBody, svc: Services) -> PipelineRequest:
    return PipelineRequest(
        collections=tuple(dict.fromkeys(body.collection_names)),
        queries=tuple(body.queries or ()),
        messages=tuple(Message(m.role, m.text()) for m in body.messages or ()),
        k=body.k,
        mode=svc.settings.retrieval.mode,
        prompt_template=body.retrieval_query_generation_prompt_template,
        deadline_s=svc.settings.server.search_timeout_s,
        knobs=body.knobs(svc.settings.retrieval),
    )


def to_response(result: PipelineResult) -> Response:
    """The :class:`SearchResponse` body, serialised once: the model documents the shape (OpenAPI),
    and the endpoint returns the bytes as they are (no second validation pass of its own output)."""
    hits = result.hits
    body = {
        "documents": [[h.content for h in hits]],
        "metadatas": [[dict(h.meta) for h in hits]],
        "distances": [[round(h.relevance, 6) for h in hits]],
    }
    return Response(content=to_json(body), media_type="application/json")


async def readable_collections(svc: Services, caller: Principal, names: Sequence[str]) -> list[str]:
    """``names`` as the caller may search them (:func:`ragd.kb.access.searchable_collections`)."""
    if caller.is_service:
        return list(names)
    require_chunk_reader(caller)
    return await searchable_collections(caller, svc.knowledge().catalog, names)


@router.post("/search", response_model=SearchResponse)
async def search(
    body: SearchBody,
    caller: Caller,
    svc: Annotated[Services, Depends(services)],
    m: Annotated[Metrics, Depends(metrics)],
) -> Response:
    started = time.perf_counter()
    asked = (body.k, [len(q) for q in body.queries or ()])
    body, clamped = body.clamp()
    for field in clamped:  # logged and counted whatever the caller may read
        log.warning("POST /search: %s over its limit, clamped (k=%d, query lengths %s)", field, *asked)
        m.search_clamped.labels(field).inc()
    names = await readable_collections(svc, caller, body.collection_names)
    if not names:
        return to_response(PipelineResult(queries=(), hits=()))
    body = body.model_copy(update={"collection_names": names})
    pipeline = "agentic" if isinstance(svc.pipeline, AgenticSearch) else "linear"
    request = to_request(body, svc)
    matched = await filter_matched(svc.knowledge(), request.collections, request.knobs.where)
    try:
        result = PipelineResult(queries=(), hits=()) if matched == 0 else await svc.pipeline.run(request)
    except RagError as exc:
        m.search_requests.labels(pipeline, "error", exc.code).inc()
        raise
    if pipeline == "linear":  # user text: sanitised (control characters escaped, length capped)
        log.debug(
            "search resolved queries=%s collections=%s hits=%d",
            sanitize(list(result.queries)),
            sanitize(list(request.collections)),
            len(result.hits),
        )
    m.search_duration.labels(pipeline).observe(time.perf_counter() - started)
    outcome = "partial" if "deadline" in result.notes else "ok"
    m.search_requests.labels(pipeline, outcome, "").inc()
    response = to_response(result)
    if matched is not None:  # the contract's body stays as it is; the count rides in a header
        response.headers[FILTER_MATCHED_HEADER] = str(matched)
    return response
