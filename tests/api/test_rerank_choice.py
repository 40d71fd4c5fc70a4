"""Choosing the reranker: per request (``rerank`` / ``rag_rerank`` / ``--rerank``) and per dataset.

Two remote rerankers speak Cohere's ``/v1/rerank`` on loopback: the default one prefers the beta
file ("Tuesday"), the one named ``alt`` the gamma file ("December").  Retrieval alone puts the alpha
file first for the question asked, so the first hit says which reranker ran, if any.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from ragd.api.app import create_app
from ragd.cli.app import app as cli
from ragd.settings import ChatSettings, LlmSettings, QueryGenerationSettings, RerankSettings
from tests.api.conftest import AUTH, THREE, ingest_over_http, service_settings
from tests.support.live_server import LiveServer
from tests.support.scripted_http import RecordedRequest, Reply, ScriptedServer

QUESTION = "How many approvals does the alpha protocol need?"
FIRST = {"default": "beta.md", "alt": "gamma.md", "none": "alpha.md"}


def prefers(word: str) -> Callable[[RecordedRequest], Reply]:
    def scores(request: RecordedRequest) -> Reply:
        docs = request.json["documents"]
        results = [{"index": i, "relevance_score": 0.99 if word in d else 0.1} for i, d in enumerate(docs)]
        return Reply.json({"results": sorted(results, key=lambda r: -r["relevance_score"])})

    return scores


def completion(_request: RecordedRequest) -> Reply:
    message = {"role": "assistant", "content": "ok"}
    return Reply.json(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }
    )


@pytest.fixture(scope="module")
def default_rr() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        server.on("POST", "/v1/rerank", prefers("Tuesday"))
        server.on("POST", "/v1/chat/completions", completion)
        yield server


@pytest.fixture(scope="module")
def alt_rr() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        server.on("POST", "/v1/rerank", prefers("December"))
        yield server


def remote(url: str) -> RerankSettings:
    return RerankSettings(provider="remote", base_url=url, model="rr", retries=0)  # type: ignore[call-arg]


@pytest.fixture(scope="module")
def live(
    tmp_path_factory: pytest.TempPathFactory,
    model_cache: Path,
    default_rr: ScriptedServer,
    alt_rr: ScriptedServer,
) -> Iterator[LiveServer]:
    settings = service_settings(tmp_path_factory.mktemp("rerankers"), model_cache).model_copy(
        update={
            "rerank": remote(default_rr.url),
            "rerankers": {"alt": remote(alt_rr.url)},
            "llm": LlmSettings(base_url=f"{default_rr.url}/v1", model="m", retries=0),  # type: ignore[call-arg]
            "query_generation": QueryGenerationSettings(enabled=False),  # type: ignore[call-arg]
            "chat": ChatSettings(retries=0, tools_enabled=False, min_score=0.0),
        }
    )
    with LiveServer(create_app(settings)) as server:
        server.wait_ready()
        ingest_over_http(server)
        yield server


def first_hit(live: LiveServer, **choice: Any) -> str:
    body = {"queries": [QUESTION], "collection_names": ["kb"], "k": 3, **choice}
    response = httpx.post(f"{live.url}/search", json=body, headers=AUTH, timeout=30)
    assert response.status_code == 200, response.text
    return str(response.json()["metadatas"][0][0]["name"])


@pytest.mark.parametrize(
    ("choice", "ran"),
    [({}, "default"), ({"rerank": True}, "default"), ({"rerank": False}, "none"), ({"rerank": "alt"}, "alt")],
)
def test_search_picks_the_reranker_per_request(live: LiveServer, choice: dict[str, Any], ran: str) -> None:
    assert first_hit(live, **choice) == FIRST[ran]


def test_an_unknown_reranker_is_a_400_naming_the_configured_ones(live: LiveServer) -> None:
    body = {"queries": [QUESTION], "collection_names": ["kb"], "rerank": "nope"}
    response = httpx.post(f"{live.url}/search", json=body, headers=AUTH, timeout=30)
    assert response.status_code == 400, response.text
    assert "default, alt" in response.text


def test_the_chat_proxy_picks_the_reranker(live: LiveServer) -> None:
    def sources(**choice: Any) -> list[str]:
        body = {
            "model": "rag/kb",
            "messages": [{"role": "user", "content": QUESTION}],
            "rag_top_k": 3,
            **choice,
        }
        response = httpx.post(f"{live.url}/v1/chat/completions", json=body, headers=AUTH, timeout=30)
        assert response.status_code == 200, response.text
        return [s["source"] for s in response.json()["rag_sources"]]

    assert sources()[0] == FIRST["default"]
    assert sources(rag_rerank=False)[0] == FIRST["none"]
    assert sources(rag_rerank="alt")[0] == FIRST["alt"]


def test_a_dataset_has_its_own_default_reranker(live: LiveServer) -> None:
    service = httpx.Client(base_url=live.url, headers=AUTH, timeout=60)
    tenant = service.post("/api/v1/tenants", json={"name": f"rr-{time.monotonic_ns()}"}).json()["id"]

    def dataset(reranker: str | None) -> str:
        body: dict[str, Any] = {"name": f"ds-{reranker}", "tenant_id": tenant}
        if reranker is not None:
            body["reranker"] = reranker
        made = service.post("/api/v1/datasets", json=body)
        assert made.status_code == 201, made.text
        assert made.json()["reranker"] == (reranker or "default")
        files = [("files", (name, data)) for _, name, data in THREE]
        job = service.post(f"/api/v1/datasets/{made.json()['id']}/files", files=files).json()["job"]
        for _ in range(600):
            if service.get(f"/api/v1/jobs/{job['id']}").json()["status"] == "succeeded":
                break
            time.sleep(0.1)
        return str(made.json()["id"])

    def first(dataset_id: str, **choice: Any) -> str:
        found = service.post(
            f"/api/v1/datasets/{dataset_id}/search", json={"query": QUESTION, "k": 3, **choice}
        )
        assert found.status_code == 200, found.text
        return str(found.json()["results"][0]["name"])

    plain, alt, off = dataset(None), dataset("alt"), dataset("none")
    assert first(plain) == FIRST["default"]
    assert first(alt) == FIRST["alt"]
    assert first(off) == FIRST["none"]
    assert first(off, rerank=True) == FIRST["default"]  # the request wins over the dataset
    assert first(alt, rerank=False) == FIRST["none"]
    changed = service.patch(f"/api/v1/datasets/{off}", json={"reranker": "default"})
    assert changed.status_code == 200, changed.text
    assert first(off) == FIRST["default"]
    bad = service.post("/api/v1/datasets", json={"name": "bad", "tenant_id": tenant, "reranker": "nope"})
    assert bad.status_code == 400, bad.text
    service.close()


@pytest.mark.slow  # > 5 s (the fast tier's bound)
def test_the_cli_picks_the_reranker(
    tmp_path: Path, model_cache: Path, default_rr: ScriptedServer, alt_rr: ScriptedServer
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for _, name, data in THREE:
        (folder / name).write_bytes(data)
    env = {
        "RAGD_DATA_DIR": str(tmp_path / "data"),
        "RAGD_EMBEDDING__CACHE_DIR": str(model_cache),
        "RAGD_RERANK__PROVIDER": "remote",
        "RAGD_RERANK__BASE_URL": default_rr.url,
        "RAGD_RERANK__RETRIES": "0",
        "RAGD_RERANK__MODEL": "rr",
        "RAGD_RERANKERS": json.dumps(
            {"alt": {"provider": "remote", "base_url": alt_rr.url, "model": "rr", "retries": 0}}
        ),
    }
    runner = CliRunner()
    assert runner.invoke(cli, ["ingest", str(folder), "-c", "kb"], env=env).exit_code == 0

    def first(*options: str) -> str:
        result = runner.invoke(cli, ["search", QUESTION, "-c", "kb", "--json", *options], env=env)
        assert result.exit_code == 0, result.output
        return str(json.loads(result.output)[0]["meta"]["name"])

    assert first() == FIRST["default"]
    assert first("--rerank", "alt") == FIRST["alt"]
    assert first("--rerank", "none") == FIRST["none"]
    env["RAGD_RERANKERS"] = json.dumps({"alt": {"provider": "remote", "base_url": alt_rr.url}})
    broken = runner.invoke(cli, ["search", QUESTION, "-c", "kb"], env={**env, "COLUMNS": "300"})
    assert broken.exit_code != 0
    assert "RAGD_RERANKERS['alt']" in broken.output
