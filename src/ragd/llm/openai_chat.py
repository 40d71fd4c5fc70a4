"""An OpenAI-compatible chat model through the official ``openai`` async client.

Timeouts and retries are the client's own (``max_retries`` with backoff on
connect errors, 408/409/429/5xx).  Every failure becomes an
:class:`~ragd.errors.UpstreamFailed` naming the model and the status, never
the API key.  :class:`OpenAIChatModel` is one configured model (query
generation); :class:`OpenAICompletions` serves the chat proxy, any model by
name, streaming or not.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import httpx
import openai
from openai.types import CompletionUsage
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from ragd.errors import ConfigurationError, UpstreamFailed
from ragd.llm.base import Completion, StreamDelta, ToolSpec
from ragd.settings import LlmSettings
from ragd.types import Message, ToolCall

log = logging.getLogger(__name__)


class OpenAIChatModel:
    def __init__(self, client: openai.AsyncOpenAI, model: str) -> None:
        self._client = client
        self.model = model

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
        return cls(client, settings.model)

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        tools: Sequence[ToolSpec] = (),
    ) -> Completion:
        body = [wire_message(m) for m in messages]
        try:
            response = await self._client.chat.completions.create(
                model=self.model,
                messages=body,
                temperature=temperature,
                max_tokens=max_tokens or openai.omit,
                tools=[wire_tool(t) for t in tools] if tools else openai.omit,
            )
        except openai.APIError as exc:
            raise upstream_error(exc, self.model) from exc
        return to_completion(response, self.model)

    async def aclose(self) -> None:
        await self._client.close()


class OpenAICompletions:
    """The chat proxy's endpoint: any model by name, request fields passed on, streaming or not."""

    def __init__(self, client: openai.AsyncOpenAI) -> None:
        self._client = client

    @classmethod
    def from_settings(cls, settings: LlmSettings, *, timeout_s: float, retries: int) -> OpenAICompletions:
        if not settings.base_url:
            raise ConfigurationError("the chat proxy needs an upstream", hint="set RAGD_LLM__BASE_URL")
        key = settings.api_key.get_secret_value() if settings.api_key else "unused"
        client = openai.AsyncOpenAI(
            base_url=settings.base_url, api_key=key, timeout=timeout_s, max_retries=retries
        )
        return cls(client)

    async def create(
        self,
        model: str,
        messages: Sequence[Message],
        *,
        params: Mapping[str, Any] | None = None,
        tools: Sequence[ToolSpec] = (),
        tool_choice: str | None = None,
    ) -> Completion:
        try:
            response = await self._client.chat.completions.create(
                model=model,
                messages=[wire_message(m) for m in messages],
                tools=[wire_tool(t) for t in tools] if tools else openai.omit,
                tool_choice=tool_choice if tools and tool_choice else openai.omit,  # type: ignore[arg-type]
                extra_body=dict(params or {}),
            )
        except openai.APIError as exc:
            raise upstream_error(exc, model) from exc
        return to_completion(response, model)

    async def stream(
        self,
        model: str,
        messages: Sequence[Message],
        *,
        params: Mapping[str, Any] | None = None,
        include_usage: bool = False,
    ) -> AsyncIterator[StreamDelta]:
        try:
            chunks = await self._client.chat.completions.create(
                model=model,
                messages=[wire_message(m) for m in messages],
                stream=True,
                stream_options={"include_usage": True} if include_usage else openai.omit,
                extra_body=dict(params or {}),
            )
        except openai.APIError as exc:
            raise upstream_error(exc, model) from exc
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
