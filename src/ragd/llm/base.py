"""The LLM port: an OpenAI-compatible chat model, as far as the use-cases need it.

One adapter (``openai_chat``) speaks to any OpenAI-compatible endpoint
(Ollama, vLLM, LiteLLM, OpenAI) through the maintained ``openai`` client;
``http_upstream`` relays the chat proxy's passthrough requests byte for byte (httpx).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
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


@dataclass(frozen=True, slots=True)
class StreamDelta:
    """One event of a streamed answer: a piece of text, or (last) why it stopped and the tokens used.

    Token counts are None when the endpoint did not report them.
    """

    text: str = ""
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class ChatCompletions(Protocol):
    """A chat-completions endpoint serving any model by name, as the chat proxy needs it.

    ``params`` are OpenAI request fields passed on as given (``temperature``, ``max_tokens``,
    ``stop`` …).  Errors: :class:`ragd.errors.UpstreamFailed`, also from inside a stream.
    """

    async def create(
        self,
        model: str,
        messages: Sequence[Message],
        *,
        params: Mapping[str, Any] | None = None,
        tools: Sequence[ToolSpec] = (),
        tool_choice: str | None = None,
    ) -> Completion:
        """One non-streaming turn; with ``tools`` the model may answer with tool calls."""
        ...

    async def stream(
        self,
        model: str,
        messages: Sequence[Message],
        *,
        params: Mapping[str, Any] | None = None,
        include_usage: bool = False,
    ) -> AsyncIterator[StreamDelta]:
        """Open a streamed turn (connection errors and HTTP errors raise here), then iterate its
        text deltas; the last event carries the finish reason (and usage when asked)."""
        ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Forwarded:
    """An upstream response being relayed: status, the headers worth relaying, the body as it arrives.

    ``body`` raises :class:`ragd.errors.UpstreamFailed` when the upstream breaks off mid-body;
    ``aclose`` releases the connection (safe to call twice).
    """

    status: int
    headers: Mapping[str, str]
    body: AsyncIterator[bytes]
    aclose: Callable[[], Awaitable[None]]


class Upstream(Protocol):
    """Byte-exact passthrough to an OpenAI-compatible endpoint.

    Errors: :class:`ragd.errors.UpstreamFailed` when it cannot be reached or times out.  An HTTP
    error the upstream answers is not an error here: it is relayed as it is.
    """

    async def forward(self, body: bytes, headers: Mapping[str, str]) -> Forwarded:
        """``POST /chat/completions`` with ``body`` unchanged; the response is streamed back."""
        ...

    async def models(self) -> list[dict[str, Any]]:
        """The upstream's ``GET /models`` ``data`` entries."""
        ...

    async def relay(self, method: str, target: str, body: bytes, headers: Mapping[str, str]) -> Forwarded:
        """Any other request, ``body`` unchanged: ``target`` is the raw path and query as received;
        ``/v1/…`` goes under the base URL (``/v1/embeddings`` -> ``<base>/embeddings``), any other path
        to the upstream's origin.  The caller's credentials and hop-by-hop headers are not sent."""
        ...

    async def aclose(self) -> None: ...
