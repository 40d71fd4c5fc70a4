"""The records of the answer use-case: a chat request in, an answer (or its stream of events) out."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ragd.types import Citation, Message, SearchKnobs


@dataclass(frozen=True, slots=True)
class ChatRequest:
    model: str  # the upstream model that answers
    collection: str
    messages: tuple[Message, ...]
    top_k: int
    tools: bool = True
    #: how sources are retrieved: relevance floor, fusion weight, diversity, near-duplicates
    knobs: SearchKnobs = field(default_factory=SearchKnobs)
    #: each source's text given to the model is cut at this many characters; None: not cut
    source_max_chars: int | None = None
    #: OpenAI request fields passed on as given (temperature, max_tokens, stop …)
    params: Mapping[str, Any] = field(default_factory=dict)
    include_usage: bool = False


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def plus(self, prompt: int | None, completion: int | None) -> Usage:
        return Usage(self.prompt_tokens + (prompt or 0), self.completion_tokens + (completion or 0))


@dataclass(frozen=True, slots=True)
class AnswerDelta:
    text: str


@dataclass(frozen=True, slots=True)
class CitedSpan:
    """Source ``number`` cited at ``text[start:end]``: a whole ``[n]``, or ``n`` inside ``[1, 2]``."""

    number: int
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class AnswerEnd:
    finish_reason: str
    usage: Usage
    citations: tuple[Citation, ...]
    #: the numbers the answer cites, and those of them no source carries
    cited: tuple[int, ...]
    unmatched: tuple[int, ...]
    #: where the answer's text cites a source it was given, in text order (unmatched ones left out)
    spans: tuple[CitedSpan, ...] = ()


@dataclass(frozen=True, slots=True)
class Answer:
    text: str
    end: AnswerEnd
    retrieved: bool


@dataclass(frozen=True, slots=True)
class AnswerStream:
    retrieved: bool
    events: AsyncIterator[AnswerDelta | AnswerEnd]
