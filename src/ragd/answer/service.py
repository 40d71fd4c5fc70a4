"""The answer use-case: retrieve, number the context, let the model use tools, answer with citations.

    ChatRequest -> search (the /search pipeline) -> [Citation] cut to the token budget
                -> system instructions + numbered context + the conversation
                -> tool rounds (non-streaming, bounded) -> final answer (returned, or streamed)
                -> text citing [n] + the sources + the markers that point at no source

A streamed answer is *opened* before it is returned — retrieval, tool rounds and the upstream's
response headers are done — so an unknown collection or a failing upstream is an HTTP error
status, not a broken stream.  When a tool round already produced the final text, that text is
the stream.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

from ragd.answer.citations import cited_numbers, cited_spans, unmatched
from ragd.answer.context import cap_chars, fit_budget, number_hits, render_context, render_sources_list
from ragd.answer.conversation import client_turns, with_instructions
from ragd.answer.records import Answer, AnswerDelta, AnswerEnd, AnswerStream, ChatRequest, Usage
from ragd.answer.sources import SourceBook
from ragd.answer.tools import ToolBox
from ragd.chunk.base import TokenCounter
from ragd.embed.spaces import DenseSpaces
from ragd.errors import NotFound
from ragd.llm.base import ChatCompletions, Completion, StreamDelta
from ragd.observe.metrics import Metrics
from ragd.prompts import NO_RELEVANT_DOCUMENTS, RAG_SOURCES_LIST, RAG_SYSTEM, RAG_TOOL_HINT, fill
from ragd.retrieve.pipeline import PipelineRequest, Searcher
from ragd.settings import ChatSettings
from ragd.store.base import VectorStore
from ragd.types import Citation, Hit, Message, PointFilter, PromptStyle, SearchMode

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Prepared:
    messages: list[Message]
    book: SourceBook
    tools: ToolBox | None
    retrieved: bool
    usage: Usage = field(default_factory=Usage)
    final: Completion | None = None


class ChatAnswerer:
    def __init__(
        self,
        *,
        searcher: Searcher,
        store: VectorStore,
        llm: ChatCompletions,
        counter: TokenCounter,
        settings: ChatSettings,
        mode: SearchMode = SearchMode.HYBRID,
        search_deadline_s: float | None = None,
        metrics: Metrics | None = None,
        spaces: DenseSpaces | None = None,
    ) -> None:
        """``spaces``: which version of a migrating dataset's chunks a document is read from."""
        self._spaces = spaces
        self._searcher = searcher
        self._store = store
        self._llm = llm
        self._counter = counter
        self._settings = settings
        self._mode = mode
        self._deadline = search_deadline_s
        self._metrics = metrics or Metrics()

    async def answer(self, request: ChatRequest) -> Answer:
        prepared = await self._prepare(request)
        final, usage = prepared.final, prepared.usage
        if final is None:
            final = await self._llm.create(request.model, prepared.messages, params=request.params)
            usage = usage.plus(final.prompt_tokens, final.completion_tokens)
        end = _end(final.text, final.finish_reason or "stop", usage, prepared.book)
        return Answer(text=final.text, end=end, retrieved=prepared.retrieved)

    async def stream(self, request: ChatRequest) -> AnswerStream:
        prepared = await self._prepare(request)
        if prepared.final is not None:
            return AnswerStream(prepared.retrieved, _replay(prepared.final, prepared))
        deltas = await self._llm.stream(
            request.model, prepared.messages, params=request.params, include_usage=request.include_usage
        )
        return AnswerStream(prepared.retrieved, _relay(deltas, prepared))

    async def _prepare(self, request: ChatRequest) -> _Prepared:
        turns = client_turns(request.messages)
        if request.top_k <= 0:
            return _Prepared(turns, SourceBook(), None, retrieved=False)
        citations = await self._context(request, turns)
        book = SourceBook(citations)
        if not citations:  # nothing relevant enough: say so, rather than let the model guess
            return _Prepared(with_instructions(turns, NO_RELEVANT_DOCUMENTS), book, None, retrieved=True)
        tools = self._toolbox(request, book)
        instructions = self._instructions(citations, tools is not None)
        prepared = _Prepared(with_instructions(turns, instructions), book, tools, retrieved=True)
        if tools is not None:
            await self._tool_rounds(request, prepared)
        return prepared

    def _instructions(self, citations: Sequence[Citation], tools: bool) -> str:
        """The system message: the sources in the configured style (RAGD_CHAT__PROMPT_STYLE)."""
        hint = RAG_TOOL_HINT if tools else ""
        if self._settings.prompt_style is PromptStyle.SOURCES_LIST:
            return fill(RAG_SOURCES_LIST, context=render_sources_list(citations), tool_hint=hint)
        return fill(RAG_SYSTEM, context=render_context(citations), tool_hint=hint)

    async def _context(self, request: ChatRequest, turns: Sequence[Message]) -> list[Citation]:
        if not await self._store.count(PointFilter(collection_names=(request.collection,))):
            raise NotFound(f"collection {request.collection!r} does not exist (nothing is indexed in it)")
        result = await self._searcher.run(
            PipelineRequest(
                collections=(request.collection,),
                messages=tuple(turns),
                k=request.top_k,
                mode=self._mode,
                deadline_s=self._deadline,
                knobs=request.knobs,
            )
        )
        cited = cap_chars(number_hits(result.hits), request.source_max_chars)
        return fit_budget(cited, self._counter, self._settings.context_token_budget)

    def _toolbox(self, request: ChatRequest, book: SourceBook) -> ToolBox | None:
        if not (request.tools and self._settings.tools_enabled and self._settings.max_tool_iterations):
            return None

        async def search(query: str) -> list[Hit]:
            result = await self._searcher.run(
                PipelineRequest(
                    collections=(request.collection,),
                    queries=(query,),
                    k=max(request.top_k, 1),
                    mode=self._mode,
                    deadline_s=self._deadline,
                    knobs=request.knobs,
                )
            )
            return list(result.hits)

        async def served() -> str | None:
            if self._spaces is None:
                return None
            version = (await self._spaces.versions()).get(request.collection)
            return None if version is None else version.generation

        return ToolBox(
            served=served,
            store=self._store,
            search=search,
            collection=request.collection,
            book=book,
            counter=self._counter,
            budget=self._settings.tool_token_budget,
            metrics=self._metrics,
            style=self._settings.prompt_style,
            source_max_chars=request.source_max_chars,
        )

    async def _tool_rounds(self, request: ChatRequest, prepared: _Prepared) -> None:
        """Up to ``max_tool_iterations`` non-streaming rounds with the tools offered.

        Ends with ``prepared.final`` set when the model answered in text; past the cap it stays
        None and the final answer is asked for without tools.
        """
        assert prepared.tools is not None
        for round_ in range(self._settings.max_tool_iterations):
            turn = await self._llm.create(
                request.model, prepared.messages, params=request.params, tools=prepared.tools.specs
            )
            prepared.usage = prepared.usage.plus(turn.prompt_tokens, turn.completion_tokens)
            if not turn.tool_calls:
                prepared.final = turn
                return
            log.info("tool round %d: %d call(s)", round_ + 1, len(turn.tool_calls))
            prepared.messages.append(Message("assistant", turn.text, tool_calls=turn.tool_calls))
            for call in turn.tool_calls:
                result = await prepared.tools.run(call)
                prepared.messages.append(Message("tool", result, tool_call_id=call.id))
        log.info("tool rounds capped at %d; asking for the answer", self._settings.max_tool_iterations)


