"""``ragd proxy`` over real HTTP: a watched folder, its files and health, re-syncs, the chat proxy
answering every model from the folder, and every other path relayed to the upstream byte for byte.

ragd runs under uvicorn with the embedded store and the real model; the upstream is a scripted
OpenAI-compatible server on loopback, which records what it was sent.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from typer.testing import CliRunner

from ragd.api.deps import readiness
from ragd.api.proxy_app import create_proxy_app, proxy_settings
from ragd.api.proxy_views import public_settings
from ragd.api.state import AppState
from ragd.bootstrap import open_services
from ragd.bootstrap.proxy import FolderProxy, proxy_services
from ragd.cli.app import app
from ragd.ingest.ids import file_id_for_path
from ragd.ingest.mirror import FolderMirror
from ragd.model_inputs import InputLimits
from ragd.observe.metrics import Metrics
from ragd.settings import (
    ChatSettings,
    EmbeddingSettings,
    LlmSettings,
    QueryGenerationSettings,
    ServerSettings,
    Settings,
    StoreSettings,
    WorkerSettings,
)
from tests.api.conftest import ALPHA, AUTH, BETA, GAMMA, KEY, service_settings
from tests.support.live_server import LiveServer
from tests.support.scripted_http import Reply, ScriptedServer

UPSTREAM_KEY = "sk-upstream-secret-not-ragds-key"
COLLECTION = "handbook"
DELTA = b"# Delta\nDelta backups are copied to the vault in Oslo every night.\n"
T = TypeVar("T")


def eventually(check: Callable[[], T | None], what: str, timeout_s: float = 90.0) -> T:
    """Poll ``check`` until it returns something truthy (the folder is watched: changes land soon)."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def settings_for(data_dir: Path, model_cache: Path, upstream: str) -> Settings:
    base = service_settings(data_dir, model_cache).model_copy(
        update={
            "llm": LlmSettings(api_key=UPSTREAM_KEY),  # type: ignore[call-arg]
            "query_generation": QueryGenerationSettings(enabled=False),  # type: ignore[call-arg]
            "chat": ChatSettings(retries=0, timeout_s=10),
            "worker": WorkerSettings(debounce_ms=100),
        }
    )
    return proxy_settings(base, upstream=f"{upstream}/v1", collection=COLLECTION)  # no model: zero-config


@pytest.fixture(scope="module")
def upstream() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        yield server


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    docs = tmp_path_factory.mktemp("proxy") / "docs"
    docs.mkdir()
    (docs / "alpha.md").write_bytes(ALPHA)
    (docs / "beta.md").write_bytes(BETA)
    return docs


@pytest.fixture(scope="module")
def live(
    tmp_path_factory: pytest.TempPathFactory, model_cache: Path, upstream: ScriptedServer, folder: Path
) -> Iterator[LiveServer]:
    settings = settings_for(tmp_path_factory.mktemp("ragd"), model_cache, upstream.url)
    with LiveServer(create_proxy_app(settings, FolderProxy(folder=folder, collection=COLLECTION))) as server:
        server.wait_ready()
        yield server
    upstream.verify()  # every scripted reply was used, nothing unexpected reached the upstream


@pytest.fixture
def http(live: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live.url, timeout=60) as client:
        yield client


def listed(http: httpx.Client) -> dict[str, dict[str, Any]]:
    """``GET /files`` once the first sync is done, by file name."""

    def synced() -> dict[str, Any] | None:
        body: dict[str, Any] = http.get("/files", headers=AUTH).json()
        return body if body["sync"]["syncs"] else None

    return {f["name"]: f for f in eventually(synced, "the first sync")["files"]}


def searched(http: httpx.Client, query: str) -> list[str]:
    r = http.post(
        "/search", json={"queries": [query], "collection_names": [COLLECTION], "k": 10}, headers=AUTH
    )
    assert r.status_code == 200, r.text
    return [meta["name"] for meta in r.json()["metadatas"][0]]


def test_files_lists_the_folder_after_start(http: httpx.Client, folder: Path) -> None:
    files = listed(http)
    assert {"alpha.md", "beta.md"} <= set(files)
    alpha = files["alpha.md"]
    assert alpha == {
        "path": f"{folder.as_posix()}/alpha.md",
        "name": "alpha.md",
        "file_id": file_id_for_path(folder / "alpha.md"),
        "status": "indexed",
        "chunks": 1,
    }
    body = http.get("/files", headers=AUTH).json()
    assert body["folder"] == str(folder.resolve())
    assert body["collection"] == COLLECTION
    assert http.get("/files").status_code == 401, "the key guards the folder's listing"


