"""Agentic retrieval: the LLM writes the queries, grades the results and rewrites off-topic ones.

    request -> queries: explicit | search_documents call | parsed from its text | last user message
            -> round: inner search -> merge with what was kept -> numbered previews -> grade
               accept: the hits marked relevant | retry: rewritten or split queries, next round
            -> [Hit][:k]

Bounded three ways: ``max_iterations`` search rounds, a wall-clock ``timeout_s`` (past it, what was
already retrieved comes back: never an error) and a ``token_budget``.  The model never fails a
search: a failing LLM falls back to the plain search, an unreadable grade accepts what was found.
Every step is logged at DEBUG and counted in the ``agent_*`` metrics; the whole loop is the
``agent_loop`` stage of ``retrieval_stage_duration_seconds`` (the retrieval agent's dashboards).
The retrieval agent's ``AGENT_*`` knobs are settings (:class:`~ragd.settings.AgentSettings`):
``system_prompt`` for the query step, ``fetch_k`` hits per round, ``preview_k`` of them graded,
``history_turns`` messages of the conversation shown.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ragd.errors import RagError
from ragd.llm.base import ChatModel, Completion, ToolSpec
from ragd.observe.logging import sanitize
from ragd.observe.metrics import Metrics
from ragd.retrieve.agent_tools import (
    Verdict,
    grade_messages,
    grade_tool,
    query_messages,
    question_of,
    read_grade,
    read_queries,
    search_tool,
)
from ragd.retrieve.pipeline import PipelineRequest, PipelineResult, Searcher
from ragd.retrieve.queries import last_user_message
from ragd.retrieve.ranking import dedup_by_content, merge_best
from ragd.settings import AgentSettings
from ragd.types import Hit, Message, ParsedEnum

log = logging.getLogger(__name__)

#: past the timeout with nothing found yet, one plain search gets this long
RESCUE_S = 2.0
#: the longest answer the model may write (its queries, or a grade)
ANSWER_TOKENS = 512


class StopReason(ParsedEnum):
    ACCEPT = "accept"
    TIMEOUT = "timeout"
    BUDGET = "budget"
    MAX_ITERATIONS = "max_iterations"
    FALLBACK = "fallback"


class _ModelFailed(Exception):
    """The LLM failed: the run goes on without it."""


@dataclass(slots=True)
class _Progress:
    """One run so far; on a timeout it is returned as it stands."""

    queries: list[str] = field(default_factory=list)
    pool: list[Hit] = field(default_factory=list)
    rounds: int = 0
    tokens: int = 0
    rerank: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, result: PipelineResult) -> None:
        self.rounds += 1
        self.queries.extend(q for q in result.queries if q not in self.queries)
        self.pool = dedup_by_content(merge_best([self.pool, result.hits]))
        self.rerank.append(result.rerank)
        self.notes.extend(n for n in result.notes if n not in self.notes)

    def keep(self, relevant: Sequence[int]) -> None:
        """Narrow the pool to the hits graded relevant (all stay when none is)."""
        if relevant:
            self.pool = [self.pool[i] for i in relevant]

    def result(self, k: int, stopped: StopReason) -> PipelineResult:
        outcome = next((o for o in ("rerank_failed", "reranked") if o in self.rerank), "unranked")
        return PipelineResult(
            queries=tuple(self.queries),
            hits=tuple(self.pool[:k]),
            rerank=outcome,
            notes=tuple(self.notes),
            iterations=self.rounds,
            stopped=stopped.value,
        )


def plain_queries(request: PipelineRequest) -> list[str]:
    """What a search without the model runs: the explicit queries, else the last user message."""
    explicit = list(dict.fromkeys(q for q in request.queries if q.strip()))
    last = last_user_message(request.messages)
    return explicit or ([last] if last else [])


class AgenticSearch:
    """A :class:`Searcher` in which the LLM steers another one (the plain search pipeline)."""

    def __init__(
        self, inner: Searcher, llm: ChatModel, settings: AgentSettings, metrics: Metrics | None = None
    ) -> None:
        self._inner = inner
        self._llm = llm
        self._settings = settings
        self._metrics = metrics or Metrics()
        self._tools = (search_tool(settings.max_queries), grade_tool(settings.max_queries))

    async def run(self, request: PipelineRequest) -> PipelineResult:
        progress = _Progress()
        limit = self._settings.timeout_s
        if request.deadline_s is not None:
            limit = min(limit, request.deadline_s)
        with self._metrics.stage("agent_loop"):
            try:
                async with asyncio.timeout(limit):
                    stopped = await self._loop(request, progress)
            except TimeoutError:
                stopped = StopReason.TIMEOUT
                await self._timed_out(request, progress, limit)
        self._metrics.agent_iterations.observe(progress.rounds)
        log.debug(
            "agent stopped (%s) after %d rounds, %d tokens, %d hits",
            stopped.value,
            progress.rounds,
            progress.tokens,
            len(progress.pool),
        )
        return progress.result(request.k, stopped)

    async def _loop(self, request: PipelineRequest, progress: _Progress) -> StopReason:
        try:
            queries = await self._first_queries(request, progress)
        except _ModelFailed:
            self._fallback("llm_failed")
            queries = plain_queries(request)
            if queries:
                await self._search(request, queries, progress)
            return StopReason.FALLBACK
        if not queries:
            return StopReason.ACCEPT
        await self._search(request, queries, progress)
        return await self._graded_rounds(request, progress)

    async def _graded_rounds(self, request: PipelineRequest, progress: _Progress) -> StopReason:
        budget, rounds = self._settings.token_budget, self._settings.max_iterations
        while True:
            if progress.tokens >= budget:
                return StopReason.BUDGET
            try:
                completion = await self._ask(self._grade_prompt(request, progress), self._tools[1], progress)
            except _ModelFailed:
                self._fallback("llm_failed")
                return StopReason.FALLBACK
            shown = len(progress.pool[: self._settings.preview_k])
            grade = read_grade(completion, shown, self._settings.max_queries)
            if grade is None:
                self._fallback("grade_unparsed")
                return StopReason.FALLBACK
            log.debug(
                "agent round %d graded %s, relevant %s", progress.rounds, grade.verdict.value, grade.relevant
            )
            progress.keep(grade.relevant)
            new = [q for q in grade.queries if q not in progress.queries]
            if grade.verdict is Verdict.ACCEPT or not new:
                return StopReason.ACCEPT
            if progress.rounds >= rounds:
                return StopReason.MAX_ITERATIONS
            if progress.tokens >= budget:
                return StopReason.BUDGET
            self._metrics.agent_retries.inc()
            await self._search(request, new, progress)

    async def _first_queries(self, request: PipelineRequest, progress: _Progress) -> list[str]:
        if any(q.strip() for q in request.queries) or not request.messages:
            return plain_queries(request)
        most = self._settings.max_queries
        asked = query_messages(
            request.messages,
            most,
            history_turns=self._settings.history_turns,
            system_prompt=self._settings.system_prompt,
        )
        completion = await self._ask(asked, self._tools[0], progress)
        queries, from_text = read_queries(completion, most)
        if queries and from_text:
            self._fallback("text_queries")
        if not queries:
            self._fallback("last_message")
            queries = plain_queries(request)
        return queries

    def _grade_prompt(self, request: PipelineRequest, progress: _Progress) -> list[Message]:
        return grade_messages(
            question_of(request.messages, progress.queries),
            progress.queries,
            progress.pool[: self._settings.preview_k],
            preview_chars=self._settings.preview_chars,
            max_queries=self._settings.max_queries,
        )

    async def _ask(self, messages: list[Message], tool: ToolSpec, progress: _Progress) -> Completion:
        try:
            completion = await self._llm.complete(messages, max_tokens=ANSWER_TOKENS, tools=(tool,))
        except RagError as exc:
            log.warning("agent step %s: the LLM failed (%s); going on without it", tool.name, exc.code)
            raise _ModelFailed from exc
        progress.tokens += completion.prompt_tokens + completion.completion_tokens
        self._metrics.agent_tokens.labels("prompt").inc(completion.prompt_tokens)
        self._metrics.agent_tokens.labels("completion").inc(completion.completion_tokens)
        log.debug(
            "agent step %s: %d tool calls, %d prompt + %d completion tokens",
            tool.name,
            len(completion.tool_calls),
            completion.prompt_tokens,
            completion.completion_tokens,
        )
        return completion

    async def _search(self, request: PipelineRequest, queries: Sequence[str], progress: _Progress) -> None:
        log.debug("agent round %d searches %s", progress.rounds + 1, [sanitize(q, limit=80) for q in queries])
        fetch = max(self._settings.fetch_k or request.k, request.k)
        progress.add(await self._inner.run(replace(request, queries=tuple(queries), k=fetch)))

    async def _timed_out(self, request: PipelineRequest, progress: _Progress, limit: float) -> None:
        self._metrics.agent_timeouts.inc()
        if "deadline" not in progress.notes:
            progress.notes.append("deadline")
        log.warning("agentic search passed its %ss timeout after %d rounds", limit, progress.rounds)
        queries = plain_queries(request)
        if progress.rounds or not queries:
            return
        try:
            async with asyncio.timeout(RESCUE_S):
                await self._search(replace(request, deadline_s=RESCUE_S), queries, progress)
        except TimeoutError:
            log.warning("the plain search after the agent's timeout took over %ss too", RESCUE_S)

    def _fallback(self, kind: str) -> None:
        log.debug("agent fallback: %s", kind)
        self._metrics.agent_fallbacks.labels(kind).inc()
