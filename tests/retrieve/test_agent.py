"""The agentic search loop over a real index, steered by a scripted OpenAI-compatible model.

The inner searcher is the real :class:`SearchPipeline` (embedded Qdrant Edge, the packaged MiniLM,
BM25) over a few small files; the model is the real :class:`OpenAIChatModel` (the ``openai`` SDK)
talking to a :class:`ScriptedServer` on loopback that answers with real chat-completions bodies.
The scripted model reads the numbered previews it is sent and grades them by keyword, as a real
model would read them, so indices are never hard-coded.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ragd.chunk.factory import build_chunker
from ragd.embed.base import DenseEmbedder
from ragd.embed.bm25 import Bm25SparseEmbedder
from ragd.extract.router import build_extractor
from ragd.ingest.pipeline import Ingestor
from ragd.llm.base import Completion
from ragd.llm.openai_chat import OpenAIChatModel
from ragd.observe.metrics import Metrics
from ragd.retrieve.agent import AgenticSearch
from ragd.retrieve.agent_tools import Verdict, preview, read_grade, read_queries
from ragd.retrieve.pipeline import PipelineRequest, PipelineResult, Searcher, SearchPipeline
from ragd.retrieve.search import Retriever
from ragd.settings import AgentSettings, ChunkSettings, ExtractSettings, LlmSettings, RetrievalSettings
from ragd.store.edge_store import EdgeStore
from ragd.types import Document, FileRef, Hit, IndexManifest, Message, ToolCall
from tests.support.scripted_http import RecordedRequest, Reply, ScriptedServer

CHAT = "/v1/chat/completions"
TAIL = "ZEBRATAIL-7731"  # only at the end of the long alpha chunk: never in a preview
ALPHA = (
    "The alpha protocol requires three approvals from the steering board. "
    + " ".join(
        f"Approval {i} of the alpha protocol is recorded by the board secretary in the minutes."
        for i in range(1, 6)
    )
    + f" The signed form is archived under code {TAIL}."
)
FILES = {
    "alpha.md": ALPHA,
    "beta.md": "Beta deployments run every Tuesday at 06:00 UTC.",
    "gamma.md": "Gamma releases are frozen during the December holidays.",
    "gamma-notes.md": "Gamma release notes are published in the gamma changelog after each release.",
    "lunch.md": "The cafeteria serves lasagne on Fridays and soup on Mondays.",
}
NUMBERED = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)


# -- the upstream's wire format ----------------------------------------------------------------------


def chat_reply(
    content: str | None = None, calls: list[dict[str, Any]] | None = None, usage: tuple[int, int] = (50, 10)
) -> Reply:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return Reply.json(
        {
            "id": "chatcmpl-agent",
            "object": "chat.completion",
            "created": 1700000000,
            "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
        }
    )


def call(name: str, arguments: dict[str, Any] | str, call_id: str = "call_1") -> dict[str, Any]:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def search_call(*queries: str, usage: tuple[int, int] = (50, 10)) -> Reply:
    return chat_reply(calls=[call("search_documents", {"queries": list(queries)})], usage=usage)


def shown(request: RecordedRequest) -> dict[int, str]:
    """The numbered previews in a grade request, as the model reads them."""
    body = request.json["messages"][-1]["content"]
    results = body.split("### Results\n", 1)[1]
    return {int(m.group(1)): m.group(2) for m in NUMBERED.finditer(results)}


def grader(*keywords: str, verdict: str = "accept", queries: tuple[str, ...] = (), usage: Any = (200, 20)):  # type: ignore[no-untyped-def]
    """A grade step: marks the previews that mention a keyword relevant."""

    def step(request: RecordedRequest) -> Reply:
        relevant = [n for n, text in shown(request).items() if any(k in text for k in keywords)]
        args: dict[str, Any] = {"relevant": relevant, "verdict": verdict}
        if queries:
            args["queries"] = list(queries)
        return chat_reply(calls=[call("grade", args)], usage=usage)

    return step


Step = Callable[[RecordedRequest], Reply] | Reply


class ScriptedModel:
    """The upstream model: each chat request takes the next step (a reply, or a function of the request)."""

    def __init__(self, server: ScriptedServer) -> None:
        self.server = server
        self.steps: list[Step] = []
        server.on("POST", CHAT, self._answer)

    def script(self, *steps: Step) -> None:
        self.steps.extend(steps)

    def _answer(self, request: RecordedRequest) -> Reply:
        if not self.steps:
            return Reply.error(500, "the scripted model has no step left")
        step = self.steps.pop(0)
        return step if isinstance(step, Reply) else step(request)

    @property
    def requests(self) -> list[RecordedRequest]:
        return self.server.requests_to("POST", CHAT)

    def done(self) -> None:
        assert not self.steps, f"{len(self.steps)} scripted model steps unused"
        self.server.verify()


class Recording:
    """The real pipeline, recording what each round returned."""

    def __init__(self, inner: Searcher) -> None:
        self.inner = inner
        self.rounds: list[PipelineResult] = []

    async def run(self, request: PipelineRequest) -> PipelineResult:
        result = await self.inner.run(request)
        self.rounds.append(result)
        return result


# -- the rig: a real index, a real pipeline, a real model client ---------------------------------------


@dataclass
class Rig:
    pipeline: SearchPipeline
    llm: OpenAIChatModel
    model: ScriptedModel
    metrics: Metrics

    def agent(self, inner: Searcher | None = None, **settings: Any) -> AgenticSearch:
        return AgenticSearch(inner or self.pipeline, self.llm, AgentSettings(**settings), self.metrics)

    def metric(self, name: str, **labels: str) -> float:
        return self.metrics.registry.get_sample_value(name, labels) or 0.0


@pytest.fixture
async def rig(tmp_path: Path, dense: DenseEmbedder, scripted_server: ScriptedServer) -> AsyncIterator[Rig]:
    chunker = build_chunker(
        ChunkSettings(), counter=dense.tokenizer, max_tokens=dense.spec.max_tokens, document_prefix=""
    )
    sparse = Bm25SparseEmbedder("english")
    store = EdgeStore(tmp_path / "data")
    await store.open(
        IndexManifest(dense.spec.model, dense.spec.dimension, "", "", sparse.name, chunker.version)
    )
    ingestor = Ingestor(
        extractor=build_extractor(ExtractSettings()), chunker=chunker, dense=dense, sparse=sparse, store=store
    )
    for name, text in FILES.items():
        ref = FileRef(file_id=name.split(".")[0], collection_name="kb", name=name, source=name)
        await ingestor.ingest_document(Document(text=text, extractor="test"), ref)
    metrics = Metrics()
    retriever = Retriever(store, dense, sparse, RetrievalSettings(), ("en",))
    llm = OpenAIChatModel.from_settings(
        LlmSettings(base_url=f"{scripted_server.url}/v1", model="m", retries=0, timeout_s=10)  # type: ignore[call-arg]
    )
    yield Rig(SearchPipeline(retriever, metrics=metrics), llm, ScriptedModel(scripted_server), metrics)
    await llm.aclose()
    await store.close()


def ask(question: str, k: int = 3, **fields: Any) -> PipelineRequest:
    return PipelineRequest(collections=("kb",), messages=(Message("user", question),), k=k, **fields)


def names(result: PipelineResult) -> list[str]:
    return [str(h.meta["name"]) for h in result.hits]


# -- the loop -----------------------------------------------------------------------------------------


async def test_accept_returns_the_hits_graded_relevant_and_the_model_sees_only_previews(rig: Rig) -> None:
    rig.model.script(search_call("alpha protocol approvals", usage=(60, 12)), grader("three approvals"))
    result = await rig.agent().run(ask("How many approvals does the alpha protocol need?"))

    assert (result.stopped, result.iterations) == ("accept", 1)
    assert result.queries == ("alpha protocol approvals",)
    assert names(result) == ["alpha.md"]
    assert TAIL in result.hits[0].content  # the caller gets the full text
    generate, grade = rig.model.requests
    assert [t["function"]["name"] for t in generate.json["tools"]] == ["search_documents"]
    assert (
        "USER: How many approvals does the alpha protocol need?" in generate.json["messages"][-1]["content"]
    )
    assert [t["function"]["name"] for t in grade.json["tools"]] == ["grade"]
    sent = json.dumps(grade.json)
    assert "The alpha protocol requires three approvals" in sent
    assert TAIL not in sent  # the model saw a preview, not the chunk
    assert len(shown(grade)) == 3  # every hit of the round was shown, numbered
    assert rig.metric("agent_tokens_total", role="prompt") == 60 + 200
    assert rig.metric("agent_tokens_total", role="completion") == 12 + 20
    assert rig.metric("agent_iterations_count") == 1
    rig.model.done()


async def test_accept_with_nothing_marked_returns_every_hit(rig: Rig) -> None:
    rig.model.script(search_call("beta deployments"), grader())
    result = await rig.agent().run(ask("When do beta deployments run?", k=2))
    assert result.stopped == "accept"
    assert len(result.hits) == 2
    assert names(result)[0] == "beta.md"


async def test_retry_runs_the_rewritten_query_and_merges_both_rounds(rig: Rig) -> None:
    question = "When do beta deployments run, and when are gamma releases frozen?"
    rig.model.script(
        search_call("beta deployment day"),
        grader("Tuesday", verdict="retry", queries=("gamma release freeze",)),
        grader("Tuesday", "December"),
    )
    recording = Recording(rig.pipeline)
    result = await rig.agent(recording).run(ask(question, k=2))

    first, second = recording.rounds
    assert "beta.md" in names(first)
    assert "beta.md" not in names(second)  # so the result below is a merge of both rounds
    assert (result.stopped, result.iterations) == ("accept", 2)
    assert result.queries == ("beta deployment day", "gamma release freeze")
    assert sorted(names(result)) == ["beta.md", "gamma.md"]
    second_grade = rig.model.requests[2]
    previews = " ".join(shown(second_grade).values())
    assert "Tuesday" in previews
    assert "December" in previews
    assert rig.metric("agent_retries_total") == 1
    rig.model.done()


async def test_max_iterations_bounds_the_retries(rig: Rig) -> None:
    rig.model.script(
        search_call("lunch menu"),
        grader(verdict="retry", queries=("cafeteria food",)),
        grader(verdict="retry", queries=("canteen soup",)),
    )
    result = await rig.agent(max_iterations=2).run(ask("What is for lunch?"))
    assert (result.stopped, result.iterations) == ("max_iterations", 2)
    assert result.queries == ("lunch menu", "cafeteria food")
    assert len(rig.model.requests) == 3  # generate + two grades, no third search
    rig.model.done()


async def test_timeout_on_the_grade_step_returns_the_first_round(rig: Rig) -> None:
    rig.model.script(search_call("beta deployments"), _delayed(5.0))
    started = time.perf_counter()
    result = await rig.agent(timeout_s=1.0).run(ask("When do beta deployments run?", k=2))
    elapsed = time.perf_counter() - started

    assert elapsed < 3.0
    assert (result.stopped, result.iterations) == ("timeout", 1)
    assert "deadline" in result.notes
    assert names(result)[0] == "beta.md"
    assert len(result.hits) == 2
    assert rig.metric("agent_timeouts_total") == 1


def _delayed(seconds: float) -> Reply:
    late = chat_reply(calls=[call("grade", {"relevant": [1], "verdict": "accept"})])
    return Reply(late.status, late.body, late.headers, delay_s=seconds)


async def test_timeout_before_any_search_runs_one_plain_search(rig: Rig) -> None:
    rig.model.script(_delayed(5.0))
    result = await rig.agent(timeout_s=0.5).run(ask("When do beta deployments run?", k=1))
    assert (result.stopped, result.iterations) == ("timeout", 1)
    assert result.queries == ("When do beta deployments run?",)
    assert names(result) == ["beta.md"]
    assert rig.metric("agent_timeouts_total") == 1


async def test_timeout_with_a_searcher_that_never_answers_returns_empty(rig: Rig) -> None:
    class Stuck:
        calls = 0

        async def run(self, request: PipelineRequest) -> PipelineResult:
            self.calls += 1
            await asyncio.sleep(60)
            raise AssertionError("unreachable")

    stuck = Stuck()
    started = time.perf_counter()
    result = await rig.agent(stuck, timeout_s=0.2).run(ask("anything", queries=("x",)))
    assert time.perf_counter() - started < 0.2 + 2.0 + 1.0  # the timeout, then the bounded rescue
    assert (result.stopped, result.hits, result.iterations) == ("timeout", (), 0)
    assert stuck.calls == 2  # the loop's search, then the rescue
    assert rig.metric("agent_timeouts_total") == 1


@pytest.mark.parametrize(
    ("text", "kind", "queries"),
    [
        (
            "1. beta deployment schedule\n2. gamma release freeze",
            "text_queries",
            ["beta deployment schedule", "gamma release freeze"],
        ),
        ('["gamma release freeze"]', "text_queries", ["gamma release freeze"]),
        ("", "last_message", ["Which releases are frozen in December?"]),
    ],
)
async def test_queries_written_as_text_are_parsed_and_searched(
    rig: Rig, text: str, kind: str, queries: list[str]
) -> None:
    rig.model.script(chat_reply(text), grader())
    result = await rig.agent().run(ask("Which releases are frozen in December?"))
    assert list(result.queries) == queries
    assert "gamma.md" in names(result)
    assert rig.metric("agent_fallback_total", reason=kind) == 1
    first_grade = rig.model.requests[1].json["messages"][-1]["content"]
    assert all(f"- {q}" in first_grade for q in queries)
    rig.model.done()


async def test_explicit_queries_skip_generation(rig: Rig) -> None:
    rig.model.script(grader("Tuesday"))
    result = await rig.agent().run(
        PipelineRequest(collections=("kb",), queries=("beta deployment schedule",), k=3)
    )
    assert names(result) == ["beta.md"]
    [grade] = rig.model.requests
    assert "### Question\nbeta deployment schedule" in grade.json["messages"][-1]["content"]


async def test_the_token_budget_stops_before_grading(rig: Rig) -> None:
    rig.model.script(search_call("beta deployments", usage=(90, 20)))
    result = await rig.agent(token_budget=100).run(ask("When do beta deployments run?", k=2))
    assert (result.stopped, result.iterations) == ("budget", 1)
    assert len(result.hits) == 2
    assert len(rig.model.requests) == 1  # no grade call
    rig.model.done()


async def test_the_token_budget_stops_a_retry(rig: Rig) -> None:
    rig.model.script(
        search_call("lunch", usage=(50, 10)),
        grader("lasagne", verdict="retry", queries=("soup",), usage=(300, 20)),
    )
    result = await rig.agent(token_budget=300).run(ask("What is for lunch?"))
    assert (result.stopped, result.iterations) == ("budget", 1)
    assert names(result) == ["lunch.md"]  # the graded-relevant hit of the one round
    rig.model.done()


async def test_a_failing_llm_falls_back_to_plain_search(rig: Rig) -> None:
    rig.model.script(Reply.error(503))
    result = await rig.agent().run(ask("When do beta deployments run?", k=1))
    assert (result.stopped, result.iterations) == ("fallback", 1)
    assert result.queries == ("When do beta deployments run?",)
    assert names(result) == ["beta.md"]
    assert rig.metric("agent_fallback_total", reason="llm_failed") == 1
    rig.model.done()


async def test_a_failing_grade_returns_the_round(rig: Rig) -> None:
    rig.model.script(search_call("beta deployments"), Reply.error(500))
    result = await rig.agent().run(ask("When do beta deployments run?", k=2))
    assert (result.stopped, result.iterations) == ("fallback", 1)
    assert len(result.hits) == 2
    assert rig.metric("agent_fallback_total", reason="llm_failed") == 1


@pytest.mark.parametrize(
    "reply",
    [
        chat_reply("The first result looks relevant."),
        chat_reply(calls=[call("grade", "{not json")]),
        chat_reply(calls=[call("grade", {"relevant": [99], "verdict": "accept"})]),
        chat_reply(calls=[call("grade", {"relevant": [1], "verdict": "maybe"})]),
    ],
    ids=["text", "invalid-json", "unknown-index", "unknown-verdict"],
)
async def test_an_unreadable_grade_accepts_what_was_found(rig: Rig, reply: Reply) -> None:
    rig.model.script(search_call("beta deployments"), reply)
    result = await rig.agent().run(ask("When do beta deployments run?", k=3))
    assert (result.stopped, result.iterations) == ("fallback", 1)
    assert len(result.hits) == 3
    assert rig.metric("agent_fallback_total", reason="grade_unparsed") == 1


# -- reading the model's answers (pure) ---------------------------------------------------------------


def _completion(text: str = "", **calls: str) -> Completion:
    return Completion(
        text=text, tool_calls=tuple(ToolCall(f"c{i}", n, a) for i, (n, a) in enumerate(calls.items()))
    )


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        (_completion(search_documents='{"queries": ["a", "b", "c"]}'), (["a", "b"], False)),
        (_completion(search_documents='{"queries": "one"}'), (["one"], False)),
        (_completion("- x\n- y", search_documents='{"queries": []}'), (["x", "y"], True)),
        (_completion('"quoted"\n2) second'), (["quoted", "second"], True)),
        (_completion(""), ([], True)),
    ],
)
def test_read_queries(completion: Completion, expected: tuple[list[str], bool]) -> None:
    assert read_queries(completion, max_queries=2) == expected


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"relevant": [2, 1, 2], "verdict": "accept"}', ((0, 1), Verdict.ACCEPT, ())),
        (
            '{"relevant": [], "verdict": "Retry", "queries": ["q1", "q2", "q3"]}',
            ((), Verdict.RETRY, ("q1", "q2")),
        ),
        ('{"relevant": [1], "verdict": "accept", "queries": ["ignored"]}', ((0,), Verdict.ACCEPT, ())),
        ('{"relevant": [0], "verdict": "accept"}', None),
        ('{"relevant": [true], "verdict": "accept"}', None),
        ('{"relevant": "1", "verdict": "accept"}', None),
        ('{"relevant": [1]}', None),
        ("[1]", None),
    ],
)
def test_read_grade(arguments: str, expected: tuple[Any, ...] | None) -> None:
    grade = read_grade(_completion(grade=arguments), shown=3, max_queries=2)
    assert (grade and (grade.relevant, grade.verdict, grade.queries)) == expected


def test_preview_folds_white_space_and_cuts() -> None:
    hit = Hit(id="h", content="one  two\n\nthree " + "x" * 50, meta={}, score=1.0)
    assert preview(hit, 14) == "one two three…"
    assert preview(hit, 1000) == "one two three " + "x" * 50


# -- the retrieval agent's settings and dashboard labels (issue 34, seed 002) ---------------------------


def test_the_seed_agent_variables_are_ragd_agent_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragd.settings import Settings

    for name, value in {"SYSTEM_PROMPT": "Find {max_queries}.", "FETCH_K": "20", "PREVIEW_K": "5"}.items():
        monkeypatch.setenv(f"RAGD_AGENT__{name}", value)
    monkeypatch.setenv("RAGD_AGENT__HISTORY_TURNS", "4")
    agent = Settings().agent  # type: ignore[call-arg]
    assert (agent.system_prompt, agent.fetch_k, agent.preview_k, agent.history_turns) == (
        "Find {max_queries}.",
        20,
        5,
        4,
    )


async def test_system_prompt_and_history_turns_shape_the_query_step(rig: Rig) -> None:
    conversation = (
        Message("user", "OLDEST-TURN tell me about lunch"),
        Message("assistant", "OLDER-TURN lasagne on Fridays"),
        Message("user", "What about beta?"),
        Message("assistant", "Beta runs weekly."),
        Message("user", "At what time do beta deployments run?"),
    )
    rig.model.script(search_call("beta deployment time"), grader("Tuesday"))
    agent = rig.agent(
        system_prompt="You are RETRIEVER-X: write up to {max_queries} queries.", history_turns=3
    )
    result = await agent.run(PipelineRequest(collections=("kb",), messages=conversation, k=2))

    assert names(result)[0] == "beta.md"
    system, history = rig.model.requests[0].json["messages"]
    assert system == {"role": "system", "content": "You are RETRIEVER-X: write up to 2 queries."}
    assert "USER: What about beta?" in history["content"]
    assert "USER: At what time do beta deployments run?" in history["content"]
    assert "OLDER-TURN" not in history["content"]  # only the last three messages
    assert "OLDEST-TURN" not in history["content"]
    rig.model.done()


async def test_fetch_k_widens_each_round_and_preview_k_bounds_what_is_graded(rig: Rig) -> None:
    rig.model.script(search_call("release"), grader("gamma", "Gamma"))
    recording = Recording(rig.pipeline)
    result = await rig.agent(recording, fetch_k=5, preview_k=2).run(ask("Tell me about releases", k=1))

    assert len(recording.rounds[0].hits) == 5  # the round fetched fetch_k, not k
    grade = rig.model.requests[1]
    assert sorted(shown(grade)) == [1, 2]  # the model graded the best two only
    assert len(result.hits) == 1  # the caller still gets k
    assert names(result)[0] in {"gamma.md", "gamma-notes.md"}
    rig.model.done()


async def test_the_loop_is_the_agent_loop_stage_and_the_path_has_the_seed_label(rig: Rig) -> None:
    rig.model.script(search_call("beta deployments"), grader("Tuesday"))
    await rig.agent().run(ask("When do beta deployments run?"))
    assert rig.metric("retrieval_stage_duration_seconds_count", stage="agent_loop") == 1
    assert rig.metric("hybrid_path_total", path="native_sparse") == 1
    assert rig.metric("hybrid_path_total", path="hybrid") == 0
    rig.model.done()
