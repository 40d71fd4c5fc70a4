"""``POST /v1/chat/completions`` and ``GET /v1/models``: an OpenAI-compatible chat proxy with citations.

A model named ``rag/<collection>[/<model>]`` (or an alias from ``RAGD_CHAT__MODELS``, or any model
with ``rag_collection``, or any model at all with ``RAGD_CHAT__DEFAULT_COLLECTION``) is answered
from the collection by :class:`ragd.answer.service.ChatAnswerer`; every other request goes to the
upstream byte for byte, streaming included, and its answer comes back as the upstream wrote it.
Errors are OpenAI-shaped (``api/errors.py``, by the ``/v1/`` prefix).  Registered only when the
proxy is on and an upstream is configured (``bootstrap.chat_enabled``).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import ValidationError
from starlette.background import BackgroundTask

from ragd.answer.records import AnswerDelta, AnswerEnd, AnswerStream, ChatRequest
from ragd.answer.routing import rag_target
from ragd.answer.service import ChatAnswerer
from ragd.api.auth import Caller
from ragd.api.deps import metrics, services
from ragd.api.model_list import listed_models
from ragd.api.openai_wire import (
    DONE,
    ChatCompletionBody,
    ChunkWriter,
    ModelField,
    annotation_views,
    completion_body,
    completion_id,
    rag_fields,
    request_body_schema,
)
from ragd.api.page_links import CitationPages, PageLinks
from ragd.api.schemas import rerank_choice
from ragd.bootstrap import Services
from ragd.errors import Forbidden, InvalidRequest, NotFound, PayloadTooLarge, RagError, UpstreamFailed
from ragd.kb.access import require_chunk_reader, searchable_collections
from ragd.kb.pages import dataset_of_collection
from ragd.kb_types import Principal
from ragd.llm.base import Forwarded, Upstream
from ragd.observe.metrics import Metrics
from ragd.retrieve.filters import parse_filter
from ragd.types import Message, SearchKnobs

log = logging.getLogger(__name__)
router = APIRouter()

MAX_BODY_BYTES = 16 * 1024 * 1024
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def _proxy(svc: Services) -> tuple[ChatAnswerer, Upstream]:
    if svc.chat is None or svc.upstream is None:
        raise NotFound("the chat proxy is off", hint="set RAGD_LLM__BASE_URL and RAGD_CHAT__ENABLED=true")
    return svc.chat, svc.upstream


async def _read_body(request: Request) -> bytes:
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > MAX_BODY_BYTES:
            raise PayloadTooLarge(f"request body exceeds {MAX_BODY_BYTES} bytes")
    return bytes(body)


_Body = TypeVar("_Body", bound=ModelField)


def _validated(model: type[_Body], payload: object) -> _Body:
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        raise RequestValidationError(
            [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False, include_context=False)]
        ) from None


@router.post("/v1/chat/completions", openapi_extra=request_body_schema(), response_model=None)
async def chat_completions(
    request: Request,
    caller: Caller,
    svc: Annotated[Services, Depends(services)],
    m: Annotated[Metrics, Depends(metrics)],
) -> Response:
    require_chunk_reader(caller)  # an ingestion-only key never reads chunks, not even through a model
    answerer, upstream = _proxy(svc)
    raw = await _read_body(request)
    try:
        payload = json.loads(raw)
    except (ValueError, RecursionError):
        raise InvalidRequest("the request body is not valid JSON") from None
    if not isinstance(payload, dict):
        raise InvalidRequest("the request body must be a JSON object")
    head = _validated(ModelField, payload)
    target = rag_target(
        head.model,
        aliases=svc.settings.chat.models,
        default_model=svc.settings.llm.model,
        collection=head.rag_collection,
        default_collection=svc.settings.chat.default_collection,
    )
    if target is None:
        if not caller.is_service:
            raise Forbidden("a tenant key may use ragd's rag/<collection> models only")
        return await _passthrough(raw, request, upstream, m)
    if not caller.is_service and not await searchable_collections(
        caller, svc.knowledge().catalog, [target.collection]
    ):  # another tenant's collection answers exactly like a missing one
        raise NotFound(f"collection {target.collection!r} does not exist (nothing is indexed in it)")
    body = _validated(ChatCompletionBody, payload)
    pages = await _citation_pages(svc, caller, target.collection, request)
    defaults = svc.settings.chat
    chat = ChatRequest(
        model=target.model,
        collection=target.collection,
        messages=tuple(Message(msg.role, msg.text()) for msg in body.messages),
        top_k=svc.settings.chat.default_top_k if body.rag_top_k is None else body.rag_top_k,
        tools=body.rag_enable_tools is not False,
        knobs=SearchKnobs(
            min_score=svc.settings.chat.min_score if body.rag_min_score is None else body.rag_min_score,
            vector_weight=body.rag_vector_weight,
            diversity=defaults.diversity if body.rag_diversity is None else body.rag_diversity,
            max_per_file=_given_or(body.rag_max_per_file, defaults.max_per_file),
            near_duplicates=svc.settings.chat.near_duplicates,
            languages=tuple(dict.fromkeys(body.rag_languages or ())),
            rerank=rerank_choice(body.rag_rerank),
            where=parse_filter(body.rag_filter, "rag_filter"),
        ),
        source_max_chars=_given_or(body.rag_source_max_chars, defaults.source_max_chars),
        params=body.upstream_params(),
        include_usage=body.include_usage,
    )
    return await _answer(answerer, chat, body, m, pages)


async def _citation_pages(
    svc: Services, caller: Principal, collection: str, request: Request
) -> CitationPages:
    """Where the sources' pages are drawn: the collection's dataset (none for a raw collection or
    without the knowledge base), and ragd's address for absolute links."""
    links = PageLinks.of(svc.settings.extract)
    dataset = await dataset_of_collection(svc.kb, caller, collection) if svc.kb is not None else None
    base = svc.settings.pages.public_url or str(request.base_url)
    return CitationPages(links, dataset.id if dataset else None, base)


