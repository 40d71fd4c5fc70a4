"""The agent's two tools: what the model is shown, and how its answers are read.

    search_documents(queries: [str])                       the first round's queries
    grade(relevant: [int], verdict: accept|retry, queries: [str])   after every round

The model sees numbered *previews* (the first ``preview_chars`` of each hit); full texts stay with
the caller.  Reading is strict for ``grade`` (anything off is ``None``: the caller accepts what it
has) and lenient for the queries, because small local models often answer with text: a JSON list
or one query per line is taken as the queries.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ragd.llm.base import Completion, ToolSpec
from ragd.prompts import AGENT_GRADE, AGENT_GRADE_TOOL, AGENT_QUERIES, AGENT_SEARCH_TOOL, fill
from ragd.retrieve.queries import MAX_QUERY_CHARS, last_user_message, parse_queries, render_history
from ragd.types import ChunkMeta, Hit, Message, ParsedEnum

SEARCH = "search_documents"
GRADE = "grade"


class Verdict(ParsedEnum):
    ACCEPT = "accept"
    RETRY = "retry"


@dataclass(frozen=True, slots=True)
class Grade:
    """The model's grade of a round: 0-based indices of the relevant hits, its verdict, new queries."""

    relevant: tuple[int, ...]
    verdict: Verdict
    queries: tuple[str, ...] = ()


def _queries_schema(max_queries: int) -> dict[str, Any]:
    item = {"type": "string", "maxLength": MAX_QUERY_CHARS}
    return {"type": "array", "items": item, "minItems": 1, "maxItems": max_queries}


def search_tool(max_queries: int) -> ToolSpec:
    return ToolSpec(
        SEARCH,
        AGENT_SEARCH_TOOL,
        {
            "type": "object",
            "properties": {"queries": _queries_schema(max_queries)},
            "required": ["queries"],
        },
    )


def grade_tool(max_queries: int) -> ToolSpec:
    properties = {
        "relevant": {"type": "array", "items": {"type": "integer", "minimum": 1}},
        "verdict": {"type": "string", "enum": [v.value for v in Verdict]},
        "queries": _queries_schema(max_queries),
    }
    return ToolSpec(
        GRADE,
        AGENT_GRADE_TOOL,
        {"type": "object", "properties": properties, "required": ["relevant", "verdict"]},
    )


def query_messages(
    messages: Sequence[Message], max_queries: int, *, history_turns: int, system_prompt: str | None = None
) -> list[Message]:
    """The first step's request: the system prompt (``system_prompt`` when set and not blank, else
    the built-in one) and the conversation's last ``history_turns`` messages."""
    template = system_prompt if system_prompt and system_prompt.strip() else AGENT_QUERIES
    system = fill(template, max_queries=max_queries, current_date=datetime.now(UTC).date().isoformat())
    history = render_history(messages, history_turns)
    return [Message("system", system), Message("user", f"### Chat history\n{history}")]


def preview(hit: Hit, chars: int) -> str:
    """The start of a hit's text, white space folded, cut at ``chars`` with an ellipsis."""
    text = " ".join(hit.content.split())
    return text if len(text) <= chars else text[:chars].rstrip() + "…"


def grade_messages(
    question: str, queries: Sequence[str], hits: Sequence[Hit], *, preview_chars: int, max_queries: int
) -> list[Message]:
    ran = "\n".join(f"- {q}" for q in queries)
    results = "\n\n".join(_numbered(i, hit, preview_chars) for i, hit in enumerate(hits, 1))
    body = f"### Question\n{question}\n\n### Queries run\n{ran}\n\n### Results\n{results or '(none)'}"
    return [Message("system", fill(AGENT_GRADE, max_queries=max_queries)), Message("user", body)]


def _numbered(number: int, hit: Hit, chars: int) -> str:
    name = ChunkMeta.parse(hit.meta).name
    label = f" ({name})" if name else ""
    return f"[{number}]{label} {preview(hit, chars)}"


def question_of(messages: Sequence[Message], queries: Sequence[str]) -> str:
    """What the results are graded against: the user's latest message, else the queries."""
    return last_user_message(messages) or "; ".join(queries)


def _arguments(completion: Completion, name: str) -> dict[str, Any] | None:
    for call in completion.tool_calls:
        if call.name == name:
            try:
                parsed = json.loads(call.arguments or "{}")
            except ValueError:
                return None
            return parsed if isinstance(parsed, dict) else None
    return None


def _clean_queries(value: object, max_queries: int) -> list[str]:
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    out: list[str] = []
    for item in items:
        query = item.strip()[:MAX_QUERY_CHARS] if isinstance(item, str) else ""
        if query and query not in out:
            out.append(query)
    return out[:max_queries]


def read_queries(completion: Completion, max_queries: int) -> tuple[list[str], bool]:
    """The queries of a ``search_documents`` call, else parsed from the text; True when from text."""
    args = _arguments(completion, SEARCH)
    queries = _clean_queries(args.get("queries"), max_queries) if args else []
    if queries:
        return queries, False
    return parse_queries(completion.text, max_queries), True


def read_grade(completion: Completion, shown: int, max_queries: int) -> Grade | None:
    """The ``grade`` call for ``shown`` numbered results, or None when it is missing or malformed."""
    args = _arguments(completion, GRADE)
    if args is None:
        return None
    try:
        verdict: Verdict = Verdict.parse(str(args.get("verdict")))
    except ValueError:
        return None
    numbers = args.get("relevant", [])
    if not isinstance(numbers, list) or not all(
        isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= shown for n in numbers
    ):
        return None
    relevant = tuple(sorted({n - 1 for n in numbers}))
    queries = _clean_queries(args.get("queries"), max_queries) if verdict is Verdict.RETRY else []
    return Grade(relevant, verdict, tuple(queries))