def test_a_file_dropped_into_the_folder_becomes_searchable(http: httpx.Client, folder: Path) -> None:
    (folder / "gamma.md").write_bytes(GAMMA)
    eventually(lambda: "gamma.md" in searched(http, "When are gamma releases frozen?"), "gamma.md indexed")
    assert listed(http)["gamma.md"]["chunks"] == 1


def test_reindex_syncs_the_folder_now(http: httpx.Client, folder: Path) -> None:
    (folder / "beta.md").unlink()
    (folder / "delta.md").write_bytes(DELTA)

    r = http.post("/reindex", params={"force": "true"}, headers=AUTH)
    assert r.status_code == 200, r.text
    body = r.json()
    present = sorted(p.name for p in folder.iterdir())
    assert body["indexed"] == len(present), "force: every file of the folder is indexed again"
    assert body["failed"] == 0
    assert body["pruned"] is True
    assert sorted(listed(http)) == present, "beta.md is gone (this sync or the watcher's removed it)"
    found = searched(http, "When do beta deployments run? Where are delta backups copied?")
    assert "beta.md" not in found
    assert "delta.md" in found
    assert http.post("/reindex").status_code == 401


def test_health_shows_the_configuration_with_secrets_masked(
    http: httpx.Client, folder: Path, upstream: ScriptedServer
) -> None:
    r = http.get("/health", headers=AUTH)
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "ok"
    assert body["folder"] == str(folder.resolve())
    assert body["collection"] == COLLECTION
    config = body["config"]
    assert config["llm"]["base_url"] == f"{upstream.url}/v1"
    assert config["llm"]["api_key"] == "***"
    assert config["server"]["api_key"] == "***"
    assert config["chat"]["default_collection"] == COLLECTION
    assert config["embedding"]["model"] == "packaged:all-MiniLM-L6-v2"
    assert config["chunking"]["strategy"] == "token"
    assert config["llm"]["model"] == ""
    assert UPSTREAM_KEY not in r.text
    assert KEY not in r.text

    anonymous = http.get("/health")
    assert anonymous.status_code == 200
    assert anonymous.json() == {"status": "ok"}, "the configuration is for the key holder"


def test_an_unknown_path_goes_to_the_upstream_byte_for_byte(
    http: httpx.Client, upstream: ScriptedServer
) -> None:
    sent = b'{"model":"embed-small",  "input": ["caf\xc3\xa9",\n"b"]}'
    answer = b'{"object": "list",   "data": []}\n'
    upstream.expect(
        "POST",
        "/v1/embeddings",
        Reply(201, answer, {"Content-Type": "application/json", "X-Upstream": "yes"}),
    )
    r = http.post(
        "/v1/embeddings?dims=8&tag=a%20b",
        content=sent,
        headers={**AUTH, "Content-Type": "application/json", "X-Client": "agent-cli"},
    )
    assert r.status_code == 201
    assert r.content == answer
    assert r.headers["x-upstream"] == "yes"
    got = upstream.requests_to("POST", "/v1/embeddings")[-1]
    assert got.body == sent
    assert got.query == "dims=8&tag=a%20b"
    assert got.header("authorization") == f"Bearer {UPSTREAM_KEY}", "the upstream's key, never ragd's"
    assert got.header("x-client") == "agent-cli"

    upstream.expect("GET", "/api/tags", Reply.json({"models": [{"name": "llama3"}]}))
    tags = http.get("/api/tags", headers=AUTH)
    assert tags.json() == {"models": [{"name": "llama3"}]}, "a path outside /v1 goes to the origin"

    upstream.expect("GET", "/", Reply.json({"running": True}))
    assert http.get("/", headers=AUTH).json() == {"running": True}, "no web UI here: / is the upstream's"

    before = len(upstream.requests)
    assert http.post("/v1/embeddings", content=sent).status_code == 401
    assert len(upstream.requests) == before, "an unauthenticated request never reaches the upstream"


def test_a_relayed_embeddings_body_is_not_held_to_ragd_s_own_models_bound(
    http: httpx.Client, upstream: ScriptedServer
) -> None:
    """The proxy serves no models of its own: a body past what ragd's model endpoints would take
    (413 there, unread) goes to the upstream, within RAGD_SERVER__MAX_JSON_BYTES."""
    big = InputLimits().body_bytes + 100_000
    sent = b'{"input": ["' + b"a" * big + b'"]}'
    upstream.expect("POST", "/v1/embeddings", Reply.json({"object": "list", "data": []}))
    r = http.post("/v1/embeddings", content=sent, headers={**AUTH, "Content-Type": "application/json"})
    assert r.status_code == 200, r.text[:300]
    assert len(upstream.requests_to("POST", "/v1/embeddings")[-1].body) == len(sent)


