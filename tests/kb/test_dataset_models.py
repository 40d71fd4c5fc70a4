"""A dataset may choose its dense model among the configured ones (RAGD_EMBEDDERS).

The second model here is an OpenAI-compatible endpoint on loopback (the real wire format) that
embeds a text as its hashed bag of words in 64 dimensions: texts that share words are close, so a
search over its vectors finds what it should.  Checked on every surface that searches datasets
(the dataset search, ``POST /search``, the chat proxy), plus the stored layout (a named vector per
model), the manifest guard (INDEX_MISMATCH) and immutability once a dataset has files.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from ragd.api.app import create_app
from ragd.bootstrap import open_services
from ragd.errors import IndexMismatch
from ragd.kb_types import Dataset
from ragd.retrieve.search import SearchRequest
from ragd.settings import (
    ChatSettings,
    EmbeddingSettings,
    LlmSettings,
    QueryGenerationSettings,
)
from ragd.types import Document, FileRef, PointFilter, SearchMode
from tests.kb.conftest import SERVICE_KEY, Api, kb_settings, new_tenant
from tests.support.live_server import LiveServer
from tests.support.scripted_http import RecordedRequest, Reply, ScriptedServer

DIM = 64
ALPHA = b"# Alpha\nThe alpha protocol requires three approvals from the steering board.\n"
GAMMA = b"# Gamma\nGamma releases are frozen during the December holidays.\n"
ALPHA_Q = "how many approvals does the alpha protocol need"
GAMMA_Q = "are gamma releases frozen in december"


def words_vector(text: str) -> list[float]:
    """The hashed bag of words of ``text``, L2-normalised (what the scripted model returns)."""
    vector = np.zeros(DIM)
    for word in re.findall(r"\w+", text.lower()):
        vector[int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "little") % DIM] += 1.0
    norm = float(np.linalg.norm(vector))
    return (vector / norm if norm else vector).tolist()  # type: ignore[no-any-return]


def embeddings_reply(request: RecordedRequest) -> Reply:
    texts = request.json["input"]
    data = [{"object": "embedding", "index": i, "embedding": words_vector(t)} for i, t in enumerate(texts)]
    return Reply.json({"object": "list", "model": "words-64", "data": data, "usage": {"total_tokens": 1}})


def embedded_texts(upstream: ScriptedServer) -> list[str]:
    return [t for r in upstream.requests if r.path == "/v1/embeddings" for t in r.json["input"]]


def words_model(upstream: ScriptedServer, dim: int = DIM) -> EmbeddingSettings:
    return EmbeddingSettings(  # type: ignore[call-arg]
        provider="openai", base_url=f"{upstream.url}/v1", model="words-64", dimension=dim, retries=0
    )


@pytest.fixture(scope="module")
def upstream() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        server.on("POST", "/v1/embeddings", embeddings_reply)
        yield server


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models") / "data"


@pytest.fixture(scope="module")
def server(data_dir: Path, model_cache: Path, upstream: ScriptedServer) -> Iterator[LiveServer]:
    settings = kb_settings(
        data_dir,
        model_cache,
        None,
        embedders={"words": words_model(upstream)},
        llm=LlmSettings(base_url=f"{upstream.url}/v1", model="up-model"),  # type: ignore[call-arg]
        query_generation=QueryGenerationSettings(enabled=False),  # type: ignore[call-arg]
        chat=ChatSettings(retries=0, timeout_s=10, tools_enabled=False, min_score=0.0),
    )
    with LiveServer(create_app(settings)) as live:
        live.wait_ready()
        yield live


@pytest.fixture(scope="module")
def editor(server: LiveServer) -> Iterator[Api]:
    service = Api(server.url, SERVICE_KEY)
    _, keys = new_tenant(service, "models", "editor")
    yield keys["editor"]
    keys["editor"].close()
    service.close()


@pytest.fixture(scope="module")
def datasets(editor: Api) -> dict[str, dict[str, Any]]:
    """``words``: ALPHA embedded by the words model; ``minilm``: GAMMA by the default model."""
    words = editor.ok("POST", "/api/v1/datasets", 201, json={"name": "w", "embedding": "words"})
    minilm = editor.ok("POST", "/api/v1/datasets", 201, json={"name": "m"})
    for ds, name, data in ((words, "alpha.md", ALPHA), (minilm, "gamma.md", GAMMA)):
        sent = editor.ok("POST", f"/api/v1/datasets/{ds['id']}/files", 202, files=[("files", (name, data))])
        assert editor.wait_job(sent["job"]["id"])["status"] == "succeeded"
    return {"words": words, "minilm": minilm}


def test_the_dataset_records_its_model_and_its_files_are_embedded_by_it(
    datasets: dict[str, dict[str, Any]], upstream: ScriptedServer
) -> None:
    assert datasets["words"]["embedding"] == "words"
    assert datasets["minilm"]["embedding"] == "default"
    sent = embedded_texts(upstream)
    assert any("three approvals" in t for t in sent), "ALPHA's chunks go to its model"
    assert not any("December holidays" in t for t in sent), "GAMMA's chunks stay with MiniLM"


def test_the_dataset_search_embeds_the_query_once_per_model(
    editor: Api, datasets: dict[str, dict[str, Any]], upstream: ScriptedServer
) -> None:
    hits = editor.search(ALPHA_Q, datasets["words"]["id"])
    assert hits
    assert "three approvals" in hits[0]["content"]
    assert embedded_texts(upstream).count(ALPHA_Q) == 1, "the query went to the dataset's model"
    # over both datasets: the query is embedded by each model, and each list answers its own
    everywhere = editor.search(GAMMA_Q, k=5)
    assert everywhere[0]["dataset_id"] == datasets["minilm"]["id"]
    assert {h["dataset_id"] for h in everywhere} == {datasets["words"]["id"], datasets["minilm"]["id"]}
    assert embedded_texts(upstream).count(GAMMA_Q) == 1
    first = editor.search(ALPHA_Q, k=5)
    assert first[0]["dataset_id"] == datasets["words"]["id"]


def test_search_and_the_chat_proxy_use_the_dataset_s_model(
    server: LiveServer, datasets: dict[str, dict[str, Any]], upstream: ScriptedServer
) -> None:
    auth = {"Authorization": f"Bearer {SERVICE_KEY}"}
    collection = datasets["words"]["collection_name"]
    body = {"queries": ["alpha protocol approvals"], "collection_names": [collection], "k": 3}
    found = httpx.post(f"{server.url}/search", json=body, headers=auth, timeout=60)
    assert found.status_code == 200, found.text
    assert "three approvals" in found.json()["documents"][0][0]
    assert "alpha protocol approvals" in embedded_texts(upstream)
    upstream.expect(
        "POST",
        "/v1/chat/completions",
        Reply.json(
            {
                "id": "c",
                "object": "chat.completion",
                "created": 1,
                "model": "up-model",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "Three [1]."},
                        "finish_reason": "stop",
                    }
                ],
            }
        ),
    )
    question = "how many approvals for the alpha protocol, please"
    chat = {"model": f"rag/{collection}", "messages": [{"role": "user", "content": question}]}
    answer = httpx.post(f"{server.url}/v1/chat/completions", json=chat, headers=auth, timeout=60)
    assert answer.status_code == 200, answer.text
    assert answer.json()["rag_sources"][0]["source"] == "alpha.md"
    assert question in embedded_texts(upstream)


def test_the_model_is_fixed_once_the_dataset_has_files(
    editor: Api, datasets: dict[str, dict[str, Any]]
) -> None:
    words = datasets["words"]["id"]
    refused = editor.patch(f"/api/v1/datasets/{words}", json={"embedding": "default"})
    assert refused.status_code == 409, refused.text
    assert "embedding model" in refused.json()["detail"]["error"]
    unknown = editor.post("/api/v1/datasets", json={"name": "u", "embedding": "bge-large"})
    assert unknown.status_code == 400
    assert "unknown embedding model 'bge-large'" in unknown.json()["detail"]["error"]
    empty = editor.ok("POST", "/api/v1/datasets", 201, json={"name": "empty"})
    moved = editor.ok("PATCH", f"/api/v1/datasets/{empty['id']}", json={"embedding": "words"})
    assert moved["embedding"] == "words"


def test_the_manifest_records_every_model(data_dir: Path, datasets: dict[str, dict[str, Any]]) -> None:
    manifests = list(data_dir.glob("qdrant/*/ragd-manifest.json"))
    assert len(manifests) == 1
    extra = json.loads(manifests[0].read_text())["extra_dense"]
    assert extra == [
        {"name": "words", "model": "openai:words-64", "dim": DIM, "query_prefix": "", "document_prefix": ""}
    ]


async def test_points_hold_their_model_s_vector_and_the_index_refuses_another_set_of_models(
    tmp_path: Path, model_cache: Path, upstream: ScriptedServer
) -> None:
    settings = kb_settings(tmp_path / "data", model_cache, None, embedders={"words": words_model(upstream)})
    async with open_services(settings) as svc:
        catalog = svc.knowledge().catalog
        tenant = await catalog.create_tenant("t")
        dataset = await catalog.create_dataset(
            Dataset(id="7d0c6f0e-3c1a-4d53-9a8e-0a5e3cf2b9a1", tenant_id=tenant.id, name="w",
                    collection_name="kb-words", embedding="words")
        )  # fmt: skip
        for collection, text in ((dataset.collection_name, ALPHA), ("plain", GAMMA)):
            ref = FileRef(file_id=f"f-{collection}", collection_name=collection, name="a.md", source="a.md")
            await svc.ingestor.ingest_document(Document(text=text.decode(), extractor="test"), ref)
        stored, _ = await svc.store.scroll(PointFilter(), limit=10, with_vectors=True)
        layout = {
            c.meta["collection_name"]: (c.space, None if c.dense is None else c.dense.shape) for c in stored
        }
        assert layout == {"kb-words": ("words", (DIM,)), "plain": (None, (384,))}
        hits = await svc.retriever.search(
            SearchRequest(query=ALPHA_Q, collections=("kb-words", "plain"), k=4, mode=SearchMode.DENSE)
        )
        assert {(h.meta["collection_name"], h.space) for h in hits} == {
            ("kb-words", "words"),
            ("plain", None),
        }
    for changed in ({}, {"words": words_model(upstream, dim=32)}):
        with pytest.raises(IndexMismatch, match="dense models: index has words=openai:words-64"):
            async with open_services(settings.model_copy(update={"embedders": changed})):
                pass
