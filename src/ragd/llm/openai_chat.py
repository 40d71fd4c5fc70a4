"""An OpenAI-compatible chat model through the official ``openai`` async client.

Retries are the client's own (``max_retries`` with backoff on connect errors,
408/409/429/5xx); ``timeout_s`` bounds one call *including* its retries (the
client alone would wait ``timeout_s`` per attempt).  Every failure becomes an
:class:`~ragd.errors.UpstreamFailed` naming the model and the status, never
the API key, and so does a 200 whose body is not a chat completion.
:class:`OpenAIChatModel` is one configured model (query generation);
:class:`OpenAICompletions` serves the chat proxy, any model by name, streaming or not.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from typing import Any, TypeVar

import httpx
import openai
from openai.types import CompletionUsage
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from ragd.errors import ConfigurationError, UpstreamFailed
from ragd.llm.base import Completion, StreamDelta, ToolSpec
from ragd.llm.payload_log import log_request
from ragd.settings import LlmSettings
from ragd.types import Message, ToolCall

log = logging.getLogger(__name__)
T = TypeVar("T")


class OpenAIChatModel:
    def __init__(self, client: openai.AsyncOpenAI, model: str, *, deadline_s: float = 120.0) -> None:
        self._client = client
        self.model = model
        self._deadline_s = deadline_s

    @classmethod
    def from_settings(cls, settings: LlmSettings) -> OpenAIChatModel:
        if not settings.base_url or not settings.model:
            raise ConfigurationError(
                "the LLM needs a base URL and a model", hint="set RAGD_LLM__BASE_URL and RAGD_LLM__MODEL"
            )
        key = settings.api_key.get_secret_value() if settings.api_key else "unused"
        client = openai.AsyncOpenAI(
            base_url=settings.base_url, api_key=key, timeout=settings.timeout_s, max_retries=settings.retries
        )
        return cls(client, settings.model, deadline_s=settings.timeout_s)

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        tools: Sequence[ToolSpec] = (),
    ) -> Completion:
        body = [wire_message(m) for m in messages]
        wired = [wire_tool(t) for t in tools]
        sent = {"messages": body, "temperature": temperature, "max_tokens": max_tokens, "tools": wired}
        log_request("complete", self.model, sent)
        response = await bounded(
            self._client.chat.completions.create(
                model=self.model,
                messages=body,
                temperature=temperature,
                max_tokens=max_tokens or openai.omit,
                tools=wired or openai.omit,
            ),
            self.model,
            self._deadline_s,
        )
        return to_completion(response, self.model)

    async def aclose(self) -> None:
        await self._client.close()


class OpenAICompletions:
    """The chat proxy's endpoint: any model by name, request fields passed on, streaming or not."""

    def __init__(self, client: openai.AsyncOpenAI, *, deadline_s: float = 120.0) -> None:
        self._client = client
        self._deadline_s = deadline_s

    @classmethod
    def from_settings(cls, settings: LlmSettings, *, timeout_s: float, retries: int) -> OpenAICompletions:
        if not settings.base_url:
            raise ConfigurationError("the chat proxy needs an upstream", hint="set RAGD_LLM__BASE_URL")
        key = settings.api_key.get_secret_value() if settings.api_key else "unused"
        client = openai.AsyncOpenAI(
            base_url=settings.base_url, api_key=key, timeout=timeout_s, max_retries=retries
        )
        return cls(client, deadline_s=timeout_s)

    async def create(
        self,
        model: str,
        messages: Sequence[Message],
        *,
        params: Mapping[str, Any] | None = None,
        tools: Sequence[ToolSpec] = (),
        tool_choice: str | None = None,
    ) -> Completion:
        logged = {"messages": [wire_message(m) for m in messages], "tools": [wire_tool(t) for t in tools]}
        log_request("chat", model, {**logged, **(params or {})})
        response = await bounded(
            self._client.chat.completions.create(
                model=model,
                messages=[wire_message(m) for m in messages],
                tools=[wire_tool(t) for t in tools] if tools else openai.omit,
                tool_choice=tool_choice if tools and tool_choice else openai.omit,  # type: ignore[arg-type]
                extra_body=dict(params or {}),
            ),
            model,
            self._deadline_s,
        )
        return to_completion(response, model)

    async def stream(
        self,
        model: str,
        messages: Sequence[Message],
        *,
        params: Mapping[str, Any] | None = None,
        include_usage: bool = False,
    ) -> AsyncIterator[StreamDelta]:
        log_request("chat stream", model, {"messages": [wire_message(m) for m in messages], **(params or {})})
        chunks = await bounded(
            self._client.chat.completions.create(
                model=model,
                messages=[wire_message(m) for m in messages],
                stream=True,
                stream_options={"include_usage": True} if include_usage else openai.omit,
                extra_body=dict(params or {}),
            ),
            model,
            self._deadline_s,
        )
        return _deltas(chunks, model)

    async def aclose(self) -> None:
        await self._client.close()


