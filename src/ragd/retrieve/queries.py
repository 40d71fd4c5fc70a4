"""Which queries a search runs: explicit ones, else generated from the conversation, else the last turn.

Generation asks the LLM for JSON ``{"queries": [...]}``; the parser also accepts
a bare JSON list, a fenced code block or one query per line, because small
local models do not always follow the format.  A generation failure never fails
the search: it falls back to the last user message and is counted.  So does a
generation that outlasts its share of the search's deadline (``budget_s``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from ragd.errors import RagError
from ragd.llm.base import ChatModel
from ragd.observe.metrics import Metrics
from ragd.prompts import QUERY_GENERATION, fill
from ragd.settings import QueryGenerationSettings
from ragd.types import Message

log = logging.getLogger(__name__)

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")
MAX_QUERY_CHARS = 2000


def last_user_message(messages: Sequence[Message]) -> str | None:
    for message in reversed(messages):
        if message.role == "user" and message.content.strip():
            return message.content
    return None


def render_history(messages: Sequence[Message], limit: int) -> str:
    return "\n".join(f"{m.role.upper()}: {m.content}" for m in messages[-limit:])


def parse_queries(text: str, max_queries: int) -> list[str]:
    """Queries from a model's answer, cleaned, de-duplicated and capped."""
    body = text.strip()
    fenced = _FENCE.search(body)
    if fenced:
        body = fenced.group(1).strip()
    candidates: list[object]
    try:
        parsed = json.loads(body)
    except ValueError:
        lines = [_BULLET.sub("", line).strip().strip('"') for line in body.splitlines()]
        candidates = [line for line in lines if line and not line.startswith(("{", "}", "[", "]"))]
    else:
        if isinstance(parsed, dict):
            parsed = parsed.get("queries", [])
        candidates = parsed if isinstance(parsed, list) else []
    out: list[str] = []
    for item in candidates:
        query = str(item).strip()[:MAX_QUERY_CHARS] if isinstance(item, str) else ""
        if query and query not in out:
            out.append(query)
    return out[:max_queries]


@dataclass(frozen=True, slots=True)
class QueryGenerator:
    """Asks the LLM for search queries that answer the conversation's latest turn."""

    model: ChatModel
    settings: QueryGenerationSettings
    metrics: Metrics | None = None

    async def generate(self, messages: Sequence[Message], template: str | None = None) -> list[str]:
        prompt = fill(
            template or self.settings.prompt_template or QUERY_GENERATION,
            current_date=datetime.now(UTC).date().isoformat(),
            chat_history=render_history(messages, self.settings.history_messages),
            max_queries=self.settings.max_queries,
        )
        try:
            answer = await self.model.complete([Message("user", prompt)], max_tokens=256)
        except RagError as exc:
            log.warning("query generation failed, using the last user message: %s", exc.code)
            self.count("failed")
            return []
        queries = parse_queries(answer.text, self.settings.max_queries)
        self.count("generated" if queries else "empty")
        return queries

    def count(self, outcome: str) -> None:
        if self.metrics:
            self.metrics.query_generation.labels(outcome).inc()


async def resolve_queries(
    queries: Sequence[str],
    messages: Sequence[Message],
    generator: QueryGenerator | None,
    template: str | None = None,
    *,
    budget_s: float | None = None,
) -> list[str]:
    """Explicit queries first; else generated from ``messages`` (within ``budget_s``); else the last
    user message."""
    explicit = [q for q in queries if q.strip()]
    if explicit:
        return list(dict.fromkeys(explicit))
    if messages and generator is not None:
        try:
            async with asyncio.timeout(budget_s):
                generated = await generator.generate(messages, template)
        except TimeoutError:
            log.warning("query generation took over %ss, using the last user message", budget_s)
            generator.count("timeout")
            generated = []
        if generated:
            return generated
    last = last_user_message(messages)
    return [last] if last else []
