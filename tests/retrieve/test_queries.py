"""Query resolution and LLM query generation, against a scripted OpenAI-compatible upstream."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from ragd.errors import ConfigurationError
from ragd.llm.openai_chat import OpenAIChatModel
from ragd.observe.metrics import Metrics
from ragd.prompts import QUERY_GENERATION, fill
from ragd.retrieve.queries import QueryGenerator, last_user_message, parse_queries, resolve_queries
from ragd.settings import LlmSettings, QueryGenerationSettings
from ragd.types import Message
from tests.support.scripted_http import Reply, ScriptedServer

CHAT = "/v1/chat/completions"
TALK = (
    Message("user", "Tell me about deployments"),
    Message("assistant", "Sure."),
    Message("user", "When do they run?"),
)


def completion(text: str) -> Reply:
    return Reply.json(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49},
        }
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '{"queries": ["beta deployment schedule", "beta release day"]}',
            ["beta deployment schedule", "beta release day"],
        ),
        ('```json\n{"queries": ["a"]}\n```', ["a"]),
        ('["x", "y", "x", ""]', ["x", "y"]),
        ("1. first query\n2) second query\n- third", ["first query", "second query", "third"]),
        ('{"queries": []}', []),
        ('{"queries": [1, null, "ok"]}', ["ok"]),
        ('{"other": "shape"}', []),
        ('{"queries": ["a", "b", "c", "d", "e"]}', ["a", "b", "c"]),
    ],
)
def test_parse_queries(text: str, expected: list[str]) -> None:
    assert parse_queries(text, max_queries=3) == expected


def test_fill_leaves_unknown_placeholders_and_unescapes_braces() -> None:
    assert fill("{a} {{x}} {b} {", a=1) == "1 {x} {b} {"
    assert "{chat_history}" not in fill(QUERY_GENERATION, current_date="d", chat_history="h", max_queries=2)


def test_last_user_message_skips_blank_and_other_roles() -> None:
    assert last_user_message([*TALK, Message("user", "  "), Message("assistant", "x")]) == "When do they run?"
    assert last_user_message([Message("system", "s")]) is None


@pytest.fixture
async def metrics() -> Metrics:
    return Metrics()


@pytest.fixture
async def gen(scripted_server: ScriptedServer, metrics: Metrics) -> AsyncIterator[QueryGenerator]:
    llm = OpenAIChatModel.from_settings(
        LlmSettings(base_url=f"{scripted_server.url}/v1", model="m", retries=0, timeout_s=5)  # type: ignore[arg-type]
    )
    yield QueryGenerator(llm, QueryGenerationSettings(history_messages=2), metrics)
    await llm.aclose()


async def test_generated_queries_from_the_conversation(
    scripted_server: ScriptedServer, gen: QueryGenerator, metrics: Metrics
) -> None:
    scripted_server.expect("POST", CHAT, completion('{"queries": ["beta deployment day"]}'))
    assert await resolve_queries([], TALK, gen) == ["beta deployment day"]
    sent = scripted_server.requests[0].json
    assert sent["model"] == "m"
    prompt = sent["messages"][0]["content"]
    assert "USER: When do they run?" in prompt
    assert "ASSISTANT: Sure." in prompt
    assert "Tell me about deployments" not in prompt  # history_messages=2
    assert b'query_generation_total{outcome="generated"} 1.0' in metrics.render()


async def test_explicit_queries_win_and_the_llm_is_not_called(
    scripted_server: ScriptedServer, gen: QueryGenerator
) -> None:
    assert await resolve_queries(["a", "a", " ", "b"], TALK, gen) == ["a", "b"]
    assert scripted_server.requests == []


async def test_request_template_overrides_the_prompt(
    scripted_server: ScriptedServer, gen: QueryGenerator
) -> None:
    scripted_server.expect("POST", CHAT, completion('["q"]'))
    await resolve_queries([], TALK, gen, template="Custom {{json}} for {chat_history}")
    assert (
        scripted_server.requests[0]
        .json["messages"][0]["content"]
        .startswith("Custom {json} for ASSISTANT: Sure.")
    )


@pytest.mark.parametrize("reply", [Reply.error(500), completion("no queries here {"), Reply.dropped()])
async def test_generation_failure_falls_back_to_the_last_user_message(
    scripted_server: ScriptedServer, gen: QueryGenerator, reply: Reply
) -> None:
    scripted_server.expect("POST", CHAT, reply)
    queries = await resolve_queries([], TALK, gen)
    assert queries in (["When do they run?"], ["no queries here {"])


async def test_no_llm_means_last_user_message_and_nothing_means_nothing() -> None:
    assert await resolve_queries([], TALK, None) == ["When do they run?"]
    assert await resolve_queries([], [Message("assistant", "hi")], None) == []


def test_llm_needs_url_and_model() -> None:
    with pytest.raises(ConfigurationError, match="RAGD_LLM__BASE_URL"):
        OpenAIChatModel.from_settings(LlmSettings(model="m"))  # type: ignore[call-arg]