async def _deltas(chunks: openai.AsyncStream[ChatCompletionChunk], model: str) -> AsyncIterator[StreamDelta]:
    finish: str | None = None
    usage: CompletionUsage | None = None
    try:
        async for chunk in chunks:
            usage = chunk.usage or usage
            for choice in chunk.choices[:1]:
                finish = choice.finish_reason or finish
                if choice.delta.content:
                    yield StreamDelta(text=choice.delta.content)
    except (openai.APIError, httpx.HTTPError) as exc:
        raise UpstreamFailed(f"LLM {model!r} broke off its stream: {type(exc).__name__}") from exc
    finally:
        await asyncio.shield(chunks.close())
    yield StreamDelta(
        finish_reason=finish or "stop",
        prompt_tokens=usage.prompt_tokens if usage else None,
        completion_tokens=usage.completion_tokens if usage else None,
    )


async def bounded(request: Awaitable[T], model: str, deadline_s: float) -> T:
    """``request``'s result within ``deadline_s`` (retries included), vendor errors as ragd's."""
    try:
        async with asyncio.timeout(deadline_s):
            return await request
    except TimeoutError as exc:
        raise UpstreamFailed(
            f"LLM {model!r} gave no answer within {deadline_s:g} s",
            hint="check the upstream, or raise RAGD_CHAT__TIMEOUT_S / RAGD_LLM__TIMEOUT_S",
        ) from exc
    except openai.APIError as exc:
        raise upstream_error(exc, model) from exc


def upstream_error(exc: openai.APIError, model: str) -> UpstreamFailed:
    """A vendor error as ragd's, naming the model and the status, never the key."""
    if isinstance(exc, openai.APIStatusError):
        return UpstreamFailed(f"LLM {model!r} answered HTTP {exc.status_code}")
    if isinstance(exc, openai.APITimeoutError):
        return UpstreamFailed(f"LLM {model!r} timed out")
    if isinstance(exc, openai.APIConnectionError):
        return UpstreamFailed(f"LLM {model!r} could not be reached")
    return UpstreamFailed(f"LLM {model!r} failed: {type(exc).__name__}")


def to_completion(response: ChatCompletion, model: str) -> Completion:
    """ragd's record of a completion; a body of the wrong shape (the SDK parses leniently: a 200 with
    text or other JSON comes back as a string or a half-empty object) is an upstream failure."""
    try:
        if not response.choices:
            raise UpstreamFailed(f"LLM {model!r} returned no choices")
        usage = response.usage
        choice = response.choices[0]
        calls = tuple(
            ToolCall(id=c.id, name=c.function.name, arguments=c.function.arguments or "")
            for c in choice.message.tool_calls or ()
            if c.type == "function"
        )
        return Completion(
            text=choice.message.content or "",
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            tool_calls=calls,
            finish_reason=choice.finish_reason,
        )
    except (AttributeError, TypeError, IndexError, KeyError) as exc:
        raise UpstreamFailed(
            f"LLM {model!r} answered with something that is not a chat completion ({type(exc).__name__})"
        ) from exc


def wire_message(message: Message) -> Any:
    """A :class:`Message` in the chat-completions wire format."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    return out


def wire_tool(tool: ToolSpec) -> Any:
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": dict(tool.parameters)},
    }
