"""The LLM port: an OpenAI-compatible chat model, as far as the use-cases need it.

One adapter (``openai_chat``) speaks to any OpenAI-compatible endpoint
(Ollama, vLLM, LiteLLM, OpenAI) through the maintained ``openai`` client.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ragd.types import Message


@dataclass(frozen=True, slots=True)
class Completion:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


class ChatModel(Protocol):
    """Errors: :class:`ragd.errors.UpstreamFailed` (network, timeout, HTTP error, empty answer)."""

    model: str

    async def complete(
        self, messages: Sequence[Message], *, max_tokens: int | None = None, temperature: float = 0.0
    ) -> Completion:
        """One non-streaming completion."""
        ...

    async def aclose(self) -> None: ...