def _end(text: str, finish_reason: str, usage: Usage, book: SourceBook) -> AnswerEnd:
    """How an answer ended, from its whole text: both modes call this with the same text."""
    cited = cited_numbers(text)
    known = book.numbers
    return AnswerEnd(
        finish_reason=finish_reason,
        usage=usage,
        citations=book.citations,
        cited=cited,
        unmatched=unmatched(cited, known),
        spans=tuple(span for span in cited_spans(text) if span.number in known),
    )


async def _replay(final: Completion, prepared: _Prepared) -> AsyncIterator[AnswerDelta | AnswerEnd]:
    if final.text:
        yield AnswerDelta(final.text)
    yield _end(final.text, final.finish_reason or "stop", prepared.usage, prepared.book)


async def _relay(
    deltas: AsyncIterator[StreamDelta], prepared: _Prepared
) -> AsyncIterator[AnswerDelta | AnswerEnd]:
    parts: list[str] = []
    usage = prepared.usage
    finish = "stop"
    try:
        async for delta in deltas:
            if delta.text:
                parts.append(delta.text)
                yield AnswerDelta(delta.text)
            if delta.finish_reason:
                finish = delta.finish_reason
                usage = usage.plus(delta.prompt_tokens, delta.completion_tokens)
    finally:
        close = getattr(deltas, "aclose", None)
        if close is not None:
            await close()  # the upstream connection, when the client went away mid-answer
    yield _end("".join(parts), finish, usage, prepared.book)
