"""Citations that clients render: OpenAI ``url_citation`` annotations on the chat proxy's answers.

The client is the official ``openai`` SDK against ragd under uvicorn; the upstream is a scripted
OpenAI-compatible server on loopback.  The same scripted answer goes through both modes and must
come back with the same annotations: on ``message.annotations`` (typed by the SDK), and in a
stream on the finish chunk's ``delta`` (an extra field the SDK keeps, typed once accumulated).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.chat.chat_completion_message import Annotation

from ragd.api.app import create_app
from tests.api.conftest import AUTH, KEY, ingest_over_http
from tests.api.test_chat_proxy import CHAT, FILES, ask, chat_settings, completion, streamed
from tests.support.live_server import LiveServer
from tests.support.scripted_http import ScriptedServer

#: a page as a crawl stores it: its address is the file's source (and, here, its name)
PAGE_URL = "https://docs.example.org/ops/backups.md"
PAGE = b"# Backups\nDelta backups are copied to the north vault every night at 02:00.\n"
QUESTION = "How many approvals does the alpha protocol need, and when do beta deployments run?"
#: [1] alone, in a list, twice in a row; [9] names no source; [1](x) and [^2] are not markers
ANSWER = (
    "Alpha needs three approvals [1]. Beta runs on Tuesdays [2, 1].\n"
    "Both agree [2][1]; the vault is never mentioned [9]. See [1](x) and [^2]."
)
#: the same answer as an upstream streams it, with markers cut across chunks
CUTS = (0, ANSWER.index("[1]") + 1, ANSWER.index("[2, 1]") + 2, ANSWER.index("[2][1]") + 4, len(ANSWER))
PIECES = tuple(ANSWER[start:end] for start, end in itertools.pairwise(CUTS))
NO_FLOOR = {"rag_min_score": 0}


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
        form = {"file_id": "page", "filename": PAGE_URL, "collection_name": "web", "user_id": "u"}
        r = httpx.put(
            f"{server.url}/api/v1/ingest", files={"file": ("backups.md", PAGE)}, data=form, headers=AUTH
        )
        assert r.status_code == 200, r.text
        yield server


@pytest.fixture
async def client(live: LiveServer, upstream: ScriptedServer) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(base_url=f"{live.url}/v1", api_key=KEY, max_retries=0, timeout=30) as c:
        yield c
    upstream.verify()


def as_json(annotations: list[Annotation] | None) -> list[dict[str, Any]]:
    return [a.model_dump() for a in annotations or []]


def streamed_annotations(chunks: list[ChatCompletionChunk]) -> tuple[str, list[Annotation]]:
    """The content accumulated from the deltas, and the annotations the stream carried (typed)."""
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    carrying = [c for c in chunks if c.choices and "annotations" in (c.choices[0].delta.model_extra or {})]
    assert len(carrying) == 1, "annotations come once"
    choice = carrying[0].choices[0]
    assert choice.finish_reason == "stop", "on the finish chunk"
    raw = (choice.delta.model_extra or {})["annotations"]
    return content, [Annotation.model_validate(a) for a in raw]


def check_against_sources(response: ChatCompletion) -> None:
    """Each annotation slices ``[n]`` (or ``n`` of a list) out of the content and names source n."""
    message = response.choices[0].message
    content, annotations = message.content or "", message.annotations or []
    extra = response.model_extra or {}
    sources = {s["index"]: s for s in extra["rag_sources"]}
    assert extra["rag_unmatched_citations"] == [9]
    cited: list[tuple[int, str]] = []
    for annotation in annotations:
        assert annotation.type == "url_citation"
        span = annotation.url_citation
        text = content[span.start_index : span.end_index]
        number = int(text.strip("[]"))
        cited.append((number, text))
        source = sources[number]
        assert span.url == f"ragd://kb/{source['file_id']}#chunk={source['chunk_id']}"
        assert span.title == source["source"]
    # by source number, then place; every citation of a known source, none for [9], [1](x) or [^2]
    assert cited == [(1, "[1]"), (1, "1"), (1, "[1]"), (2, "2"), (2, "[2]")]
    assert [a.url_citation.start_index for a in annotations] == [
        content.index("[1]"),
        content.index("[2, 1]") + 4,
        content.index("[2][1]") + 3,
        content.index("[2, 1]") + 1,
        content.index("[2][1]"),
    ]


@pytest.mark.parametrize("tools", [False, True], ids=["streamed-upstream", "after-tool-rounds"])
async def test_stream_and_answer_carry_the_same_annotations(
    upstream: ScriptedServer, client: openai.AsyncOpenAI, tools: bool
) -> None:
    # with tools on, the answer comes from a non-streaming round and the stream replays it
    replies = [completion(ANSWER), *[completion(ANSWER) if tools else streamed(*PIECES)] * 2]
    upstream.expect("POST", CHAT, *replies)
    knobs = {**NO_FLOOR, "rag_enable_tools": tools}
    plain = await client.chat.completions.create(model="rag/kb", messages=ask(QUESTION), extra_body=knobs)
    assert plain.choices[0].message.content == ANSWER
    check_against_sources(plain)

    stream = await client.chat.completions.create(
        model="rag/kb",
        messages=ask(QUESTION),
        stream=True,
        stream_options={"include_usage": True},
        extra_body=knobs,
    )
    chunks = [chunk async for chunk in stream]
    content, annotations = streamed_annotations(chunks)
    assert content == ANSWER
    assert as_json(annotations) == as_json(plain.choices[0].message.annotations)
    finishing = next(c for c in chunks if c.choices and c.choices[0].finish_reason)
    assert (finishing.model_extra or {})["rag_sources"] == (plain.model_extra or {})["rag_sources"]

    # the SDK's own accumulator types them on the final message, as for a non-streamed answer
    async with client.chat.completions.stream(
        model="rag/kb", messages=ask(QUESTION), extra_body=knobs
    ) as manager:
        final = await manager.get_final_completion()
    message = final.choices[0].message
    assert message.content == ANSWER
    assert message.annotations is not None
    assert all(isinstance(a, Annotation) for a in message.annotations)
    assert as_json(message.annotations) == as_json(plain.choices[0].message.annotations)


async def test_the_wire_shape(live: LiveServer, upstream: ScriptedServer) -> None:
    """The raw JSON: ``annotations`` on the message; in a stream, the finish chunk's only delta."""
    upstream.expect("POST", CHAT, completion("Three [1]."), streamed("Three [1]."))
    request = {"model": "rag/kb", "messages": ask(), "rag_enable_tools": False}
    async with httpx.AsyncClient(timeout=30) as http:
        plain = (await http.post(f"{live.url}{CHAT}", json=request, headers=AUTH)).json()
        raw = await http.post(f"{live.url}{CHAT}", json={**request, "stream": True}, headers=AUTH)
    upstream.verify()
    source = plain["rag_sources"][0]
    expected = [
        {
            "type": "url_citation",
            "url_citation": {
                "url": f"ragd://kb/{source['file_id']}#chunk={source['chunk_id']}",
                "title": "alpha.md",
                "start_index": 6,
                "end_index": 9,
            },
        }
    ]
    message = {"role": "assistant", "content": "Three [1].", "annotations": expected}
    assert plain["choices"][0]["message"] == message
    events = [json.loads(e.removeprefix("data: ")) for e in raw.text.split("\n\n")[:-2]]
    finishing = [e for e in events if e["choices"][0]["finish_reason"]]
    assert [e["choices"][0]["delta"] for e in finishing] == [{"annotations": expected}]
    assert all("annotations" not in e["choices"][0]["delta"] for e in events if e not in finishing)


