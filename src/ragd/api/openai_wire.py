"""The OpenAI chat-completions wire format, as the chat proxy speaks it (``contracts.md`` §4, §5).

Request bodies are validated here (unknown fields are kept and passed upstream); responses are
built here: the ``chat.completion`` body, the ``chat.completion.chunk`` SSE events (role chunk,
content deltas, one ``finish_reason``, the usage chunk when asked, ``[DONE]``) and the
``{"error": {...}}`` body.  Sources ride along as ``rag_sources`` (agent-cli's field: ``source``,
``path``, ``chunk_id`` = the chunk's place in its file, ``score``; plus ``index`` = the ``[n]`` the
model cites, ``file_id``, ``point_id``, ``page`` (0-based), ``page_image`` (the page with the
passage marked, a relative link, for sources of a dataset's paged file), ``headers``, ``snippet``,
``cited``) and ``rag_unmatched_citations`` (markers that point at no source), identical in both
modes.  The same citations ride as OpenAI's ``annotations`` (``url_citation``: ``url`` (the page
image's absolute address when there is one), ``title``, ``start_index``, ``end_index``), which
clients such as Open WebUI render: on the message, and in a stream once, on the finish chunk's
``delta`` (an extra field to the SDK's ``ChoiceDelta``).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from ragd.answer.links import source_title, source_url
from ragd.answer.records import AnswerEnd, Usage
from ragd.api.schemas import COLLECTION_PATTERN, FilterField, LanguageCode, RerankChoice
from ragd.types import Citation

SNIPPET_CHARS = 300
DONE = b"data: [DONE]\n\n"
#: request fields the proxy handles itself on rag models (the rest go upstream as given)
NOT_FORWARDED = frozenset(
    {
        "tools",
        "tool_choice",
        "functions",
        "function_call",
        "parallel_tool_calls",
        "n",
        "logprobs",
        "top_logprobs",
    }
)


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str = Field(max_length=64)
    text: str | None = None


class WireMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str = Field(max_length=32)
    content: str | list[ContentPart] | None = None

    def text(self) -> str:
        """A string as is; content parts' text parts joined by blank lines (images are ignored)."""
        if self.content is None or isinstance(self.content, str):
            return self.content or ""
        return "\n\n".join(p.text for p in self.content if p.type == "text" and p.text)


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")
    include_usage: bool | None = False


class ModelField(BaseModel):
    """What routing needs from any request, passthrough included."""

    model_config = ConfigDict(extra="allow")
    model: str = Field(min_length=1, max_length=512)
    rag_collection: str | None = Field(
        None, pattern=COLLECTION_PATTERN, description="retrieve from this collection, whatever the model"
    )


class ChatCompletionBody(ModelField):
    """``POST /v1/chat/completions``; fields not listed (temperature, max_tokens …) go upstream."""

    messages: list[WireMessage] = Field(min_length=1, max_length=1000)
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    rag_top_k: int | None = Field(None, ge=0, le=50, description="sources to retrieve; 0: no retrieval")
    rag_enable_tools: bool | None = Field(None, description="false: no read_full_document/search_documents")
    rag_min_score: float | None = Field(
        None,
        ge=0,
        le=1,
        validation_alias=AliasChoices("rag_min_score", "rag_score_threshold"),
        description="sources below this relevance (0-1) are not given to the model; default chat.min_score",
    )
    rag_vector_weight: float | None = Field(
        None,
        ge=0,
        le=1,
        description="hybrid: the dense list's share of the fusion; default retrieval.vector_weight",
    )
    rag_diversity: float | None = Field(
        None,
        ge=0,
        le=1,
        description="MMR over the sources: 0 keeps the ranking, higher favours variety;"
        " default chat.diversity",
    )
    rag_max_per_file: int | None = Field(
        None,
        ge=0,
        le=50,
        description="at most this many sources of one file (0: no cap); default chat.max_per_file",
    )
    rag_source_max_chars: int | None = Field(
        None,
        ge=0,
        le=1_000_000,
        description="each source's text given to the model is cut at this many characters (0: not cut);"
        " default chat.source_max_chars",
    )
    rag_languages: list[LanguageCode] | None = Field(
        None, max_length=20, description="only sources in one of these languages (ISO 639-1 codes)"
    )
    rag_rerank: RerankChoice = None
    rag_filter: FilterField = None

    @property
    def include_usage(self) -> bool:
        return bool(self.stream and self.stream_options and self.stream_options.include_usage)

    def upstream_params(self) -> dict[str, Any]:
        return {k: v for k, v in (self.model_extra or {}).items() if k not in NOT_FORWARDED}


