"""HttpReranker against a scripted Cohere / TEI rerank server over real HTTP on loopback."""

from __future__ import annotations

import math
import time

import pytest

from ragd.errors import ConfigurationError, RerankFailed
from ragd.remote_json import Backoff
from ragd.rerank.remote_http import HttpReranker
from ragd.settings import RerankSettings
from tests.support.scripted_http import RecordedRequest, Reply, ScriptedServer

from .fakes import cohere_body, cohere_handler, relevance, tei_body, tei_handler

FAST = Backoff(base_s=0.01, max_s=0.05)
KEY = "rr-live-SECRET-0123456789"
QUERY = "where do cats sit?"
DOCS = ["the cat sat on the mat", "dogs chase cats", "quantum physics", "a red house", "the river"]


def reranker_for(url: str, api: str = "cohere", **overrides: object) -> HttpReranker:
    values: dict[str, object] = {
        "provider": "remote",
        "api": api,
        "base_url": url,
        "model": "rerank-test",
        "timeout_s": 5.0,
        "retries": 2,
    }
    return HttpReranker.from_settings(RerankSettings.model_validate(values | overrides), backoff=FAST)


async def rerank(reranker: HttpReranker, passages: list[str], query: str = QUERY) -> list[float]:
    try:
        return await reranker.rerank(query, passages)
    finally:
        await reranker.aclose()


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


# -- wire formats ------------------------------------------------------------------------------


async def test_cohere_request_and_out_of_order_results(scripted_server: ScriptedServer) -> None:
    scripted_server.on("POST", "/v1/rerank", cohere_handler())
    scores = await rerank(reranker_for(scripted_server.url), DOCS[:3])
    (request,) = scripted_server.requests
    assert request.json == {"model": "rerank-test", "query": QUERY, "documents": DOCS[:3], "top_n": 3}
    assert [r["index"] for r in cohere_body(QUERY, DOCS[:3])["results"]] != [0, 1, 2]  # really shuffled
    assert scores == pytest.approx([relevance(QUERY, d) for d in DOCS[:3]], abs=1e-12)
    assert request.header("authorization") is None  # no key configured
    assert request.header("content-type") == "application/json"
    scripted_server.verify()


@pytest.mark.parametrize("suffix", ["/v1", "/v1/", "/"])
async def test_cohere_path_does_not_double_v1(scripted_server: ScriptedServer, suffix: str) -> None:
    scripted_server.on("POST", "/v1/rerank", cohere_handler())
    assert len(await rerank(reranker_for(scripted_server.url + suffix), ["a"])) == 1
    assert [r.path for r in scripted_server.requests] == ["/v1/rerank"]


async def test_cohere_under_a_path_prefix(scripted_server: ScriptedServer) -> None:
    scripted_server.on("POST", "/proxy/v1/rerank", cohere_handler())
    await rerank(reranker_for(f"{scripted_server.url}/proxy"), ["a"])
    scripted_server.verify()


async def test_tei_request_and_out_of_order_results(scripted_server: ScriptedServer) -> None:
    scripted_server.on("POST", "/rerank", tei_handler())
    scores = await rerank(reranker_for(scripted_server.url, api="tei", model=""), DOCS)
    (request,) = scripted_server.requests
    assert request.json == {"query": QUERY, "texts": DOCS, "raw_scores": False, "truncate": True}
    assert scores == pytest.approx([relevance(QUERY, d) for d in DOCS], abs=1e-12)
    scripted_server.verify()


async def test_batches_map_back_to_the_passage_order(scripted_server: ScriptedServer) -> None:
    scripted_server.on("POST", "/rerank", tei_handler())
    scores = await rerank(reranker_for(scripted_server.url, api="tei", batch_size=2), DOCS)
    sent = {tuple(request.json["texts"]) for request in scripted_server.requests}  # concurrent: any order
    assert sent == {tuple(DOCS[0:2]), tuple(DOCS[2:4]), tuple(DOCS[4:5])}
    assert len(scripted_server.requests) == 3
    assert scores == pytest.approx([relevance(QUERY, d) for d in DOCS], abs=1e-12)


async def test_empty_passages_send_nothing(scripted_server: ScriptedServer) -> None:
    assert await rerank(reranker_for(scripted_server.url), []) == []
    assert scripted_server.requests == []


# -- scores ------------------------------------------------------------------------------------