def _given_or(given: int | None, default: int | None) -> int | None:
    """A request's cap, else the setting's; a request's 0 lifts it."""
    if given is None:
        return default
    return given or None


async def _answer(
    answerer: ChatAnswerer, chat: ChatRequest, body: ChatCompletionBody, m: Metrics, pages: CitationPages
) -> Response:
    started = time.perf_counter()
    try:
        if body.stream:
            opened = await answerer.stream(chat)
        else:
            answer = await answerer.answer(chat)
    except RagError as exc:
        _count_failure(m, "rag", exc)
        raise
    m.chat_duration.labels("rag").observe(time.perf_counter() - started)
    if body.stream:
        writer = ChunkWriter(body.model, include_usage=body.include_usage)
        events = _sse(opened, writer, m, chat.collection, pages)
        return StreamingResponse(events, media_type="text/event-stream", headers=SSE_HEADERS)
    m.chat_requests.labels("rag", "ok").inc()
    retrieved = answer.retrieved
    return JSONResponse(
        completion_body(
            id_=completion_id(),
            model=body.model,
            text=answer.text,
            end=answer.end,
            extra=rag_fields(answer.end, pages.images(answer.end.citations)) if retrieved else {},
            annotations=annotation_views(answer.end, chat.collection, pages.urls(answer.end.citations))
            if retrieved
            else None,
        )
    )


async def _sse(
    opened: AnswerStream, writer: ChunkWriter, m: Metrics, collection: str, pages: CitationPages
) -> AsyncIterator[bytes]:
    """Role chunk, content deltas, one finish chunk (sources, annotations), usage when asked, [DONE]."""
    outcome = "disconnected"
    end: AnswerEnd | None = None
    try:
        yield writer.role()
        async for event in opened.events:
            if isinstance(event, AnswerDelta):
                yield writer.content(event.text)
            else:
                end = event
        if end is None:
            raise UpstreamFailed("the answer ended without a finish")
        if opened.retrieved:
            images, urls = pages.images(end.citations), pages.urls(end.citations)
            yield writer.finish(
                end.finish_reason, rag_fields(end, images), annotation_views(end, collection, urls)
            )
        else:
            yield writer.finish(end.finish_reason, {})
        if writer.include_usage:
            yield writer.usage(end.usage)
        yield DONE
        outcome = "ok"
    except RagError as exc:
        log.warning("chat stream broke off: %s %s", exc.code, exc)
        outcome = exc.code
        if isinstance(exc, UpstreamFailed):
            m.chat_upstream_failures.labels("rag").inc()
        yield writer.error(exc.http_status, exc.message, exc.code)
    finally:
        close = getattr(opened.events, "aclose", None)
        if close is not None:
            await close()
        m.chat_requests.labels("rag", outcome).inc()


async def _passthrough(raw: bytes, request: Request, upstream: Upstream, m: Metrics) -> Response:
    headers = {
        "Content-Type": request.headers.get("content-type", "application/json"),
        "Accept": request.headers.get("accept", "*/*"),
    }
    started = time.perf_counter()
    try:
        forwarded = await upstream.forward(raw, headers)
    except UpstreamFailed as exc:
        _count_failure(m, "passthrough", exc)
        raise
    m.chat_duration.labels("passthrough").observe(time.perf_counter() - started)
    outcome = "ok" if forwarded.status < 400 else "upstream_http_error"
    m.chat_requests.labels("passthrough", outcome).inc()
    return StreamingResponse(
        _relay(forwarded, m),
        status_code=forwarded.status,
        headers=dict(forwarded.headers),
        background=BackgroundTask(forwarded.aclose),
    )


async def _relay(forwarded: Forwarded, m: Metrics) -> AsyncIterator[bytes]:
    """The upstream's bytes as they come; a break mid-stream ends an SSE body with an error event."""
    try:
        async for chunk in forwarded.body:
            yield chunk
    except UpstreamFailed as exc:
        m.chat_upstream_failures.labels("passthrough").inc()
        if "text/event-stream" in forwarded.headers.get("content-type", ""):
            yield ChunkWriter.error(exc.http_status, exc.message, exc.code)
    finally:
        await forwarded.aclose()


def _count_failure(m: Metrics, kind: str, exc: RagError) -> None:
    if isinstance(exc, UpstreamFailed):
        m.chat_upstream_failures.labels(kind).inc()
    m.chat_requests.labels(kind, exc.code).inc()


@router.get("/v1/models")
async def list_models(
    caller: Caller, svc: Annotated[Services, Depends(services)], m: Annotated[Metrics, Depends(metrics)]
) -> Any:
    """The upstream's models, then ``rag/<collection>`` for every collection that holds chunks (and
    aliases).  An upstream that is down costs its own models only: ragd's are listed all the same.
    ``GET /v1/models/{id}`` answers each of them (:mod:`ragd.api.routes.models`)."""
    _proxy(svc)
    return {"object": "list", "data": await listed_models(caller, svc, m)}