def inline_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema with its ``$defs`` inlined, for an OpenAPI ``requestBody``."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ref.startswith("#/$defs/"):
                return inline(defs[ref.removeprefix("#/$defs/")])
            return {k: inline(v) for k, v in node.items()}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    return inline(schema)  # type: ignore[no-any-return]


def request_body_schema() -> dict[str, Any]:
    schema = inline_schema(ChatCompletionBody)
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex}"


def source_view(item: Citation, cited: bool, page_image: str | None = None) -> dict[str, Any]:
    view: dict[str, Any] = {
        "index": item.number,
        "source": item.name,
        "path": item.source,
        "chunk_id": item.split_id,
        "score": round(item.score, 6),
        "file_id": item.file_id,
        "point_id": item.chunk_id,
        "snippet": _snippet(item.text),
        "cited": cited,
    }
    if item.page is not None:
        view["page"] = item.page
    if page_image is not None:
        view["page_image"] = page_image
    if item.headers:
        view["headers"] = list(item.headers)
    return view


def rag_fields(end: AnswerEnd, page_images: Mapping[int, str] | None = None) -> dict[str, Any]:
    """``page_images``: each source's page image link (relative) by its number, where it has one."""
    images = page_images or {}
    return {
        "rag_sources": [source_view(c, c.number in end.cited, images.get(c.number)) for c in end.citations],
        "rag_unmatched_citations": list(end.unmatched),
    }


def annotation_views(
    end: AnswerEnd, collection: str, page_urls: Mapping[int, str] | None = None
) -> list[dict[str, Any]]:
    """One ``url_citation`` per citation of a source, ordered by source number, then place.

    Open WebUI lists the distinct URLs in the order they come and opens the k-th for ``[k]``:
    by number, that is source k whenever the answer cites 1..k.  A source with a page image
    (``page_urls``, absolute, by source number) is cited by it; any other by :func:`source_url`.
    """
    urls = page_urls or {}
    by_number = {item.number: item for item in end.citations}
    views: list[dict[str, Any]] = []
    for span in sorted(end.spans, key=lambda s: (s.number, s.start)):
        item = by_number.get(span.number)
        if item is None:
            continue
        citation = {
            "url": urls.get(item.number) or source_url(item, collection),
            "title": source_title(item),
            "start_index": span.start,
            "end_index": span.end,
        }
        views.append({"type": "url_citation", "url_citation": citation})
    return views


def usage_view(usage: Usage) -> dict[str, int]:
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
    }


def completion_body(
    *,
    id_: str,
    model: str,
    text: str,
    end: AnswerEnd,
    extra: dict[str, Any],
    annotations: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if annotations is not None:
        message["annotations"] = annotations
    return {
        "id": id_,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": end.finish_reason,
            }
        ],
        "usage": usage_view(end.usage),
        **extra,
    }


def error_body(status: int, message: str, code: str, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type(status), "param": param, "code": code}}


def error_type(status: int) -> str:
    if status == 401:
        return "authentication_error"
    if status == 403:
        return "permission_error"
    if status == 502:
        return "upstream_error"
    if status == 429:  # the openai SDKs raise RateLimitError on the status and honour Retry-After
        return "rate_limit_error"
    return "server_error" if status >= 500 else "invalid_request_error"


def sse(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"


class ChunkWriter:
    """The ``chat.completion.chunk`` events of one streamed answer (one id, one created time)."""

    def __init__(self, model: str, *, include_usage: bool) -> None:
        self.id = completion_id()
        self.created = int(time.time())
        self.model = model
        self.include_usage = include_usage

    def _chunk(self, choices: list[dict[str, Any]], **extra: Any) -> bytes:
        payload: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
        }
        if self.include_usage:
            payload["usage"] = None
        payload.update(extra)
        return sse(payload)

    def _choice(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}

    def role(self) -> bytes:
        return self._chunk([self._choice({"role": "assistant", "content": ""})])

    def content(self, text: str) -> bytes:
        return self._chunk([self._choice({"content": text})])

    def finish(
        self, reason: str, extra: dict[str, Any], annotations: list[dict[str, Any]] | None = None
    ) -> bytes:
        delta = {} if annotations is None else {"annotations": annotations}
        return self._chunk([self._choice(delta, reason)], **extra)

    def usage(self, usage: Usage) -> bytes:
        return self._chunk([], usage=usage_view(usage))

    @staticmethod
    def error(status: int, message: str, code: str) -> bytes:
        return sse(error_body(status, message, code))


def _snippet(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SNIPPET_CHARS else flat[:SNIPPET_CHARS].rstrip() + "…"