async def test_logits_go_through_the_sigmoid_from_then_on(scripted_server: ScriptedServer) -> None:
    raw = [{"index": 0, "score": -2.0}, {"index": 1, "score": 0.5}, {"index": 2, "score": 3.0}]
    later = [{"index": 0, "score": 0.2}, {"index": 1, "score": 0.9}]
    scripted_server.expect("POST", "/rerank", Reply.json(raw), Reply.json(later))
    reranker = reranker_for(scripted_server.url, api="tei")
    try:
        first = await reranker.rerank(QUERY, ["a", "b", "c"])
        second = await reranker.rerank(QUERY, ["a", "b"])
    finally:
        await reranker.aclose()
    assert first == pytest.approx([sigmoid(-2.0), sigmoid(0.5), sigmoid(3.0)], abs=1e-12)
    assert second == pytest.approx([sigmoid(0.2), sigmoid(0.9)], abs=1e-12)  # the server sends logits


async def test_logits_in_one_batch_scale_the_whole_call(scripted_server: ScriptedServer) -> None:
    scripted_server.expect("POST", "/rerank", Reply.json([{"index": 0, "score": 0.25}]))
    scripted_server.expect("POST", "/rerank", Reply.json([{"index": 0, "score": 4.0}]))
    scores = await rerank(reranker_for(scripted_server.url, api="tei", batch_size=1), ["a", "b"])
    assert sorted(scores) == pytest.approx(sorted([sigmoid(0.25), sigmoid(4.0)]), abs=1e-12)


async def test_documents_left_out_score_zero(scripted_server: ScriptedServer) -> None:
    body = {"results": [{"index": 2, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.4}]}
    scripted_server.expect("POST", "/v1/rerank", Reply.json(body))
    assert await rerank(reranker_for(scripted_server.url), ["a", "b", "c", "d"]) == [0.4, 0.0, 0.9, 0.0]


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (Reply.json({"data": []}), "no 'results' list"),
        (Reply.json({"results": [{"index": 2, "relevance_score": 0.5}]}), r"index 2 is not in 0\.\.1"),
        (Reply.json({"results": [{"index": -1, "relevance_score": 0.5}]}), r"index -1 is not in"),
        (Reply.json({"results": [{"index": "0", "relevance_score": 0.5}]}), r"index '0' is not in"),
        (Reply.json({"results": [{"index": 0, "relevance_score": 0.5}] * 2}), "appears twice"),
        (Reply.json({"results": [{"index": 0, "relevance_score": "high"}]}), "no numeric 'relevance_score'"),
        (Reply.json({"results": [{"index": 0}]}), "no numeric 'relevance_score'"),
        (Reply.json({"results": ["0.5"]}), "not an object"),
        (Reply.json({"results": []}), r"scored none of the 2 document\(s\)"),
        (Reply.text("<html>oops</html>"), "not JSON"),
    ],
)
async def test_malformed_replies_fail(scripted_server: ScriptedServer, reply: Reply, reason: str) -> None:
    scripted_server.expect("POST", "/v1/rerank", reply)
    with pytest.raises(RerankFailed, match=reason) as caught:
        await rerank(reranker_for(scripted_server.url), ["a", "b"])
    assert caught.value.code == "RERANK_FAILED"
    assert len(scripted_server.requests) == 1  # a malformed answer is not retried


async def test_tei_malformed_reply_fails(scripted_server: ScriptedServer) -> None:
    scripted_server.expect("POST", "/rerank", Reply.json({"results": tei_body(QUERY, ["a"])}))
    with pytest.raises(RerankFailed, match="expected a list of results, got dict"):
        await rerank(reranker_for(scripted_server.url, api="tei"), ["a"])


async def test_non_finite_scores_fail(scripted_server: ScriptedServer) -> None:
    scripted_server.expect("POST", "/rerank", Reply(200, b'[{"index": 0, "score": NaN}]'))
    with pytest.raises(RerankFailed, match="not a finite number"):
        await rerank(reranker_for(scripted_server.url, api="tei"), ["a"])


# -- failures, retries, timeouts, credentials ----------------------------------------------------


