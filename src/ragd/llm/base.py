"""The LLM port: an OpenAI-compatible chat model, as far as the use-cases need it.

One adapter (``openai_chat``) speaks to any OpenAI-compatible endpoint
(Ollama, vLLM, LiteLLM, OpenAI) through the maintained ``openai`` client.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ragd.types import Message, ToolCall


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A function the model may call: name, description and a JSON-schema for its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass(frozen=True, slots=True)
class Completion:
    """One model turn: its text and/or tool calls, why it stopped, and the tokens it used."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None


class ChatModel(Protocol):
    """Errors: :class:`ragd.errors.UpstreamFailed` (network, timeout, HTTP error, empty answer)."""

    model: str

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        tools: Sequence[ToolSpec] = (),
    ) -> Completion:
        """One non-streaming completion; with ``tools`` the model may answer with tool calls."""
        ...

    async def aclose(self) -> None: ...