def test_every_listed_model_is_retrieved_as_listed(http: httpx.Client, upstream: ScriptedServer) -> None:
    listed(http)  # the first sync is done: the folder's collection holds chunks
    llama = {"id": "llama3", "object": "model", "created": 1, "owned_by": "o"}
    listing = Reply.json({"object": "list", "data": [llama]})
    upstream.expect("GET", "/v1/models", *[listing] * 3)
    models = http.get("/v1/models", headers=AUTH).json()["data"]
    assert [m["id"] for m in models] == ["llama3", f"rag/{COLLECTION}/llama3"]
    for entry in models:
        r = http.get(f"/v1/models/{entry['id']}", headers=AUTH)
        assert (r.status_code, r.json()) == (200, entry)
    assert http.get("/v1/models/rag/handbook/llama3").status_code == 401


def test_any_chat_model_answers_from_the_folder(
    http: httpx.Client, upstream: ScriptedServer, folder: Path
) -> None:
    upstream.expect(
        "POST",
        "/v1/chat/completions",
        Reply.json(
            {
                "id": "chatcmpl-up",
                "object": "chat.completion",
                "created": 1700000000,
                "model": "llama3",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "Three [1]."},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
            }
        ),
    )
    question = "How many approvals does the alpha protocol need?"
    r = http.post(
        "/v1/chat/completions",
        json={"model": "llama3", "messages": [{"role": "user", "content": question}]},
        headers=AUTH,
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["choices"][0]["message"]["content"] == "Three [1]."
    first = body["rag_sources"][0]
    assert first["path"] == f"{folder.as_posix()}/alpha.md"
    assert first["cited"] is True
    asked = upstream.requests_to("POST", "/v1/chat/completions")[-1].json
    assert asked["model"] == "llama3", "the model the client named answers"
    assert "three approvals from the steering board" in asked["messages"][0]["content"]


@pytest.fixture
def cli(tmp_path: Path, model_cache: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("RAGD_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("RAGD_EMBEDDING__CACHE_DIR", str(model_cache))
    monkeypatch.delenv("RAGD_SERVER__API_KEY", raising=False)
    return CliRunner()


def test_the_command_refuses_a_public_address_without_a_key(cli: CliRunner, tmp_path: Path) -> None:
    args = ["proxy", "--docs-folder", str(tmp_path), "--upstream", "http://127.0.0.1:9/v1", "--model", "m"]
    public = cli.invoke(app, [*args, "--host", "0.0.0.0"], env={"COLUMNS": "300"})
    assert public.exit_code == 2
    assert "refusing to serve on 0.0.0.0 without an API key" in public.output

    missing = cli.invoke(app, ["proxy", "--docs-folder", str(tmp_path / "nope"), "--upstream", "http://x/v1"])
    assert missing.exit_code == 2
    assert "NOT_FOUND: no such folder" in missing.output


def test_every_secret_of_the_settings_is_masked() -> None:
    settings = Settings(
        llm=LlmSettings(base_url="http://me:llm-pass@gpu:8000/v1", api_key="sk-llm"),  # type: ignore[arg-type]
        embedding=EmbeddingSettings(provider="openai", base_url="http://emb/v1", api_key="sk-emb"),  # type: ignore[arg-type]
        embedders={"e5": EmbeddingSettings(provider="tei", base_url="http://tei", api_key="sk-e5")},  # type: ignore[arg-type]
        store=StoreSettings(backend="qdrant", url="http://qdrant:6333", api_key="qdrant-secret"),  # type: ignore[arg-type]
        server=ServerSettings(api_key=KEY),  # type: ignore[arg-type]
    )
    shown = public_settings(settings)
    text = json.dumps(shown)
    for secret in ("llm-pass", "sk-llm", "sk-emb", "sk-e5", "qdrant-secret", KEY):
        assert secret not in text
    assert shown["llm"]["base_url"] == "http://me:***@gpu:8000/v1"
    assert shown["llm"]["api_key"] == shown["embedders"]["e5"]["api_key"] == "***"
    assert shown["store"]["url"] == "http://qdrant:6333"
    assert shown["store"]["api_key"] == "***", "a plain-str key is a secret too"
    assert shown["chunking"]["token_size"] == 400, "token_size is not a token"
    assert shown["retrieval"]["mode"] == "hybrid"


# -- images without OCR, and readiness while the first sync runs ----------------------------------

PNG = b"\x89PNG\r\n\x1a\n" + bytes(64)  # a picture: no text to index without an OCR engine


def no_ocr(settings: Settings) -> Settings:
    return settings.model_copy(update={"extract": settings.extract.model_copy(update={"ocr": "off"})})


def test_images_without_ocr_are_skipped_not_failed(
    tmp_path: Path, model_cache: Path, upstream: ScriptedServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A docs folder's screenshots: one summary line per sync, no failures, rows that say why."""
    docs = tmp_path / "docs"
    (docs / "ui").mkdir(parents=True)
    (docs / "alpha.md").write_bytes(ALPHA)
    (docs / "ui" / "one.png").write_bytes(PNG)
    (docs / "ui" / "two.png").write_bytes(PNG)
    settings = no_ocr(settings_for(tmp_path / "data", model_cache, upstream.url))
    caplog.set_level(logging.INFO, logger="ragd.ingest.mirror")
    proxy = FolderProxy(folder=docs, collection=COLLECTION)
    with LiveServer(create_proxy_app(settings, proxy)) as server, httpx.Client(base_url=server.url) as http:
        server.wait_ready()  # ready: the first sync is done
        body = http.get("/files", headers=AUTH).json()
        again = http.post("/reindex", headers=AUTH).json()
    last = body["sync"]["last"]
    assert (last["indexed"], last["failed"], last["skipped"]) == (1, 0, 2)
    assert (again["failed"], again["skipped"]) == (0, 2)
    rows = {f["name"]: f for f in body["files"]}
    assert rows["alpha.md"]["status"] == "indexed"
    assert [rows[n]["status"] for n in ("one.png", "two.png")] == ["skipped", "skipped"]
    assert rows["one.png"]["code"] == "OCR_UNAVAILABLE"
    summaries = [r.getMessage() for r in caplog.records if r.name == "ragd.ingest.mirror"]
    assert summaries, "the start-up sync's summary"
    assert "1 indexed, 0 unchanged, 0 failed, 0 removed" in summaries[0]
    for line in summaries:  # one line a sync, whatever the number of images
        assert "0 failed" in line
        assert "2 images skipped (no OCR here" in line


async def test_the_proxy_is_syncing_not_ready_until_its_first_sync_ends(
    tmp_path: Path, model_cache: Path, upstream: ScriptedServer, caplog: pytest.LogCaptureFixture
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "alpha.md").write_bytes(ALPHA)
    settings = settings_for(tmp_path / "data", model_cache, upstream.url)
    proxy = FolderProxy(folder=docs, collection=COLLECTION)
    caplog.set_level(logging.INFO)
    state = AppState(settings=settings, metrics=Metrics(), pending=proxy.pending)
    state.start(proxy_services(proxy))
    try:
        await state.wait_ready(120)
        assert proxy.mirror is not None
        await asyncio.wait_for(proxy.mirror.first_sync.wait(), 120)
        assert await readiness(state) is None
    finally:
        await state.stop()
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("ragd is")]
    assert said == [
        "ragd is up, not ready yet: syncing: the folder's first sync is under way",
        "ragd is ready: the folder's first sync is done",
    ]

    async with open_services(settings) as services:  # readiness itself, step by step
        mirror = FolderMirror(docs, COLLECTION, ingestor=services.ingestor, store=services.store)
        held = FolderProxy(folder=docs, collection=COLLECTION, mirror=mirror)
        state = AppState(settings=settings, metrics=Metrics(), services=services, pending=held.pending)
        assert await readiness(state) == "syncing: the folder's first sync is under way"
        await mirror.sync()
        assert await readiness(state) is None


SECRET = b"# Shadow\nroot:x:0:0:the shadow password of the build host is kingfisher-42\n"


def test_a_symlink_out_of_the_folder_is_skipped_and_reported(
    tmp_path: Path, model_cache: Path, upstream: ScriptedServer
) -> None:
    """``--docs-folder`` never reads through a link that leaves it (as a knowledge-base folder source)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "alpha.md").write_bytes(ALPHA)
    (tmp_path / "shadow.md").write_bytes(SECRET)
    (docs / "leak.md").symlink_to(tmp_path / "shadow.md")  # out of the folder: refused
    (docs / "alias.md").symlink_to(docs / "alpha.md")  # inside it: read as any file
    settings = settings_for(tmp_path / "data", model_cache, upstream.url)
    proxy = FolderProxy(folder=docs, collection=COLLECTION)
    with LiveServer(create_proxy_app(settings, proxy)) as server, httpx.Client(base_url=server.url) as http:
        server.wait_ready()
        body = http.get("/files", headers=AUTH).json()
        again = http.post("/reindex", headers=AUTH).json()
        hits = searched(http, "shadow password of the build host")
    rows = {f["name"]: f for f in body["files"]}
    assert rows["leak.md"]["status"] == "failed"
    assert rows["leak.md"]["code"] == "FORBIDDEN"
    assert "outside the folder" in rows["leak.md"]["message"]
    assert rows["alpha.md"]["status"] == rows["alias.md"]["status"] == "indexed"
    assert body["sync"]["last"]["failed"] == 1
    assert again["failed"] == 1  # reported on every sync, and it does not stop pruning
    assert "leak.md" not in hits
