"""The ingestion service's split deployment (seed 000, issue 34 §2): a process serves the ingestion
half, the retrieval half or both (``RAGD_SERVER__APIS``), and a tenant key of the ``ingest`` role
feeds datasets but never reads chunks (403 ``INGEST_ONLY``).  Real uvicorn servers on loopback, the
real model, a SQLite catalog (the role is a key's stored role: no catalog change)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragd.api.app import create_app
from ragd.api.halves import INGESTION, RETRIEVAL, ROUTES
from ragd.errors import IngestOnly
from ragd.kb.reach import check_collection
from ragd.kb.scoped_search import search_scoped_counted
from ragd.kb_types import INGEST_ROLE, Principal
from ragd.settings import LlmSettings, ServerSettings, Settings
from tests.kb.conftest import SERVICE_KEY, Api, kb_settings, new_tenant
from tests.support.live_server import LiveServer

pytestmark = pytest.mark.slow

#: one request per route of each half (path ids made up: a served route answers anything but 404)
CALLS = {
    INGESTION: [
        ("PUT", "/api/v1/ingest"),
        ("POST", "/api/v1/extract"),
        ("DELETE", "/api/v1/documents/f1"),
        ("PUT", "/process"),
        ("POST", "/api/v1/datasets/d1/files"),
        ("DELETE", "/api/v1/datasets/d1/files/f1"),
        ("POST", "/api/v1/datasets/d1/files/f1/reindex"),
        ("POST", "/api/v1/datasets/d1/reindex"),
        ("POST", "/api/v1/datasets/import"),
        ("POST", "/api/v1/datasets/d1/sources"),
        ("POST", "/api/v1/datasets/d1/sources/s1/sync"),
    ],
    RETRIEVAL: [
        ("POST", "/search"),
        ("POST", "/api/v1/search"),
        ("POST", "/api/v1/datasets/d1/search"),
        ("POST", "/api/v1/datasets/d1/eval"),
        ("POST", "/v1/chat/completions"),
        ("GET", "/v1/models"),
        ("POST", "/v1/embeddings"),
        ("POST", "/embed"),
        ("POST", "/v1/rerank"),
        ("POST", "/mcp"),
    ],
}
NOTE = b"# Zebra crossings\n\nThe quartz zebra crossing is painted blue."
#: served by every process
COMMON = [("GET", "/health"), ("GET", "/metrics"), ("GET", "/api/v1/datasets"), ("GET", "/api/v1/jobs")]


def _settings(root: Path, model_cache: Path, apis: tuple[str, ...]) -> Settings:
    # a chat upstream on a closed port: the chat routes are mounted, and no test reaches it
    settings = kb_settings(
        root / "data", model_cache, None, llm=LlmSettings(base_url="http://127.0.0.1:9/v1")
    )
    return settings.model_copy(update={"server": ServerSettings(api_key=SERVICE_KEY, apis=apis)})  # type: ignore[arg-type]


@pytest.fixture(scope="module", params=[(INGESTION,), (RETRIEVAL,)], ids="+".join)
def half(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, model_cache: Path
) -> Iterator[tuple[str, Api]]:
    apis: tuple[str, ...] = request.param
    settings = _settings(tmp_path_factory.mktemp("half"), model_cache, apis)
    with LiveServer(create_app(settings)) as server:
        server.wait_ready()
        api = Api(server.url, SERVICE_KEY)
        yield apis[0], api
        api.close()


def test_every_listed_route_is_a_route_of_the_full_app(settings: Settings) -> None:
    """A renamed route would silently stay served on the wrong half: each entry must exist."""
    full = settings.model_copy(update={"llm": LlmSettings(base_url="http://127.0.0.1:9/v1")})
    paths = create_app(full).openapi()["paths"]
    for half, routes in ROUTES.items():
        for method, path in routes:
            assert method.lower() in paths.get(path, {}), f"{half}: {method} {path} is not a route"


def test_a_process_serves_its_half_and_answers_the_other_as_absent(half: tuple[str, Api]) -> None:
    served, api = half
    other = RETRIEVAL if served == INGESTION else INGESTION

    def absent(method: str, path: str) -> tuple[int, object]:
        """What a path that never existed answers, in its surface's error shape (OpenAI's under /v1/)."""
        r = api.request(method, "/v1/no-such-route" if path.startswith("/v1/") else "/no-such-route")
        return r.status_code, r.json()

    for method, path in CALLS[served] + COMMON:  # served: any answer but the absent route's
        r = api.request(method, path, json={})
        assert r.status_code != 404 or r.json() != absent(method, path)[1], f"{method} {path}: {r.text}"
    for method, path in CALLS[other]:
        r = api.request(method, path, json={})
        assert (r.status_code, r.json()) == absent(method, path), f"{method} {path}: {r.text}"
    assert api.get("/openapi.json").status_code == 200


def test_ingest_key_feeds_a_dataset_and_reads_no_chunk(
    tmp_path_factory: pytest.TempPathFactory, model_cache: Path
) -> None:
    settings = _settings(tmp_path_factory.mktemp("both"), model_cache, (INGESTION, RETRIEVAL))
    with LiveServer(create_app(settings)) as server:
        server.wait_ready()
        service = Api(server.url, SERVICE_KEY)
        _, keys = new_tenant(service, "feeder", "ingest", "reader")
        ingest, reader = keys["ingest"], keys["reader"]
        try:
            ds = ingest.ok("POST", "/api/v1/datasets", 201, json={"name": "inbox"})
            sent = ingest.ok(
                "POST",
                f"/api/v1/datasets/{ds['id']}/files",
                202,
                files=[("files", ("note.md", NOTE))],
            )
            job = ingest.wait_job(sent["job"]["id"])
            assert job["status"] == "succeeded", job
            file_id = sent["files"][0]["id"]
            listed = ingest.ok("GET", f"/api/v1/datasets/{ds['id']}/files")["files"]
            assert [f["status"] for f in listed] == ["indexed"]
            # what the key fed is there: a reader finds it
            hits = reader.search("quartz zebra crossing", ds["id"])
            assert any("quartz zebra" in h["content"] for h in hits), hits
            coll = ds["collection_name"]
            refused = [
                ("POST", "/api/v1/search", {"json": {"query": "zebra"}}),
                ("POST", f"/api/v1/datasets/{ds['id']}/search", {"json": {"query": "zebra"}}),
                ("POST", "/search", {"json": {"queries": ["zebra"], "collection_names": [coll], "k": 3}}),
                ("GET", f"/api/v1/datasets/{ds['id']}/files/{file_id}/chunks", {}),
                ("GET", f"/api/v1/datasets/{ds['id']}/export", {}),
            ]
            for method, path, kwargs in refused:
                r = ingest.request(method, path, **kwargs)
                assert r.status_code == 403, f"{method} {path}: {r.status_code} {r.text}"
                assert "INGEST_ONLY" in r.text, r.text
            chat = ingest.post(
                "/v1/chat/completions",
                json={"model": f"rag/{coll}", "messages": [{"role": "user", "content": "zebra?"}]},
            )
            assert chat.status_code == 403, chat.text
            assert chat.json()["error"]["code"] == "INGEST_ONLY", chat.text
            # the same key still manages what it fed
            ingest.ok("POST", f"/api/v1/datasets/{ds['id']}/files/{file_id}/reindex", 202)
        finally:
            for api in (service, ingest, reader):
                api.close()


async def test_mcp_search_and_read_document_refuse_an_ingest_key_before_anything_is_read() -> None:
    """MCP ``search`` and ``read_document`` run these two use-cases (ragd.mcp.tools): the check comes
    first, so no catalog or store is reached (none is given here)."""
    ingest = Principal(tenant_id="t1", role=INGEST_ROLE)
    with pytest.raises(IngestOnly):
        await search_scoped_counted(None, None, ingest, "zebra")  # type: ignore[arg-type]
    with pytest.raises(IngestOnly):
        await check_collection(None, ingest, "kb-x")  # type: ignore[arg-type]
