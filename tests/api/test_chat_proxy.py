"""The chat proxy over real HTTP: `/v1/chat/completions`, `/v1/models` (contracts.md §4, §5, §7.4-7.5).

The client is the official ``openai`` SDK (and raw httpx where bytes matter); the upstream is a
scripted OpenAI-compatible server on loopback speaking the real wire format (JSON, SSE, tool
calls); ragd runs under uvicorn with the embedded store and the real model, over a few small
ingested files.  Each scripted reply is consumed by exactly one upstream request, so every test
checks what the upstream was sent as well as what the client got.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from ragd.api.app import create_app
from ragd.ingest.ids import chunk_id, sha256_hex
from ragd.settings import ChatSettings, LlmSettings, QueryGenerationSettings, Settings
from tests.api.conftest import ALPHA, AUTH, BETA, GAMMA, KEY, ingest_over_http, service_settings
from tests.support.live_server import LiveServer
from tests.support.scripted_http import Reply, ScriptedServer, chunk_event

UPSTREAM_KEY = "sk-upstream-not-ragds-key"
CHAT = "/v1/chat/completions"
QUESTION = "How many approvals does the alpha protocol need?"
# A file long enough for several overlapping chunks, reassembled by read_full_document: the
# result must be the text as it was ingested (each overlap once).
PARAGRAPHS = [
    f"Paragraph {i:02d} of the delta handbook explains step {i} of the rollout: the operator checks "
    f"the {w} gauge, records the reading in the ledger, and waits for the second operator to confirm "
    f"the value before the valve for stage {i} is opened."
    for i, w in enumerate(
        ["pressure", "flow", "heat", "level", "voltage", "torque", "speed", "noise", "density", "ph", "salt"],
        start=1,
    )
]
DELTA = ("# Delta handbook\n\n" + "\n\n".join(PARAGRAPHS) + "\n").encode()
FILES = (("a", "alpha.md", ALPHA), ("b", "beta.md", BETA), ("g", "gamma.md", GAMMA), ("d", "delta.md", DELTA))


# -- the upstream's wire format -------------------------------------------------------------------


def completion(content: str | None, tool_calls: list[dict[str, Any]] | None = None) -> Reply:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return Reply.json(
        {
            "id": "chatcmpl-up",
            "object": "chat.completion",
            "created": 1700000000,
            "model": "up-model",
            "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}
            ],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
        }
    )


def tool_call(call_id: str, name: str, **arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def streamed(*parts: str, usage: bool = True) -> Reply:
    events: list[dict[str, Any] | str] = [chunk_event({"role": "assistant", "content": ""})]
    events += [chunk_event({"content": part}) for part in parts]
    events.append(chunk_event({}, "stop"))
    if usage:
        tally = {"prompt_tokens": 40, "completion_tokens": len(parts), "total_tokens": 40 + len(parts)}
        events.append({**chunk_event({}), "choices": [], "usage": tally})
    return Reply.sse([*events, "[DONE]"])


# -- fixtures ---------------------------------------------------------------------------------------


def chat_settings(data_dir: Path, model_cache: Path, base_url: str, **chat: Any) -> Settings:
    settings = service_settings(data_dir, model_cache, inspection_enabled=True)
    return settings.model_copy(
        update={
            "llm": LlmSettings(base_url=base_url, api_key=UPSTREAM_KEY, model="default-model"),  # type: ignore[call-arg]
            "query_generation": QueryGenerationSettings(enabled=False),  # type: ignore[call-arg]
            "chat": ChatSettings(
                retries=0,
                timeout_s=10,
                max_tool_iterations=2,
                models={"handbook": "rag/kb/alias-model"},
                **chat,
            ),
        }
    )


@pytest.fixture(scope="module")
def upstream() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        yield server


@pytest.fixture(scope="module")
def live(
    tmp_path_factory: pytest.TempPathFactory, model_cache: Path, upstream: ScriptedServer
) -> Iterator[LiveServer]:
    settings = chat_settings(tmp_path_factory.mktemp("ragd"), model_cache, f"{upstream.url}/v1")
    with LiveServer(create_app(settings)) as server:
        server.wait_ready()
        ingest_over_http(server, FILES)
        yield server


@pytest.fixture
async def client(live: LiveServer, upstream: ScriptedServer) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(base_url=f"{live.url}/v1", api_key=KEY, max_retries=0, timeout=30) as c:
        yield c
    upstream.verify()  # every scripted reply was used, and nothing unexpected reached the upstream


def sent(upstream: ScriptedServer, back: int = 1) -> dict[str, Any]:
    """The JSON body of the ``back``-th latest chat request the upstream received."""
    return upstream.requests_to("POST", CHAT)[-back].json  # type: ignore[no-any-return]


def indexed_chunks(live: LiveServer, file_id: str) -> list[dict[str, Any]]:
    url = f"{live.url}/api/v1/documents/{file_id}/chunks"
    r = httpx.get(url, params={"include_content": "full", "limit": 1000}, headers=AUTH)
    assert r.status_code == 200, r.text
    return r.json()["chunks"]  # type: ignore[no-any-return]


def assert_indexed(live: LiveServer, source: dict[str, Any]) -> None:
    """The source is a chunk this test ingested: same file, place, point id and text."""
    chunks = {c["split_id"]: c for c in indexed_chunks(live, source["file_id"])}
    stored = chunks[source["chunk_id"]]
    assert source["point_id"] == chunk_id(
        "kb", source["file_id"], source["chunk_id"], sha256_hex(stored["content"])
    )
    assert source["source"] == stored["meta"]["name"]
    assert " ".join(stored["content"].split()).startswith(source["snippet"].removesuffix("…"))


def ask(text: str = QUESTION) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


# -- retrieval answers --------------------------------------------------------------------------


async def test_rag_answer_carries_numbered_sources_and_unmatched_markers(
    live: LiveServer, upstream: ScriptedServer, client: openai.AsyncOpenAI
) -> None:
    answer = "The alpha protocol needs three approvals [1]. See also [1, 9] and [9][12]."
    upstream.expect("POST", CHAT, completion(answer))
    response = await client.chat.completions.create(model="rag/kb/gpt-up", messages=ask(), temperature=0.2)

    assert response.choices[0].message.content == answer
    assert response.choices[0].finish_reason == "stop"
    assert response.model == "rag/kb/gpt-up"
    extra = response.model_extra or {}
    sources = extra["rag_sources"]
    assert extra["rag_unmatched_citations"] == [9, 12]
    assert [s["index"] for s in sources] == list(range(1, len(sources) + 1))
    assert 1 <= len(sources) <= 5
    assert sources[0]["source"] == "alpha.md"
    assert sources[0]["path"] == "alpha.md"
    assert [s["cited"] for s in sources] == [s["index"] == 1 for s in sources]
    for source in sources:
        assert_indexed(live, source)

    body = sent(upstream)
    assert body["model"] == "gpt-up"  # the rag/<collection>/<model> suffix answers
    assert body["temperature"] == 0.2  # sampling fields pass through
    system, user = body["messages"]
    assert (system["role"], user) == ("system", ask()[0])
    assert "<retrieved_documents>" in system["content"]
    assert '<document index="1" source="alpha.md" path="alpha.md" chunk="0" score=' in system["content"]
    assert "three approvals from the steering board" in system["content"]
    assert system["content"].count("<document ") == len(sources)
    assert {t["function"]["name"] for t in body["tools"]} == {"read_full_document", "search_documents"}


async def test_stream_matches_the_answer_and_keeps_the_openai_sse_shape(
    live: LiveServer, upstream: ScriptedServer, client: openai.AsyncOpenAI
) -> None:
    question = "When do beta deployments run?"
    upstream.expect("POST", CHAT, completion("On Tuesdays [1][4]."), streamed("On ", "Tuesdays ", "[1][4]."))
    # no floor: [4] must name a source for the unmatched-citation check below
    unfloored = {"rag_enable_tools": False, "rag_min_score": 0}
    plain = await client.chat.completions.create(model="rag/kb", messages=ask(question), extra_body=unfloored)
    assert sent(upstream)["model"] == "default-model"
    assert "tools" not in sent(upstream)
    assert "read_full_document" not in sent(upstream)["messages"][0]["content"]

    stream = await client.chat.completions.create(
        model="rag/kb",
        messages=ask(question),
        stream=True,
        stream_options={"include_usage": True},
        extra_body=unfloored,
    )
    chunks = [chunk async for chunk in stream]
    body = sent(upstream)
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}

    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "On Tuesdays [1][4]."
    finishing = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert [c.choices[0].finish_reason for c in finishing] == ["stop"]
    assert len({c.id for c in chunks}) == 1
    assert {c.model for c in chunks} == {"rag/kb"}
    final = finishing[0].model_extra or {}
    plain_extra = plain.model_extra or {}
    assert final["rag_sources"] == plain_extra["rag_sources"]  # same question and answer: same sources
    assert final["rag_unmatched_citations"] == plain_extra["rag_unmatched_citations"] == []
    assert final["rag_sources"][0]["source"] == "beta.md"
    assert [s["index"] for s in final["rag_sources"] if s["cited"]] == [1, 4]
    usage = chunks[-1]
    assert usage.choices == []
    assert usage.usage is not None
    assert (usage.usage.prompt_tokens, usage.usage.completion_tokens) == (40, 3)
    assert usage.usage.total_tokens == 43


async def test_raw_sse_framing(live: LiveServer, upstream: ScriptedServer) -> None:
    upstream.expect("POST", CHAT, streamed("Three", " approvals [1].", usage=False))
    request = {"model": "rag/kb", "messages": ask(), "stream": True, "rag_enable_tools": False}
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.post(f"{live.url}{CHAT}", json=request, headers=AUTH)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    text = response.text
    assert text.endswith("data: [DONE]\n\n")
    events = text.split("\n\n")[:-1]
    assert all(e.startswith("data: ") and "\n" not in e for e in events)
    payloads = [json.loads(e.removeprefix("data: ")) for e in events[:-1]]
    assert all(p["object"] == "chat.completion.chunk" and "usage" not in p for p in payloads)
    assert payloads[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    reasons = [p["choices"][0]["finish_reason"] for p in payloads]
    assert reasons == [None] * (len(payloads) - 1) + ["stop"]
    assert "rag_sources" in payloads[-1]
    assert all("rag_sources" not in p for p in payloads[:-1])


async def test_off_topic_questions_get_no_sources_and_the_model_is_told(
    upstream: ScriptedServer, client: openai.AsyncOpenAI
) -> None:
    upstream.expect("POST", CHAT, completion("Your documents do not cover that."))
    response = await client.chat.completions.create(
        model="rag/kb", messages=ask("What is the capital of France?")
    )
    assert (response.model_extra or {})["rag_sources"] == []
    system = sent(upstream)["messages"][0]
    assert system["role"] == "system"
    assert "found nothing relevant" in system["content"]
    assert "<retrieved_documents>" not in system["content"]
    assert "tools" not in sent(upstream)

    # the floor is the request's to move: 0 lets the nearest chunks through again
    upstream.expect("POST", CHAT, completion("Paris [1]."))
    loose = await client.chat.completions.create(
        model="rag/kb",
        messages=ask("What is the capital of France?"),
        extra_body={"rag_min_score": 0, "rag_enable_tools": False},  # type: ignore[arg-type]
    )
    assert (loose.model_extra or {})["rag_sources"]


async def test_top_k_zero_means_no_retrieval(upstream: ScriptedServer, client: openai.AsyncOpenAI) -> None:
    upstream.expect("POST", CHAT, completion("Hello."))
    messages = [{"role": "system", "content": "Be brief."}, *ask()]
    response = await client.chat.completions.create(
        model="rag/kb",
        messages=messages,
        extra_body={"rag_top_k": 0},  # type: ignore[arg-type]
    )
    assert response.choices[0].message.content == "Hello."
    assert "rag_sources" not in (response.model_extra or {})
    body = sent(upstream)
    assert body["messages"] == messages  # no context, no instructions, the client's system prompt as is
    assert "tools" not in body
    assert "<retrieved_documents>" not in json.dumps(body)


async def test_aliases_and_the_collection_override(
    upstream: ScriptedServer, client: openai.AsyncOpenAI
) -> None:
    upstream.expect("POST", CHAT, completion("A [1]."), completion("B [1]."))
    aliased = await client.chat.completions.create(model="handbook", messages=ask())
    assert sent(upstream)["model"] == "alias-model"
    assert (aliased.model_extra or {})["rag_sources"]
    override = await client.chat.completions.create(
        model="some-model", messages=ask(), extra_body={"rag_collection": "kb"}
    )
    assert sent(upstream)["model"] == "some-model"
    assert (override.model_extra or {})["rag_sources"][0]["source"] == "alpha.md"
    assert "rag_collection" not in sent(upstream)


async def test_a_roomy_budget_shows_sources_verbatim(
    live: LiveServer, upstream: ScriptedServer, client: openai.AsyncOpenAI
) -> None:
    upstream.expect("POST", CHAT, completion("ok"))
    response = await client.chat.completions.create(
        model="rag/kb",
        messages=ask("delta handbook rollout"),
        extra_body={"rag_min_score": 0},  # type: ignore[arg-type]  # five sources, relevant or not
    )
    system = sent(upstream)["messages"][0]["content"]
    shown = [d.split(">\n", 1)[1].split("\n</document>", 1)[0] for d in system.split("<document ")[1:]]
    stored = {c["content"] for file_id, _, _ in FILES for c in indexed_chunks(live, file_id)}
    assert len(shown) == len((response.model_extra or {})["rag_sources"]) == 5
    assert set(shown) <= stored  # the default budget (3000 tokens) holds every source whole


# -- the tool loop ----------------------------------------------------------------------------------


async def test_read_full_document_reassembles_the_stored_chunks(
    live: LiveServer, upstream: ScriptedServer, client: openai.AsyncOpenAI
) -> None:
    assert len(indexed_chunks(live, "d")) > 1  # the reassembly is worth testing
    call = tool_call("call_1", "read_full_document", file_path="d")
    upstream.expect("POST", CHAT, completion(None, [call]), completion("Eleven stages [1]."))
    response = await client.chat.completions.create(model="rag/kb", messages=ask("delta handbook stages"))

    assert response.choices[0].message.content == "Eleven stages [1]."
    assert response.choices[0].message.tool_calls is None
    first, second = sent(upstream, 2), sent(upstream)
    read = next(t for t in first["tools"] if t["function"]["name"] == "read_full_document")
    assert read["function"]["parameters"]["required"] == ["file_path"]
    assert second["messages"][-2]["tool_calls"][0]["id"] == "call_1"
    tool_message = second["messages"][-1]
    assert (tool_message["role"], tool_message["tool_call_id"]) == ("tool", "call_1")
    head, text = tool_message["content"].removesuffix("\n</document>").split(">\n", 1)
    assert head == '<document source="delta.md" path="delta.md" file_id="d"'
    assert text == DELTA.decode().strip()  # every chunk, in order, the overlaps once
    assert response.usage is not None
    assert response.usage.prompt_tokens == 22  # both rounds counted


async def test_tool_errors_never_read_the_disk(upstream: ScriptedServer, client: openai.AsyncOpenAI) -> None:
    calls = [
        tool_call("call_a", "read_full_document", file_path="../../etc/passwd"),
        tool_call("call_b", "read_full_document", file_path="no-such-file"),
        tool_call("call_c", "read_full_document", file_path="/etc/hostname"),
        tool_call("call_d", "delete_everything"),
    ]
    upstream.expect("POST", CHAT, completion(None, calls), completion("I could not read it."))
    response = await client.chat.completions.create(model="rag/kb", messages=ask())
    assert response.choices[0].message.content == "I could not read it."
    results = {m["tool_call_id"]: m["content"] for m in sent(upstream)["messages"] if m["role"] == "tool"}
    assert results["call_a"].startswith("Error: Access denied")
    assert results["call_b"] == "Error: File not found: no-such-file"
    assert results["call_c"].startswith("Error: Access denied")
    assert results["call_d"].startswith("Error: unknown tool")
    assert not any("root:" in r for r in results.values())


async def test_search_tool_numbers_new_sources_after_the_context(
    upstream: ScriptedServer, client: openai.AsyncOpenAI
) -> None:
    call = tool_call("call_s", "search_documents", query="gamma releases December holidays")
    upstream.expect("POST", CHAT, completion(None, [call]), completion("Frozen in December [1]."))
    response = await client.chat.completions.create(
        model="rag/kb", messages=ask(), extra_body={"rag_top_k": 1}
    )
    sources = (response.model_extra or {})["rag_sources"]
    assert [s["source"] for s in sources] == ["alpha.md", "gamma.md"]
    assert [s["index"] for s in sources] == [1, 2]
    result = sent(upstream)["messages"][-1]["content"]
    assert '<document index="2" source="gamma.md"' in result


async def test_streamed_tool_loop_runs_rounds_then_streams_the_answer(
    upstream: ScriptedServer, client: openai.AsyncOpenAI
) -> None:
    read = tool_call("call_1", "read_full_document", file_path="alpha.md")
    search = tool_call("call_2", "search_documents", query="beta deployments")
    upstream.expect(
        "POST",
        CHAT,
        completion(None, [read]),
        completion(None, [search]),  # the second round reaches the cap (2): the answer comes without tools
        streamed("Three ", "approvals [1]."),
    )
    stream = await client.chat.completions.create(model="rag/kb", messages=ask(), stream=True)
    chunks = [chunk async for chunk in stream]
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "Three approvals [1]."
    assert not any(c.choices[0].delta.tool_calls for c in chunks)
    assert [c.choices[0].finish_reason for c in chunks if c.choices[0].finish_reason] == ["stop"]
    requests = upstream.requests_to("POST", CHAT)[-3:]
    assert [r.json.get("stream", False) for r in requests] == [False, False, True]
    assert "tools" in requests[1].json
    assert "tools" not in requests[2].json
    tool_results = [m["content"] for m in requests[2].json["messages"] if m["role"] == "tool"]
    assert "three approvals from the steering board" in tool_results[0]
    assert "Tuesday" in tool_results[1]


async def test_a_streamed_answer_from_a_tool_round_is_replayed(
    upstream: ScriptedServer, client: openai.AsyncOpenAI
) -> None:
    upstream.expect("POST", CHAT, completion("Three approvals [1]."))  # no tool call: that is the answer
    stream = await client.chat.completions.create(
        model="rag/kb", messages=ask(), stream=True, stream_options={"include_usage": True}
    )
    chunks = [chunk async for chunk in stream]
    body = sent(upstream)
    assert "stream" not in body
    assert "tools" in body
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Three approvals [1]."
    [finish] = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert (finish.model_extra or {})["rag_sources"][0]["cited"] is True
    assert chunks[-1].usage is not None
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (11, 7)


# -- passthrough and /v1/models ---------------------------------------------------------------------


async def test_passthrough_is_byte_exact(live: LiveServer, upstream: ScriptedServer) -> None:
    request = b'{"model":  "plain-model",\n "messages": [{"role": "user", "content": "hi"}], "rag_top_k": 3}'
    reply = b'{"id": "x",   "object": "chat.completion", "choices": [],\n "odd": "\\u00e9"}'
    upstream.expect(
        "POST", CHAT, Reply(200, reply, {"Content-Type": "application/json", "X-Request-Id": "r1"})
    )
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.post(
            f"{live.url}{CHAT}", content=request, headers={**AUTH, "Content-Type": "application/json"}
        )
    assert (response.status_code, response.content) == (200, reply)
    assert response.headers["x-request-id"] == "r1"
    received = upstream.requests_to("POST", CHAT)[-1]
    assert received.body == request
    assert received.header("authorization") == f"Bearer {UPSTREAM_KEY}"  # never ragd's own key


async def test_passthrough_streams_and_relays_upstream_errors(
    live: LiveServer, upstream: ScriptedServer, client: openai.AsyncOpenAI
) -> None:
    events = [chunk_event({"role": "assistant", "content": ""}), chunk_event({"content": "Hi"}), "[DONE]"]
    upstream.expect("POST", CHAT, Reply.sse(events), Reply.sse(events), Reply.error(404, "no such model"))
    async with httpx.AsyncClient(timeout=30) as http:
        request = {"model": "plain-model", "messages": ask("hi"), "stream": True}
        response = await http.post(f"{live.url}{CHAT}", json=request, headers=AUTH)
    expected = "".join(f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n" for e in events)
    assert response.content == expected.encode()  # the upstream's frames, byte for byte
    assert response.headers["content-type"] == "text/event-stream"

    stream = await client.chat.completions.create(model="plain-model", messages=ask("hi"), stream=True)
    assert [c.choices[0].delta.content async for c in stream] == ["", "Hi"]

    with pytest.raises(openai.NotFoundError) as caught:
        await client.chat.completions.create(model="gone-model", messages=ask("hi"))
    assert caught.value.body == {"message": "no such model", "code": 404}


async def test_models_lists_upstream_and_rag_models(
    upstream: ScriptedServer, client: openai.AsyncOpenAI
) -> None:
    upstream.expect(
        "GET",
        "/v1/models",
        Reply.json(
            {"object": "list", "data": [{"id": "m1", "object": "model", "created": 1, "owned_by": "o"}]}
        ),
    )
    ids = [m.id async for m in client.models.list()]
    assert ids == ["m1", "handbook", "rag/kb"]
    assert upstream.requests_to("GET", "/v1/models")[-1].header("authorization") == f"Bearer {UPSTREAM_KEY}"


async def test_every_listed_model_is_retrieved_as_listed(
    upstream: ScriptedServer, client: openai.AsyncOpenAI
) -> None:
    """``models.retrieve`` (GET /v1/models/{id}: ids hold "/") answers each id the list shows."""
    m1 = {"id": "m1", "object": "model", "created": 1, "owned_by": "o"}
    listing = Reply.json({"object": "list", "data": [m1]})
    upstream.expect("GET", "/v1/models", *[listing] * 5)  # a list, four retrievals
    listed = [m.model_dump() async for m in client.models.list()]
    assert [m["id"] for m in listed] == ["m1", "handbook", "rag/kb"]
    for entry in listed:
        assert (await client.models.retrieve(entry["id"])).model_dump() == entry
    with pytest.raises(openai.NotFoundError):
        await client.models.retrieve("rag/no-such-collection")


async def test_a_tenant_key_answers_from_its_own_datasets_only(
    live: LiveServer, upstream: ScriptedServer
) -> None:
    tenant = httpx.post(f"{live.url}/api/v1/tenants", json={"name": "harbour"}, headers=AUTH).json()
    made = httpx.post(f"{live.url}/api/v1/tenants/{tenant['id']}/keys", json={"role": "reader"}, headers=AUTH)
    secret = made.json()["secret"]
    dataset = httpx.post(
        f"{live.url}/api/v1/datasets", json={"name": "tugs", "tenant_id": tenant["id"]}, headers=AUTH
    ).json()
    files = [("files", ("tugs.md", b"# Tugs\nThe tug crews double their night shifts in March.\n"))]
    sent = httpx.post(f"{live.url}/api/v1/datasets/{dataset['id']}/files", files=files, headers=AUTH).json()
    for _ in range(600):
        job = httpx.get(f"{live.url}/api/v1/jobs/{sent['job']['id']}", headers=AUTH).json()
        if job["status"] in ("succeeded", "failed"):
            break
        await asyncio.sleep(0.05)
    assert job["status"] == "succeeded", job
    async with openai.AsyncOpenAI(base_url=f"{live.url}/v1", api_key=secret, max_retries=0) as tenant_client:
        upstream.expect("POST", CHAT, completion("In March [1]."))
        own = await tenant_client.chat.completions.create(
            model=f"rag/{dataset['collection_name']}", messages=ask("When do the tug crews double shifts?")
        )
        assert (own.model_extra or {})["rag_sources"][0]["source"] == "tugs.md"
        with pytest.raises(openai.NotFoundError):  # the service's collection: like a missing one
            await tenant_client.chat.completions.create(model="rag/kb", messages=ask())
        with pytest.raises(openai.PermissionDeniedError):  # no passthrough to the upstream for tenants
            await tenant_client.chat.completions.create(model="plain-model", messages=ask())
        listed = [m.id async for m in tenant_client.models.list()]
        assert listed == [f"rag/{dataset['collection_name']}"]


# -- errors -----------------------------------------------------------------------------------------


async def test_request_errors_are_openai_shaped(live: LiveServer, client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as missing:
        await client.chat.completions.create(model="rag/nope", messages=ask())
    assert missing.value.code == "NOT_FOUND"
    assert missing.value.type == "invalid_request_error"

    with pytest.raises(openai.BadRequestError) as bad_name:
        await client.chat.completions.create(model="rag/bad name", messages=ask())
    assert bad_name.value.code == "INVALID_REQUEST"

    with pytest.raises(openai.UnprocessableEntityError) as invalid:
        await client.chat.completions.create(model="rag/kb", messages=[], extra_body={"rag_top_k": -1})
    assert invalid.value.param in {"messages", "rag_top_k"}
    assert "messages" in invalid.value.message
    assert "rag_top_k" in invalid.value.message

    async with httpx.AsyncClient(timeout=30) as http:
        not_json = await http.post(f"{live.url}{CHAT}", content=b"{nope", headers=AUTH)
        too_deep = await http.post(f"{live.url}{CHAT}", content=b"[" * 100_000, headers=AUTH)
        not_object = await http.post(f"{live.url}{CHAT}", json=["model"], headers=AUTH)
        no_key = await http.post(f"{live.url}{CHAT}", json={"model": "m", "messages": ask()})
        wrong_key = await http.get(f"{live.url}/v1/models", headers={"Authorization": "Bearer wrong"})
    for response in (not_json, too_deep, not_object):
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "INVALID_REQUEST"
    for response in (no_key, wrong_key):
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"
        assert response.json() == {
            "error": {
                "message": "Invalid API key",
                "type": "authentication_error",
                "param": None,
                "code": "UNAUTHORIZED",
            }
        }


async def test_a_dropped_upstream_is_a_502(upstream: ScriptedServer, client: openai.AsyncOpenAI) -> None:
    upstream.expect("POST", CHAT, Reply.dropped(), Reply.dropped())
    with pytest.raises(openai.APIStatusError) as rag:
        await client.chat.completions.create(
            model="rag/kb", messages=ask(), extra_body={"rag_enable_tools": False}
        )
    with pytest.raises(openai.APIStatusError) as plain:
        await client.chat.completions.create(model="plain-model", messages=ask())
    for caught in (rag, plain):
        assert caught.value.status_code == 502
        assert caught.value.code == "UPSTREAM_FAILED"
        assert caught.value.type == "upstream_error"


@pytest.mark.parametrize(
    "garbage",
    [
        Reply.text("<html>502 Bad Gateway from a proxy</html>"),
        Reply.json({"unexpected": "shape"}),
        Reply.json({"choices": [{"index": 0}]}),
    ],
    ids=["text", "other-json", "no-message"],
)
async def test_an_upstream_answering_200_with_garbage_is_a_502(
    upstream: ScriptedServer, client: openai.AsyncOpenAI, garbage: Reply
) -> None:
    upstream.expect("POST", CHAT, garbage)
    with pytest.raises(openai.APIStatusError) as caught:
        await client.chat.completions.create(
            model="rag/kb", messages=ask(), extra_body={"rag_enable_tools": False}
        )
    assert (caught.value.status_code, caught.value.code) == (502, "UPSTREAM_FAILED")


async def test_an_upstream_breaking_off_mid_stream_ends_with_an_error_event(
    upstream: ScriptedServer, client: openai.AsyncOpenAI
) -> None:
    events = [chunk_event({"role": "assistant", "content": ""}), chunk_event({"content": "Three"})]
    upstream.expect("POST", CHAT, Reply.sse(events, abort=True), Reply.sse(events, abort=True))
    for model, extra in (("rag/kb", {"rag_enable_tools": False}), ("plain-model", {})):
        stream = await client.chat.completions.create(
            model=model, messages=ask(), stream=True, extra_body=extra
        )
        received: list[str | None] = []

        async def drain(chunks: openai.AsyncStream[Any] = stream, into: list[str | None] = received) -> None:
            async for chunk in chunks:
                into.append(chunk.choices[0].delta.content)

        with pytest.raises(openai.APIError) as caught:
            await drain()
        assert "Three" in received, model
        assert caught.value.body == {
            "message": caught.value.message,
            "type": "upstream_error",
            "param": None,
            "code": "UPSTREAM_FAILED",
        }


def scrape(live: LiveServer) -> dict[str, float]:
    text = httpx.get(f"{live.url}/metrics", headers=AUTH).text
    return {
        name: float(value)
        for name, _, value in (line.rpartition(" ") for line in text.splitlines())
        if name.startswith(("chat_requests_total", "chat_tool_calls_total", "chat_upstream_failures_total"))
    }


async def test_metrics_count_chat_requests_and_tools(
    live: LiveServer, upstream: ScriptedServer, client: openai.AsyncOpenAI
) -> None:
    before = scrape(live)
    calls = [tool_call("c1", "read_full_document", file_path="a"), tool_call("c2", "rm")]
    upstream.expect(
        "POST", CHAT, completion(None, calls), completion("done"), completion("plain"), Reply.dropped()
    )
    await client.chat.completions.create(model="rag/kb", messages=ask())
    await client.chat.completions.create(model="plain-model", messages=ask())
    with pytest.raises(openai.NotFoundError):
        await client.chat.completions.create(model="rag/nope", messages=ask())
    with pytest.raises(openai.APIStatusError):
        await client.chat.completions.create(model="plain-model", messages=ask())
    after = scrape(live)
    grown = {k: v - before.get(k, 0.0) for k, v in after.items() if v != before.get(k, 0.0)}
    assert grown == {
        'chat_requests_total{kind="rag",outcome="ok"}': 1,
        'chat_requests_total{kind="passthrough",outcome="ok"}': 1,
        'chat_requests_total{kind="rag",outcome="NOT_FOUND"}': 1,
        'chat_requests_total{kind="passthrough",outcome="UPSTREAM_FAILED"}': 1,
        'chat_tool_calls_total{tool="read_full_document"}': 1,
        'chat_tool_calls_total{tool="unknown"}': 1,
        'chat_upstream_failures_total{kind="passthrough"}': 1,
    }
    assert not any("kb" in name or "plain-model" in name for name in after)  # no names in labels


async def test_a_client_going_away_ends_the_answer(live: LiveServer, upstream: ScriptedServer) -> None:
    slow = [chunk_event({"role": "assistant", "content": ""})] + [chunk_event({"content": "x"})] * 20
    upstream.expect("POST", CHAT, Reply.sse([*slow, "[DONE]"], chunk_delay_s=0.2))
    before = scrape(live).get('chat_requests_total{kind="rag",outcome="disconnected"}', 0.0)
    request = {"model": "rag/kb", "messages": ask(), "stream": True, "rag_enable_tools": False}
    async with (
        httpx.AsyncClient(timeout=30) as http,
        http.stream("POST", f"{live.url}{CHAT}", json=request, headers=AUTH) as response,
    ):
        async for line in response.aiter_lines():
            if '"content":"x"' in line:
                break  # hang up after the first content delta
    deadline = time.monotonic() + 10
    while scrape(live).get('chat_requests_total{kind="rag",outcome="disconnected"}', 0.0) == before:
        assert time.monotonic() < deadline, "the abandoned answer was never closed"
        await asyncio.sleep(0.05)
    assert httpx.get(f"{live.url}/health/ready").status_code == 200


# -- other configurations ---------------------------------------------------------------------------


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def down(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[LiveServer]:
    """ragd with an upstream that is not running."""
    url = f"http://127.0.0.1:{closed_port()}/v1"
    settings = chat_settings(tmp_path_factory.mktemp("ragd-down"), model_cache, url)
    with LiveServer(create_app(settings)) as server:
        server.wait_ready()
        ingest_over_http(server, FILES[:1])
        yield server


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", CHAT, {"model": "rag/kb", "messages": ask()}),
        ("POST", CHAT, {"model": "rag/kb", "messages": ask(), "stream": True}),
        ("POST", CHAT, {"model": "plain-model", "messages": ask(), "stream": True}),
    ],
    ids=["rag", "rag-stream", "passthrough"],
)
def test_upstream_down_is_a_quick_502(down: LiveServer, method: str, path: str, body: Any) -> None:
    started = time.monotonic()
    response = httpx.request(method, f"{down.url}{path}", json=body, headers=AUTH, timeout=30)
    assert time.monotonic() - started < 5
    assert response.status_code == 502
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert (error["type"], error["code"]) == ("upstream_error", "UPSTREAM_FAILED")
    assert error["message"]
    assert UPSTREAM_KEY not in response.text


def test_models_are_listed_while_the_upstream_is_down(down: LiveServer) -> None:
    response = httpx.get(f"{down.url}/v1/models", headers=AUTH, timeout=30)
    assert response.status_code == 200, response.text
    assert [m["id"] for m in response.json()["data"]] == ["handbook", "rag/kb"]


async def test_a_collection_whose_files_are_all_deleted_leaves_the_list(
    live: LiveServer, upstream: ScriptedServer, client: openai.AsyncOpenAI
) -> None:
    listing = Reply.json({"object": "list", "data": []})
    form = {"file_id": "tmp-1", "filename": "tmp.md", "collection_name": "scratch", "user_id": "u"}
    files = {"file": ("tmp.md", b"# Scratch\nA note that will be deleted.\n")}
    assert httpx.put(f"{live.url}/api/v1/ingest", files=files, data=form, headers=AUTH).status_code == 200
    upstream.expect("GET", "/v1/models", listing, listing)
    assert "rag/scratch" in [m.id async for m in client.models.list()]
    gone = httpx.delete(f"{live.url}/api/v1/documents/tmp-1", headers=AUTH)
    assert gone.status_code == 200, gone.text
    assert "rag/scratch" not in [m.id async for m in client.models.list()]


@pytest.fixture(scope="module")
def tight(
    tmp_path_factory: pytest.TempPathFactory, model_cache: Path, upstream: ScriptedServer
) -> Iterator[LiveServer]:
    """ragd whose context budget is smaller than any one source."""
    settings = chat_settings(
        tmp_path_factory.mktemp("ragd-tight"), model_cache, f"{upstream.url}/v1", context_token_budget=6
    )
    with LiveServer(create_app(settings)) as server:
        server.wait_ready()
        ingest_over_http(server, FILES)
        yield server


def test_a_tight_budget_keeps_the_first_source_cut(tight: LiveServer, upstream: ScriptedServer) -> None:
    upstream.expect("POST", CHAT, completion("ok"))
    request = {"model": "rag/kb", "messages": ask(), "rag_enable_tools": False}
    response = httpx.post(f"{tight.url}{CHAT}", json=request, headers=AUTH, timeout=30)
    assert response.status_code == 200, response.text
    sources = response.json()["rag_sources"]
    assert [s["source"] for s in sources] == ["alpha.md"]  # cut to one source, never to none
    system = sent(upstream)["messages"][0]["content"]
    assert system.count("<document ") == 1
    shown = system.split("<document ", 1)[1].split(">\n", 1)[1].split("\n</document>", 1)[0]
    assert shown.endswith(" …")
    assert ALPHA.decode().startswith(shown.removesuffix(" …"))
    upstream.verify()


@pytest.fixture(scope="module")
def patient(
    tmp_path_factory: pytest.TempPathFactory, model_cache: Path
) -> Iterator[tuple[LiveServer, ScriptedServer]]:
    """ragd configured to retry twice with a 1.5 s timeout, before an upstream that never answers."""
    with ScriptedServer() as hung:
        settings = chat_settings(tmp_path_factory.mktemp("ragd-hung"), model_cache, f"{hung.url}/v1")
        settings = settings.model_copy(
            update={"chat": settings.chat.model_copy(update={"timeout_s": 1.5, "retries": 2})}
        )
        with LiveServer(create_app(settings)) as server:
            server.wait_ready()
            ingest_over_http(server, FILES[:1])
            yield server, hung


async def test_an_upstream_that_hangs_is_a_502_within_the_timeout(
    patient: tuple[LiveServer, ScriptedServer],
) -> None:
    live, hung = patient
    hung.expect("POST", CHAT, *[completion("late").__class__.dropped(delay_s=60)] * 3)
    started = time.monotonic()
    async with openai.AsyncOpenAI(base_url=f"{live.url}/v1", api_key=KEY, max_retries=0, timeout=60) as c:
        with pytest.raises(openai.APIStatusError) as caught:
            await c.chat.completions.create(
                model="rag/kb", messages=ask(), extra_body={"rag_enable_tools": False}
            )
    assert (caught.value.status_code, caught.value.code) == (502, "UPSTREAM_FAILED")
    assert time.monotonic() - started < 4.0, "timeout_s bounds the call, retries included (not 3 x 1.5 s)"
