"""Seed 001 (Leadmetrics knowledge bases), issue 34 §2: the rows it still lacked, each against the
issue's wording on a live service (real uvicorn, embedded Qdrant, the real model, the worker), on a
SQLite and on a PostgreSQL catalog.

* four standard datasets created with every tenant (a tenant template the service key sets);
* datasets addressed by name in search (the API and the MCP ``search`` tool);
* per-file chunking overrides at upload, kept on re-index;
* a label on each file's source, in listings and in the hits;
* ``datasetName`` on every hit;
* a search-time ``hnsw_ef``;
* a text content job queued over HTTP like a file.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from ragd.api.app import create_app
from ragd.kb.archive_format import decode_file, encode_file
from ragd.kb_types import ChunkingSpec, FileEntry
from ragd.settings import TenantSettings
from ragd.types import ChunkStrategy
from tests.kb.conftest import SERVICE_KEY, Api, kb_settings, new_tenant
from tests.support.live_server import LiveServer
from tests.support.postgres import PostgresServer

STANDARD = ["knowledge", "marketing", "products", "support"]  # the default template, by name
RETURNS = (
    "# Returns\nCustomers may return any unopened product within 30 days of delivery for a full "
    "refund. Opened products are exchanged, never refunded.\n"
)
LONG = "\n\n".join(
    f"Paragraph {i}: the onboarding checklist item {i} asks the account manager to confirm the "
    f"client's billing contact, the kickoff date and the reporting cadence for quarter {i % 4 + 1}."
    for i in range(12)
)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, model_cache: Path
) -> Iterator[LiveServer]:
    """A service whose tenant template is the settings' default (the suite's is empty)."""
    url = None
    pg: PostgresServer | None = None
    if request.param == "postgres":
        pg = request.getfixturevalue("postgres_server")
        url = pg.create_database()
    data_dir = tmp_path_factory.mktemp("leadmetrics") / "data"
    settings = kb_settings(data_dir, model_cache, url, tenants=TenantSettings())
    try:
        with LiveServer(create_app(settings)) as live:
            live.wait_ready()
            yield live
    finally:
        if pg is not None and url is not None:
            pg.drop_database(url)


@pytest.fixture(scope="module")
def service(server: LiveServer) -> Iterator[Api]:
    api = Api(server.url, SERVICE_KEY)
    yield api
    api.close()


@pytest.fixture(scope="module")
def lead(service: Api) -> Iterator[dict[str, Any]]:
    """A tenant made with the default template, its keys and its datasets by name."""
    tenant_id, keys = new_tenant(service, "leadmetrics", "admin", "editor", "reader")
    datasets = {d["name"]: d for d in keys["admin"].ok("GET", "/api/v1/datasets")["datasets"]}
    yield {"tenant_id": tenant_id, "keys": keys, "datasets": datasets}
    for api in keys.values():
        api.close()


def _code(response: Any) -> str:
    return str(response.json()["detail"]["code"])


def _content(api: Api, dataset_id: str, **body: Any) -> dict[str, Any]:
    made = api.ok("POST", f"/api/v1/datasets/{dataset_id}/content", 202, json=body)
    job = api.wait_job(made["job"]["id"])
    assert job["status"] == "succeeded", job
    return made  # type: ignore[no-any-return]


# -- 1. four standard datasets with every tenant ------------------------------------------------


def test_every_new_tenant_is_created_with_the_four_standard_datasets(lead: dict[str, Any]) -> None:
    assert sorted(lead["datasets"]) == STANDARD
    for dataset in lead["datasets"].values():
        assert dataset["tenant_id"] == lead["tenant_id"]
        assert dataset["files"] == 0
        assert dataset["collection_name"].startswith("kb-")
    reader = lead["keys"]["reader"]  # readable like any dataset the tenant made itself
    assert sorted(d["name"] for d in reader.ok("GET", "/api/v1/datasets")["datasets"]) == STANDARD


def test_the_service_key_sets_the_template_and_existing_tenants_keep_theirs(
    service: Api, lead: dict[str, Any]
) -> None:
    shown = service.ok("GET", "/api/v1/tenants/template")
    assert shown["custom"] is False
    assert sorted(d["name"] for d in shown["datasets"]) == STANDARD
    admin = lead["keys"]["admin"]
    assert admin.get("/api/v1/tenants/template").status_code == 403
    assert admin.put("/api/v1/tenants/template", json={"datasets": []}).status_code == 403
    template = {
        "datasets": [
            {"name": "faq", "description": "Questions", "chunking": {"strategy": "token", "size": 96}},
            {"name": "sales", "allowed_roles": ["sales"]},
        ]
    }
    try:
        stored = service.ok("PUT", "/api/v1/tenants/template", json=template)
        assert stored["custom"] is True
        assert [d["name"] for d in stored["datasets"]] == ["faq", "sales"]
        other_id, keys = new_tenant(service, "leadmetrics-eu", "admin")
        made = {d["name"]: d for d in keys["admin"].ok("GET", "/api/v1/datasets")["datasets"]}
        keys["admin"].close()
        assert sorted(made) == ["faq", "sales"]
        assert made["faq"]["chunking"] == {"strategy": "token", "size": 96, "overlap": None}
        assert made["faq"]["description"] == "Questions"
        assert made["sales"]["allowed_roles"] == ["sales"]
        # the tenant made before the edit is unchanged
        assert sorted(d["name"] for d in admin.ok("GET", "/api/v1/datasets")["datasets"]) == STANDARD
        # refused like a dataset's settings, and nothing stored
        twice = service.put("/api/v1/tenants/template", json={"datasets": [{"name": "a"}, {"name": "a"}]})
        assert twice.status_code == 400
        assert _code(twice) == "INVALID_REQUEST"
        overlap = {"name": "b", "chunking": {"strategy": "token", "size": 64, "overlap": 64}}
        bad = service.put("/api/v1/tenants/template", json={"datasets": [overlap]})
        assert bad.status_code == 400
        assert _code(bad) == "INVALID_REQUEST"
        assert [d["name"] for d in service.ok("GET", "/api/v1/tenants/template")["datasets"]] == [
            "faq",
            "sales",
        ]
        audit = service.ok("GET", "/api/v1/audit", params={"action": "tenant_template"})["records"]
        assert any(r["action"] == "tenant_template.set" and r["outcome"] == "ok" for r in audit)
        created = service.ok("GET", "/api/v1/audit", params={"action": "tenant.create"})["records"]
        mine = [r for r in created if r["target_id"] == other_id]
        assert mine[0]["detail"]["datasets"] == ["faq", "sales"]
    finally:
        reset = service.ok("DELETE", "/api/v1/tenants/template")
    assert reset["custom"] is False
    assert sorted(d["name"] for d in reset["datasets"]) == STANDARD


# -- 2 and 5. datasets by name; datasetName on every hit ----------------------------------------


def test_search_addresses_datasets_by_name_and_every_hit_names_its_dataset(lead: dict[str, Any]) -> None:
    editor = lead["keys"]["editor"]
    support = lead["datasets"]["support"]
    _content(editor, support["id"], title="Returns policy", text=RETURNS)
    found = editor.ok(
        "POST",
        "/api/v1/search",
        json={"query": "can I return an opened product?", "dataset_names": ["support"]},
    )
    assert found["datasets"] == [support["id"]]
    assert found["results"]
    for hit in found["results"]:
        assert hit["datasetName"] == hit["dataset_name"] == "support"
        assert hit["dataset_id"] == support["id"]
    everywhere = editor.ok("POST", "/api/v1/search", json={"query": "return an opened product"})["results"]
    assert {h["datasetName"] for h in everywhere} == {"support"}
    one = editor.ok("POST", f"/api/v1/datasets/{support['id']}/search", json={"query": "refund"})["results"]
    assert one[0]["datasetName"] == "support"
    # by name and by id together; an unknown name is a clear 404 with the not-found code
    both = editor.ok(
        "POST",
        "/api/v1/search",
        json={
            "query": "refund",
            "dataset_names": ["support"],
            "dataset_ids": [lead["datasets"]["products"]["id"]],
        },
    )
    assert sorted(both["datasets"]) == sorted([support["id"], lead["datasets"]["products"]["id"]])
    unknown = editor.post("/api/v1/search", json={"query": "refund", "dataset_names": ["billing"]})
    assert unknown.status_code == 404
    assert _code(unknown) == "NOT_FOUND"


async def test_the_mcp_search_tool_takes_dataset_names(server: LiveServer, lead: dict[str, Any]) -> None:
    support = lead["datasets"]["support"]
    _content(lead["keys"]["editor"], support["id"], title="Exchanges", text=RETURNS)
    headers = {"Authorization": f"Bearer {lead['keys']['reader'].key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120) as http,
        Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client,
    ):
        by_name = await client.call_tool("search", {"query": "opened products", "datasets": ["support"]})
        by_id = await client.call_tool("search", {"query": "opened products", "datasets": [support["id"]]})
        unknown = await client.call_tool("search", {"query": "opened products", "datasets": ["billing"]})
    assert not by_name.is_error
    assert by_name.structured_content is not None
    assert by_id.structured_content is not None
    hits = by_name.structured_content["hits"]
    assert hits
    assert hits == by_id.structured_content["hits"]
    assert {h["dataset_name"] for h in hits} == {"support"}
    assert {h["collection"] for h in hits} == {support["collection_name"]}
    assert unknown.is_error
    assert "NOT_FOUND" in " ".join(getattr(block, "text", "") for block in unknown.content)


# -- 3 and 4. per-file chunking at upload; the source label -----------------------------------


def _upload(api: Api, dataset_id: str, name: str, data: bytes, **form: str) -> httpx2.Response | Any:
    return api.post(f"/api/v1/datasets/{dataset_id}/files", files=[("files", (name, data))], data=form)


def test_a_file_keeps_its_own_chunking_given_at_upload_through_a_reindex(lead: dict[str, Any]) -> None:
    editor = lead["keys"]["editor"]
    knowledge = lead["datasets"]["knowledge"]["id"]
    plain = _upload(editor, knowledge, "checklist.md", LONG.encode())
    assert plain.status_code == 202, plain.text
    fine = _upload(
        editor,
        knowledge,
        "checklist-fine.md",
        LONG.encode(),
        chunk_strategy="token",
        chunk_size="32",
        chunk_overlap="0",
    )
    assert fine.status_code == 202, fine.text
    fine_file = fine.json()["files"][0]
    assert fine_file["chunking"] == {"strategy": "token", "size": 32, "overlap": 0}
    assert plain.json()["files"][0]["chunking"] is None
    editor.wait_job(plain.json()["job"]["id"])
    editor.wait_job(fine.json()["job"]["id"])
    files = {f["name"]: f for f in editor.ok("GET", f"/api/v1/datasets/{knowledge}/files")["files"]}
    coarse_chunks, fine_chunks = files["checklist.md"]["chunks"], files["checklist-fine.md"]["chunks"]
    assert fine_chunks > coarse_chunks >= 1
    page = editor.ok(
        "GET", f"/api/v1/datasets/{knowledge}/files/{fine_file['id']}/chunks", params={"limit": 200}
    )
    assert page["total"] == fine_chunks
    # a re-index reads the file's own chunking again, not the dataset's
    again = editor.ok("POST", f"/api/v1/datasets/{knowledge}/files/{fine_file['id']}/reindex", 202)
    assert editor.wait_job(again["job"]["id"])["status"] == "succeeded"
    after = editor.ok("GET", f"/api/v1/datasets/{knowledge}/files/{fine_file['id']}")
    assert after["chunks"] == fine_chunks
    assert after["chunking"] == {"strategy": "token", "size": 32, "overlap": 0}


@pytest.mark.parametrize(
    ("form", "status"),
    [
        ({"chunk_strategy": "token", "chunk_size": "64", "chunk_overlap": "64"}, 400),  # overlap >= size
        ({"chunk_strategy": "paragraphs"}, 400),  # not a chunker
        ({"chunk_size": "ten"}, 400),
        ({"chunk_size": "8"}, 400),  # below the bound of a dataset's size
        ({"chunk_strategy": "token", "chunk_size": "5000"}, 400),  # over the model's window
        ({"source_label": "x" * 201}, 400),
    ],
)
def test_a_bad_override_or_label_is_refused_before_anything_is_kept(
    lead: dict[str, Any], form: dict[str, str], status: int
) -> None:
    editor = lead["keys"]["editor"]
    marketing = lead["datasets"]["marketing"]["id"]
    before = editor.ok("GET", f"/api/v1/datasets/{marketing}/files")["files"]
    refused = _upload(editor, marketing, "brief.md", b"# Brief\nA campaign brief.\n", **form)
    assert refused.status_code == status, refused.text
    assert _code(refused) == "INVALID_REQUEST"
    assert editor.ok("GET", f"/api/v1/datasets/{marketing}/files")["files"] == before


def test_the_source_label_is_in_listings_and_in_the_hits(lead: dict[str, Any]) -> None:
    editor = lead["keys"]["editor"]
    products = lead["datasets"]["products"]["id"]
    sent = _upload(
        editor,
        products,
        "pricing.md",
        b"# Pricing\nThe Growth plan costs 149 euros a month and includes five seats.\n",
        source_label="HubSpot export",
    )
    assert sent.status_code == 202, sent.text
    editor.wait_job(sent.json()["job"]["id"])
    listed = editor.ok("GET", f"/api/v1/datasets/{products}/files")["files"]
    assert [f["source_label"] for f in listed if f["name"] == "pricing.md"] == ["HubSpot export"]
    found = editor.ok(
        "POST", f"/api/v1/datasets/{products}/search", json={"query": "Growth plan price", "explain": True}
    )["results"]
    assert found[0]["name"] == "pricing.md"
    assert found[0]["source_label"] == "HubSpot export"
    assert found[0]["meta"]["source_label"] == "HubSpot export"  # stored with the chunks


# -- 6. a search-time hnsw_ef --------------------------------------------------------------------


def test_hnsw_ef_is_a_bounded_search_field(lead: dict[str, Any]) -> None:
    reader = lead["keys"]["reader"]
    support = lead["datasets"]["support"]["id"]
    for bad in (0, 3, 5000, "many"):
        refused = reader.post(f"/api/v1/datasets/{support}/search", json={"query": "refund", "hnsw_ef": bad})
        assert refused.status_code == 422, refused.text
    taken = reader.post(f"/api/v1/datasets/{support}/search", json={"query": "refund", "hnsw_ef": 256})
    assert taken.status_code == 200, taken.text


# -- 7. a content (text) job queued over HTTP like a file ----------------------------------------


def test_a_text_is_queued_as_a_job_like_an_upload(lead: dict[str, Any]) -> None:
    editor = lead["keys"]["editor"]
    knowledge = lead["datasets"]["knowledge"]["id"]
    made = editor.ok(
        "POST",
        f"/api/v1/datasets/{knowledge}/content",
        202,
        json={
            "title": "Holiday / office hours",
            "text": "The office closes at 15:00 on the 24th of December.",
            "format": "text",
            "source_label": "Intranet",
            "chunking": {"strategy": "sentence", "size": 200, "overlap": 0},
        },
    )
    assert made["job"]["status"] == "queued"
    assert made["job"]["kind"] == "ingest"
    assert made["job"]["total"] == 1
    entry = made["files"][0]
    assert entry["name"] == "Holiday - office hours.txt"
    assert entry["source_label"] == "Intranet"
    assert entry["chunking"]["strategy"] == "sentence"
    job = editor.wait_job(made["job"]["id"])
    assert (job["status"], job["done"], job["failed"]) == ("succeeded", 1, 0)
    hits = editor.search("When does the office close on Christmas Eve?", knowledge)
    assert hits[0]["file_id"] == entry["id"]
    # kept like an upload: a re-index reads the stored text again
    again = editor.ok("POST", f"/api/v1/datasets/{knowledge}/files/{entry['id']}/reindex", 202)
    assert editor.wait_job(again["job"]["id"])["status"] == "succeeded"


def test_a_text_job_is_checked_like_an_upload(lead: dict[str, Any]) -> None:
    editor, reader = lead["keys"]["editor"], lead["keys"]["reader"]
    knowledge = lead["datasets"]["knowledge"]["id"]
    path = f"/api/v1/datasets/{knowledge}/content"
    too_big = editor.post(path, json={"title": "big", "text": "x" * 200_001})  # RAGD_EXTRACT__MAX_FILE_BYTES
    assert too_big.status_code == 413
    assert _code(too_big) == "FILE_TOO_LARGE"
    assert editor.post(path, json={"title": "t", "text": "x", "format": "pdf"}).status_code == 422
    assert editor.post(path, json={"title": "t"}).status_code == 422
    assert editor.post(path, json={"title": "t", "text": "x", "colour": "red"}).status_code == 422
    blank = editor.post(path, json={"title": "t", "text": "   "})
    assert blank.status_code == 400
    assert reader.post(path, json={"title": "t", "text": "x"}).status_code == 403
    missing = editor.post(
        "/api/v1/datasets/00000000-0000-0000-0000-000000000000/content", json={"title": "t", "text": "x"}
    )
    assert missing.status_code == 404


def test_a_name_reaches_only_the_keys_own_tenant(service: Api, lead: dict[str, Any]) -> None:
    """Both tenants have a "support" dataset (the template): a tenant key's name means its own, the
    service key must say which with an id, and another tenant's dataset is never reached by name."""
    other_id, keys = new_tenant(service, "leadmetrics-rival", "editor")
    rival = keys["editor"]
    try:
        theirs = {d["name"]: d for d in rival.ok("GET", "/api/v1/datasets")["datasets"]}
        _content(rival, theirs["support"]["id"], title="Secret", text="The rival codename is KESTREL-NINE.")
        mine = lead["keys"]["reader"].ok(
            "POST", "/api/v1/search", json={"query": "rival codename", "dataset_names": ["support"]}
        )
        assert mine["datasets"] == [lead["datasets"]["support"]["id"]]
        assert all("KESTREL" not in h["content"] for h in mine["results"])
        ambiguous = service.post("/api/v1/search", json={"query": "codename", "dataset_names": ["support"]})
        assert ambiguous.status_code == 400
        assert _code(ambiguous) == "INVALID_REQUEST"
        by_id = service.ok(
            "POST",
            "/api/v1/search",
            json={"query": "rival codename", "dataset_ids": [theirs["support"]["id"]]},
        )
        assert "KESTREL-NINE" in by_id["results"][0]["content"]
        assert by_id["results"][0]["datasetName"] == "support"
    finally:
        rival.close()
    assert other_id


def test_a_dataset_archive_keeps_a_files_chunking_and_source_label() -> None:
    own = ChunkingSpec(ChunkStrategy.TOKEN, 32, 0)
    entry = FileEntry(id="f", dataset_id="d", name="a.md", chunking=own, source_label="CRM", created_at=1.0)
    back = decode_file(encode_file(entry, has_upload=True)).entry
    assert (back.chunking, back.source_label) == (own, "CRM")
    plain = decode_file(encode_file(FileEntry(id="g", dataset_id="d", name="b.md"), has_upload=True)).entry
    assert (plain.chunking, plain.source_label) == (None, None)
