"""The LLM request payloads at DEBUG (the retrieval agent's debug logging, seed 002), sanitised.

The real ``openai`` client talks to a scripted chat-completions server on loopback; the log line
is read from caplog and compared with what the server received.
"""

from __future__ import annotations

import logging

import pytest

from ragd.llm.openai_chat import OpenAIChatModel, OpenAICompletions
from ragd.llm.payload_log import TEXT_CHARS
from ragd.settings import LlmSettings
from ragd.types import Message
from tests.support.scripted_http import Reply, ScriptedServer

CHAT = "/v1/chat/completions"
KEY = "sk-live-THE-UPSTREAM-KEY-0123456789"
LONG = "alpha " * 200  # 1200 characters
COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1700000000,
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
}


def _settings(server: ScriptedServer) -> LlmSettings:
    return LlmSettings(base_url=f"{server.url}/v1", model="m", api_key=KEY, retries=0, timeout_s=10)  # type: ignore[call-arg]


def _payload_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "ragd.llm.payload"]


async def test_the_agent_model_request_is_logged_at_debug_cut_escaped_and_without_the_key(
    scripted_server: ScriptedServer, caplog: pytest.LogCaptureFixture
) -> None:
    scripted_server.on("POST", CHAT, lambda _: Reply.json(COMPLETION))
    model = OpenAIChatModel.from_settings(_settings(scripted_server))
    question = "Which \x1b[31mred\x1b[0m rule?\u202e evil\nsecond line"
    try:
        with caplog.at_level(logging.DEBUG, logger="ragd.llm.payload"):
            await model.complete([Message("system", LONG), Message("user", question)], max_tokens=64)
    finally:
        await model.aclose()

    (sent,) = scripted_server.requests_to("POST", CHAT)
    assert sent.json["messages"][0]["content"] == LONG  # the upstream got everything
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    (record,) = _payload_lines(caplog)
    line = record.getMessage()
    assert record.levelno == logging.DEBUG
    assert "LLM request (complete) to m:" in line
    assert KEY not in line
    assert "alpha " * (TEXT_CHARS // 6) in line  # the long text, cut
    assert LONG.strip() not in line
    assert "…" in line
    assert "\x1b" not in line  # control characters escaped …
    assert "\u202e" not in line
    assert "\n" not in line  # … and one line
    assert "red" in line
    assert '"max_tokens": 64' in line


async def test_the_chat_proxy_request_is_logged_with_credentials_redacted(
    scripted_server: ScriptedServer, caplog: pytest.LogCaptureFixture
) -> None:
    scripted_server.on("POST", CHAT, lambda _: Reply.json(COMPLETION))
    completions = OpenAICompletions.from_settings(_settings(scripted_server), timeout_s=10, retries=0)
    params = {"temperature": 0.2, "api_key": "leaked-in-body", "metadata": {"Authorization": "Bearer abc"}}
    try:
        with caplog.at_level(logging.DEBUG, logger="ragd.llm.payload"):
            await completions.create(
                "m", [Message("user", f"my token is Bearer tok-{KEY} ok")], params=params
            )
    finally:
        await completions.aclose()

    (record,) = _payload_lines(caplog)
    line = record.getMessage()
    assert "LLM request (chat) to m:" in line
    assert '"temperature": 0.2' in line
    for secret in ("leaked-in-body", "Bearer abc", KEY, "tok-"):
        assert secret not in line
    assert line.count("[redacted]") == 3
    assert "my token is [redacted] ok" in line


async def test_nothing_is_logged_above_debug(
    scripted_server: ScriptedServer, caplog: pytest.LogCaptureFixture
) -> None:
    scripted_server.on("POST", CHAT, lambda _: Reply.json(COMPLETION))
    model = OpenAIChatModel.from_settings(_settings(scripted_server))
    try:
        with caplog.at_level(logging.INFO):
            await model.complete([Message("user", "hello")])
    finally:
        await model.aclose()
    assert _payload_lines(caplog) == []