async def test_retry_then_success(scripted_server: ScriptedServer) -> None:
    scripted_server.expect("POST", "/v1/rerank", Reply.error(503, "warming up"), Reply.dropped())
    scripted_server.expect("POST", "/v1/rerank", Reply.json(cohere_body(QUERY, ["a", "b"])))
    scores = await rerank(reranker_for(scripted_server.url), ["a", "b"])
    assert scores == pytest.approx([relevance(QUERY, "a"), relevance(QUERY, "b")], abs=1e-12)
    assert len(scripted_server.requests) == 3
    scripted_server.verify()


async def test_retries_exhausted(scripted_server: ScriptedServer) -> None:
    scripted_server.expect("POST", "/v1/rerank", *[Reply.error(502, "bad gateway")] * 2)
    with pytest.raises(RerankFailed, match=r"rerank request to .* failed after 2 attempt\(s\).*HTTP 502"):
        await rerank(reranker_for(scripted_server.url, retries=1), ["a"])
    scripted_server.verify()


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_client_errors_fail_at_once_without_the_key(
    scripted_server: ScriptedServer, status: int
) -> None:
    scripted_server.expect("POST", "/v1/rerank", Reply.error(status, f"invalid api key {KEY}"))
    with pytest.raises(RerankFailed) as caught:
        await rerank(reranker_for(scripted_server.url, api_key=KEY), ["a"])
    message = f"{caught.value} {caught.value.hint}"
    assert f"HTTP {status}" in message
    assert f"{scripted_server.url}/v1/rerank" in message
    assert KEY not in message
    assert "rerank." in (caught.value.hint or "")  # the hint points at the rerank settings
    assert len(scripted_server.requests) == 1
    assert scripted_server.requests[0].header("authorization") == f"Bearer {KEY}"


async def test_the_key_stays_out_of_the_logs(
    scripted_server: ScriptedServer, caplog: pytest.LogCaptureFixture
) -> None:
    scripted_server.expect("POST", "/v1/rerank", Reply.error(503, f"overloaded, key {KEY}"))
    scripted_server.expect("POST", "/v1/rerank", Reply.json(cohere_body(QUERY, ["a"])))
    with caplog.at_level("DEBUG"):
        await rerank(reranker_for(scripted_server.url, api_key=KEY), ["a"])
    assert "retry 1/2" in caplog.text
    assert KEY not in caplog.text


async def test_a_slow_server_fails_within_the_timeout(scripted_server: ScriptedServer) -> None:
    scripted_server.on("POST", "/rerank", lambda _: Reply.json(tei_body(QUERY, ["a"]), delay_s=30))
    reranker = reranker_for(scripted_server.url, api="tei", timeout_s=0.5, retries=3, batch_size=1)
    started = time.monotonic()
    with pytest.raises(RerankFailed, match=r"no answer within 0\.5 s") as caught:
        await rerank(reranker, ["a", "b", "c"])  # three concurrent batches share the bound
    assert 0.45 <= time.monotonic() - started < 1.0
    assert "rerank.timeout_s" in (caught.value.hint or "")


async def test_one_failing_batch_fails_the_call(scripted_server: ScriptedServer) -> None:
    def answer(request: RecordedRequest) -> Reply:
        texts = request.json["texts"]
        return Reply.error(400, "too long") if "bad" in texts else Reply.json(tei_body(QUERY, texts))

    scripted_server.on("POST", "/rerank", answer)
    with pytest.raises(RerankFailed, match="HTTP 400"):
        await rerank(reranker_for(scripted_server.url, api="tei", batch_size=1), ["a", "bad", "c"])


# -- configuration -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"base_url": None}, r"rerank\.base_url is required"),
        ({"base_url": "  "}, r"rerank\.base_url is required"),
        ({"base_url": "ftp://host"}, r"rerank\.base_url must be an http\(s\) URL"),
        ({"model": ""}, r"rerank\.model must name the server's model"),
    ],
)
def test_unusable_settings(overrides: dict[str, object], reason: str) -> None:
    with pytest.raises(ConfigurationError, match=reason):
        reranker_for("http://127.0.0.1:9", **overrides)


async def test_names() -> None:
    cohere = reranker_for("http://127.0.0.1:9/v1", model="bge-reranker-base")
    tei = reranker_for("http://user:pw@127.0.0.1:9/", api="tei", model="")
    await cohere.aclose()
    await tei.aclose()
    assert cohere.name == "remote:bge-reranker-base"
    assert tei.name == "remote:http://127.0.0.1:9"
