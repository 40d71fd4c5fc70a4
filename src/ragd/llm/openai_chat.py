"""An OpenAI-compatible chat model through the official ``openai`` async client.

Timeouts and retries are the client's own (``max_retries`` with backoff on
connect errors, 408/409/429/5xx).  Every failure becomes an
:class:`~ragd.errors.UpstreamFailed` naming the model and the status, never
the API key.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import openai

from ragd.errors import ConfigurationError, UpstreamFailed
from ragd.llm.base import Completion, ToolSpec
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
        except openai.APIStatusError as exc:
            raise UpstreamFailed(f"LLM {self.model!r} answered HTTP {exc.status_code}") from exc
        except openai.APITimeoutError as exc:
            raise UpstreamFailed(f"LLM {self.model!r} timed out") from exc
        except openai.APIError as exc:
            raise UpstreamFailed(f"LLM {self.model!r} failed: {type(exc).__name__}") from exc
        if not response.choices:
            raise UpstreamFailed(f"LLM {self.model!r} returned no choices")
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

    async def aclose(self) -> None:
        await self._client.close()


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
