"""ragproxy's chat defaults as settings (seed 004): MMR, one source per file, a character cap per
source, and its sources-list prompt style — over a live server with the real model and a scripted
upstream LLM on loopback, asserting what the model was sent.

The corpus (tests/support/knobs_corpus.py): ``tariffs.md`` makes four near-identical chunks that
crowd the top slots for HARBOUR; ``ledger.md`` and ``pilots.md`` are the other answers.
Near-duplicate dropping is off here so that only the settings under test change the sources.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragd.api.app import create_app
from ragd.settings import ChatSettings, ChunkSettings, LlmSettings, QueryGenerationSettings
from ragd.types import PromptStyle
from tests.api.conftest import AUTH, ingest_over_http, service_settings
from tests.support.knobs_corpus import FILES, HARBOUR
from tests.support.live_server import LiveServer
from tests.support.scripted_http import Reply, ScriptedServer

CAP = 60
LISTED = re.compile(r"^\[(\d+)\] (.+)$", re.MULTILINE)


@pytest.fixture(scope="module")
def upstream() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        yield server


@pytest.fixture(scope="module")
def live(
    tmp_path_factory: pytest.TempPathFactory, model_cache: Path, upstream: ScriptedServer
) -> Iterator[LiveServer]:
    chat = ChatSettings(
        retries=0,
        timeout_s=10,
        tools_enabled=True,
        min_score=0.0,
        near_duplicates=None,
        diversity=0.7,
        max_per_file=1,
        source_max_chars=CAP,
        prompt_style=PromptStyle.SOURCES_LIST,
    )
    settings = service_settings(tmp_path_factory.mktemp("chat-defaults"), model_cache).model_copy(
        update={
            "chunking": ChunkSettings(token_size=40, token_overlap=0),
            "llm": LlmSettings(base_url=f"{upstream.url}/v1", model="up-model"),  # type: ignore[call-arg]
            "query_generation": QueryGenerationSettings(enabled=False),  # type: ignore[call-arg]
            "chat": chat,
        }
    )
    with LiveServer(create_app(settings)) as server:
        server.wait_ready()
        ingest_over_http(server, FILES)
        yield server


def chat(live: LiveServer, upstream: ScriptedServer, **fields: Any) -> tuple[list[str], str]:
    """The sources' files, and the system message the upstream model received."""
    upstream.expect("POST", "/v1/chat/completions", Reply.json(_completion("ok")))
    body = {"model": "rag/kb", "messages": [{"role": "user", "content": HARBOUR}], "rag_top_k": 4, **fields}
    response = httpx.post(f"{live.url}/v1/chat/completions", json=body, headers=AUTH, timeout=60)
    assert response.status_code == 200, response.text
    sent = upstream.requests_to("POST", "/v1/chat/completions")[-1].json
    upstream.verify()
    system = sent["messages"][0]
    assert system["role"] == "system"
    return [s["source"] for s in response.json()["rag_sources"]], system["content"]


def _completion(text: str | None, calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = calls
    finish = "tool_calls" if calls else "stop"
    return {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "up-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }


def test_one_source_per_file_is_the_default_and_a_request_lifts_it(
    live: LiveServer, upstream: ScriptedServer
) -> None:
    sources, _ = chat(live, upstream)
    assert len(sources) == len(set(sources)) >= 3, sources  # one source of each file
    assert sources[0] == "tariffs.md"
    lifted, _ = chat(live, upstream, rag_max_per_file=0, rag_diversity=0)
    assert lifted.count("tariffs.md") >= 2, lifted


def test_the_diversity_default_applies_and_a_request_overrides_it(
    live: LiveServer, upstream: ScriptedServer
) -> None:
    diverse, _ = chat(live, upstream, rag_max_per_file=0)  # MMR 0.7 from the setting
    ranked, _ = chat(live, upstream, rag_max_per_file=0, rag_diversity=0)
    assert diverse.count("tariffs.md") < ranked.count("tariffs.md"), (diverse, ranked)


def test_the_model_gets_a_numbered_sources_list_each_cut_to_the_cap(
    live: LiveServer, upstream: ScriptedServer
) -> None:
    sources, system = chat(live, upstream)
    assert system.startswith("## Sources\n")
    assert "<document" not in system
    assert "<retrieved_documents>" not in system
    listed = LISTED.findall(system)
    assert [int(n) for n, _ in listed] == list(range(1, len(sources) + 1))
    assert [title for _, title in listed] == sources  # title (the file name) after the number
    blocks = system.split("\n\n")[1:]  # after the instructions: one block a source
    assert len(blocks) == len(sources)
    for block in blocks:
        head, text = block.strip().split("\n", 1)
        assert LISTED.match(head)
        assert len(text) <= CAP + len(" …"), text
    assert any(b.strip().endswith(" …") for b in blocks)  # the tariff sections are longer than the cap


def test_search_documents_answers_the_model_in_the_same_style_and_cap(
    live: LiveServer, upstream: ScriptedServer
) -> None:
    search = {"id": "call_1", "type": "function", "function": {"name": "search_documents", "arguments": ""}}
    search["function"]["arguments"] = '{"query": "harbour tariff gross ton"}'
    upstream.expect("POST", "/v1/chat/completions", Reply.json(_completion(None, [search])))
    upstream.expect("POST", "/v1/chat/completions", Reply.json(_completion("ok")))
    body = {"model": "rag/kb", "messages": [{"role": "user", "content": HARBOUR}], "rag_top_k": 2}
    response = httpx.post(f"{live.url}/v1/chat/completions", json=body, headers=AUTH, timeout=60)
    assert response.status_code == 200, response.text
    upstream.verify()
    tool = upstream.requests_to("POST", "/v1/chat/completions")[-1].json["messages"][-1]
    assert tool["role"] == "tool"
    assert "<document" not in tool["content"]
    blocks = tool["content"].split("\n\n")
    assert blocks
    for block in blocks:
        head, text = block.split("\n", 1)
        assert LISTED.match(head), head  # numbered after the sources the model already has
        assert len(text) <= CAP + len(" …"), text


def test_a_request_may_lift_the_character_cap(live: LiveServer, upstream: ScriptedServer) -> None:
    _, system = chat(live, upstream, rag_source_max_chars=0)
    assert "is charged per gross ton on arrival. Cargo ships pay the harbour tariff" in system
    _, capped = chat(live, upstream, rag_source_max_chars=30)
    assert "Cargo ships pay" not in capped


def test_out_of_range_chat_defaults_are_refused(live: LiveServer) -> None:
    for fields in ({"rag_source_max_chars": -1}, {"rag_max_per_file": 51}):
        body = {"model": "rag/kb", "messages": [{"role": "user", "content": "x"}], **fields}
        response = httpx.post(f"{live.url}/v1/chat/completions", json=body, headers=AUTH, timeout=60)
        assert 400 <= response.status_code < 500, (fields, response.text)
    with pytest.raises(ValueError, match="prompt_style"):
        ChatSettings(prompt_style="bullets")  # type: ignore[arg-type]
