"""Model endpoints: ragd's own models, for other components that must share its vectors.

* ``POST /v1/embeddings`` — OpenAI's format (the ``openai`` SDKs, Open WebUI's "OpenAI" embedding
  engine); ``input_type`` (``query`` | ``document``, the default) picks the model's prefix;
* ``POST /embed`` — Text Embeddings Inference's format: a JSON array of vectors, ``[[…]]`` for a
  single string too;
* ``POST /ragproxy/embed`` — ragproxy's embedder (seed 004): ``{"inputs" | "texts": […], "normalize"}``
  answered ``{"vectors": [[…]], "normalize": true, "dim": n}``; its clients take
  ``http://ragd/ragproxy`` as their base URL (``GET /ragproxy/health`` is in :mod:`.health`);
* ``POST /v1/rerank`` — Cohere's format (Open WebUI's external reranker), TEI's ``texts`` too;
  ``404`` while no reranker is configured;
* ``GET /v1/models/{id}`` — OpenAI's model object: for every id ``GET /v1/models`` lists (the
  upstream's chat models, ``rag/<collection>``, aliases) the object the list shows, else a dense
  model ragd serves, by any of its names.

Any valid key may call them, a tenant key included: a model reveals nothing of anyone's data.
Errors on ``/v1/…`` are OpenAI-shaped, on ``/embed`` ragd's own (``api/errors.py``).  A request
past RAGD_SERVER__MAX_EMBED_INPUTS, …_MAX_INPUT_CHARS or …_MAX_TOTAL_CHARS is 413
``INPUT_TOO_LARGE``; the work is done slice by slice, in turns shared key by key with every other
caller of these endpoints (:mod:`ragd.embed.fair_queue`), as the caller's key.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from ragd.api.auth import Caller, principal
from ragd.api.deps import metrics, services
from ragd.api.model_list import listed_model, listed_models
from ragd.api.model_schemas import (
    EmbeddingsBody,
    RagproxyEmbedBody,
    RerankBody,
    TeiEmbedBody,
    check_dimensions,
    embeddings_response,
    model_object,
    ragproxy_embed_response,
    rerank_response,
)
from ragd.bootstrap import Services
from ragd.embed.fair_queue import working_for
from ragd.embed.serving import InputType, ServedModels
from ragd.embed.spaces import DEFAULT_MODEL
from ragd.errors import NotFound
from ragd.kb_types import Principal
from ragd.model_inputs import InputLimits
from ragd.observe.metrics import Metrics
from ragd.rerank.serving import ServedRerankers, rank
from ragd.settings import ServerSettings

router = APIRouter(dependencies=[Depends(principal)], tags=["models"])
#: ``GET /v1/models/{id}`` alone, where ragd serves no models of its own (``ragd proxy``)
listed_router = APIRouter(dependencies=[Depends(principal)], tags=["models"])
Svc = Annotated[Services, Depends(services)]
Met = Annotated[Metrics, Depends(metrics)]


def served_models(svc: Services) -> ServedModels:
    named = svc.spaces.named if svc.spaces is not None else {}
    configured = {DEFAULT_MODEL: svc.settings.embedding.model}
    configured |= {name: emb.model for name, emb in svc.settings.embedders.items()}
    return ServedModels.build(svc.dense, named, configured)


def served_rerankers(svc: Services) -> ServedRerankers:
    models = {DEFAULT_MODEL: svc.settings.rerank.model}
    models |= {name: rr.model for name, rr in svc.settings.rerankers.items()}
    return ServedRerankers(svc.rerankers, models)


def input_limits(server: ServerSettings) -> InputLimits:
    return InputLimits(server.max_embed_inputs, server.max_input_chars, server.max_total_chars)


#: the routes whose JSON bodies :attr:`~ragd.model_inputs.InputLimits.body_bytes` bounds (the body gate)
MODEL_ROUTES = ("/v1/embeddings", "/embed", "/ragproxy/embed", "/v1/rerank")


def work_key_of(caller: Principal) -> str:
    """Whose turns a request's slices take: its key's (the service key is one key of its own)."""
    return caller.key_id or ("service" if caller.is_service else f"tenant:{caller.tenant_id}")


@router.post("/v1/embeddings", response_model=None)
async def embeddings(body: EmbeddingsBody, caller: Caller, svc: Svc, m: Met) -> JSONResponse:
    """The index's vectors for the input, in OpenAI's shape (``usage`` counts the model's tokens)."""
    served = served_models(svc)
    model = served.resolve(body.model)
    check_dimensions(body.dimensions, model.dimension, model.name)
    texts = body.texts()
    with working_for(work_key_of(caller)):
        kind = InputType.parse(body.input_type)
        limits = input_limits(svc.settings.server)
        embedded = await served.embed(model, texts, kind, limits=limits, turns=svc.model_turns)
    m.model_inputs.labels("embeddings").inc(len(texts))
    name = body.model or model.embedder.spec.model
    return JSONResponse(embeddings_response(embedded, name, body.encoding_format))


@router.post("/embed", response_model=None)
async def tei_embed(body: TeiEmbedBody, caller: Caller, svc: Svc, m: Met) -> JSONResponse:
    """The default model's vectors, as TEI answers: a JSON array of arrays of floats."""
    body.check()
    served = served_models(svc)
    model = served.default
    check_dimensions(body.dimensions, model.dimension, model.name)
    texts = body.texts()
    with working_for(work_key_of(caller)):
        kind = InputType.parse(body.prompt_name)
        limits = input_limits(svc.settings.server)
        embedded = await served.embed(model, texts, kind, limits=limits, turns=svc.model_turns)
    m.model_inputs.labels("embed").inc(len(texts))
    return JSONResponse([vector.tolist() for vector in embedded.vectors])


@router.post("/ragproxy/embed", response_model=None)
async def ragproxy_embed(body: RagproxyEmbedBody, caller: Caller, svc: Svc, m: Met) -> JSONResponse:
    """The default model's vectors in ragproxy's shape: ``{"vectors", "normalize", "dim"}``."""
    texts = body.text_list()
    served = served_models(svc)
    model = served.default
    with working_for(work_key_of(caller)):
        kind = InputType.parse(body.input_type)
        limits = input_limits(svc.settings.server)
        embedded = await served.embed(model, texts, kind, limits=limits, turns=svc.model_turns)
    m.model_inputs.labels("ragproxy").inc(len(texts))
    return JSONResponse(ragproxy_embed_response(embedded, model.dimension, body.normalize))


@router.post("/v1/rerank", response_model=None)
async def rerank(body: RerankBody, caller: Caller, svc: Svc, m: Met) -> JSONResponse:
    """The documents scored against the query, best first, in Cohere's shape."""
    name, reranker = served_rerankers(svc).resolve(body.model)
    documents = body.document_texts()
    with working_for(work_key_of(caller)):
        limits = input_limits(svc.settings.server)
        ranked = await rank(reranker, body.query, documents, limits=limits, turn=svc.model_turns.turn)
    m.model_inputs.labels("rerank").inc(len(documents))
    with_text = body.return_documents or body.return_text
    answer = rerank_response(ranked, documents, body.model or name, top_n=body.top_n, with_text=with_text)
    return JSONResponse(answer)


@router.get("/v1/models/{model_id:path}")
async def get_model(model_id: str, caller: Caller, svc: Svc, m: Met) -> JSONResponse:
    """OpenAI's model object: one ``GET /v1/models`` lists (the same object), else a dense model
    ragd serves, by any of its names."""
    listed = await _listed(model_id, caller, svc, m)
    if listed is not None:
        return JSONResponse(listed)
    model = served_models(svc).resolve(model_id)
    return JSONResponse(model_object(model_id, model))


@listed_router.get("/v1/models/{model_id:path}")
async def get_listed_model(model_id: str, caller: Caller, svc: Svc, m: Met) -> JSONResponse:
    """OpenAI's model object of a model ``GET /v1/models`` lists (``ragd proxy``: its upstream
    serves the embeddings)."""
    listed = await _listed(model_id, caller, svc, m)
    if listed is None:
        raise NotFound(f"no model {model_id[:128]!r}", hint="GET /v1/models lists them")
    return JSONResponse(listed)


async def _listed(model_id: str, caller: Principal, svc: Services, m: Metrics) -> dict[str, Any] | None:
    if not model_id:
        raise NotFound("name a model: GET /v1/models/{id}")
    return listed_model(await listed_models(caller, svc, m), model_id)