async def test_no_citation_no_annotations_and_no_retrieval_no_field(
    upstream: ScriptedServer, client: openai.AsyncOpenAI
) -> None:
    upstream.expect("POST", CHAT, completion("Nothing cited [7]."), completion("Hello."))
    answer = await client.chat.completions.create(
        model="rag/kb", messages=ask(), extra_body={"rag_enable_tools": False}
    )
    assert answer.choices[0].message.annotations == []
    assert (answer.model_extra or {})["rag_unmatched_citations"] == [7]
    bare = await client.chat.completions.create(model="rag/kb", messages=ask(), extra_body={"rag_top_k": 0})
    assert bare.choices[0].message.annotations is None  # no retrieval: no rag_* fields, no annotations


async def test_a_web_page_is_cited_by_its_address(
    upstream: ScriptedServer, client: openai.AsyncOpenAI
) -> None:
    answer = "Every night at 02:00 [1]."
    upstream.expect("POST", CHAT, completion(answer), streamed("Every night ", "at 02:00 [1]."))
    knobs = {**NO_FLOOR, "rag_enable_tools": False}
    question = ask("When are delta backups copied?")
    plain = await client.chat.completions.create(model="rag/web", messages=question, extra_body=knobs)
    (annotation,) = plain.choices[0].message.annotations or []
    assert annotation.url_citation.url == PAGE_URL
    assert annotation.url_citation.title == PAGE_URL  # the file's name, which here is its address
    assert answer[annotation.url_citation.start_index : annotation.url_citation.end_index] == "[1]"

    stream = await client.chat.completions.create(
        model="rag/web", messages=question, stream=True, extra_body=knobs
    )
    content, annotations = streamed_annotations([chunk async for chunk in stream])
    assert content == answer
    assert as_json(annotations) == as_json([annotation])
