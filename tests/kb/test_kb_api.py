"""The knowledge-base API end to end: datasets, uploads through durable jobs, search, files, events."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from ragd.cli.app import app as cli
from tests.kb.conftest import Api, new_tenant
from tests.support.knobs_corpus import CAR, FILES, HARBOUR
from tests.support.live_server import LiveServer

ALPHA = b"# Alpha\nThe alpha protocol requires three approvals from the steering board.\n"
BETA = b"# Beta\nBeta deployments run every Tuesday at 06:00 UTC.\n"
GAMMA = b"# Gamma\nGamma releases are frozen during the December holidays.\n"
CORRUPT_PDF = b"%PDF-1.7\n this is not really a pdf \x00\x01\x02"


@pytest.fixture(scope="module")
def acme(service: Api) -> Iterator[dict[str, Api]]:
    _, keys = new_tenant(service, "acme", "admin", "editor", "reader")
    yield keys
    for api in keys.values():
        api.close()


def upload(api: Api, dataset_id: str, *files: tuple[str, bytes]) -> dict[str, Any]:
    parts = [("files", (name, data)) for name, data in files]
    return api.ok("POST", f"/api/v1/datasets/{dataset_id}/files", 202, files=parts)  # type: ignore[no-any-return]


def test_dataset_crud_and_validation(acme: dict[str, Api]) -> None:
    admin = acme["admin"]
    made = admin.ok("POST", "/api/v1/datasets", 201, json={"name": "handbook", "description": "HR"})
    assert made["collection_name"].startswith("kb-")
    dup = admin.post("/api/v1/datasets", json={"name": "handbook"})
    assert dup.status_code == 409
    assert dup.json()["detail"]["code"] == "CONFLICT"
    assert admin.post("/api/v1/datasets", json={"name": "x", "colour": "red"}).status_code == 422
    bad = admin.post(
        "/api/v1/datasets", json={"name": "y", "chunking": {"strategy": "token", "size": 64, "overlap": 64}}
    )
    assert bad.status_code == 400
    assert bad.json()["detail"]["code"] == "INVALID_REQUEST"
    # MiniLM's window holds 254 tokens of text: a bigger size is refused, never silently clamped
    huge = {"strategy": "token", "size": 2000, "overlap": 100}
    too_big = admin.post("/api/v1/datasets", json={"name": "z", "chunking": huge})
    assert too_big.status_code == 400, too_big.text
    assert "does not fit the embedding model's window" in too_big.json()["detail"]["error"]
    assert (
        admin.post("/api/v1/datasets", json={"name": "z", "chunking": {**huge, "size": 200}}).status_code
        == 201
    )
    listed = admin.ok("GET", "/api/v1/datasets")["datasets"]
    assert "handbook" in [d["name"] for d in listed]
    patched = admin.ok(
        "PATCH", f"/api/v1/datasets/{made['id']}", json={"description": "People", "allowed_roles": ["hr"]}
    )
    assert patched["description"] == "People"
    assert patched["allowed_roles"] == ["hr"]
    # the reader role is not "hr": the dataset is invisible to it, exactly like a missing one
    reader = acme["reader"]
    hidden = reader.get(f"/api/v1/datasets/{made['id']}")
    missing = reader.get("/api/v1/datasets/00000000-0000-0000-0000-000000000000")
    assert hidden.status_code == missing.status_code == 404
    assert reader.post("/api/v1/datasets", json={"name": "mine"}).status_code == 403
    assert admin.ok("DELETE", f"/api/v1/datasets/{made['id']}")["deleted"] is True
    assert admin.get(f"/api/v1/datasets/{made['id']}").status_code == 404


def test_upload_indexes_through_a_job_and_search_is_scoped(acme: dict[str, Api]) -> None:
    editor = acme["editor"]
    ds = editor.ok("POST", "/api/v1/datasets", 201, json={"name": "ops"})
    other = editor.ok("POST", "/api/v1/datasets", 201, json={"name": "misc"})
    sent = upload(editor, ds["id"], ("alpha.md", ALPHA), ("beta.md", BETA), ("broken.pdf", CORRUPT_PDF))
    assert [f["status"] for f in sent["files"]] == ["queued"] * 3
    job = editor.wait_job(sent["job"]["id"])
    assert job["status"] == "partial", job  # ran to the end; one of its files failed
    assert (job["total"], job["done"], job["failed"]) == (3, 2, 1)
    assert job["chunks"] >= 2
    assert [e["code"] for e in job["errors"]] == ["EXTRACTION_FAILED"]
    stages = {i["key"]: i["stage"] for i in job["items"]}
    assert sorted(stages.values()) == ["done", "done", "failed"]
    files = {f["name"]: f for f in editor.ok("GET", f"/api/v1/datasets/{ds['id']}/files")["files"]}
    assert files["alpha.md"]["status"] == "indexed"
    assert files["alpha.md"]["chunks"] >= 1
    assert files["broken.pdf"]["status"] == "failed"
    assert files["broken.pdf"]["error"]["code"] == "EXTRACTION_FAILED"
    upload(editor, other["id"], ("gamma.md", GAMMA))
    hits = editor.search("how many approvals does the alpha protocol need?", ds["id"])
    assert hits
    assert "three approvals" in hits[0]["content"]
    assert {h["dataset_id"] for h in hits} == {ds["id"]}
    everywhere = editor.search("frozen during the December holidays")
    assert everywhere  # the other dataset's job may still run: wait for it below
    editor.wait_job(editor.ok("GET", "/api/v1/jobs")["jobs"][0]["id"])
    everywhere = editor.search("frozen during the December holidays")
    assert everywhere[0]["dataset_id"] == other["id"]
    # relevance is absolute, and a floor (min_score or score_threshold) drops what is off-topic
    assert 0.0 <= everywhere[0]["relevance"] <= 1.0
    for field in ("min_score", "score_threshold"):
        body = {"query": "What is the capital of France?", field: 0.4}
        assert editor.ok("POST", "/api/v1/search", json=body)["results"] == []
        body["query"] = "how many approvals does the alpha protocol need?"
        assert editor.ok("POST", f"/api/v1/datasets/{ds['id']}/search", json=body)["results"]


def test_disable_enable_delete_and_reindex_a_file(acme: dict[str, Api]) -> None:
    editor = acme["editor"]
    ds = editor.ok("POST", "/api/v1/datasets", 201, json={"name": "toggles"})
    sent = upload(editor, ds["id"], ("alpha.md", ALPHA), ("beta.md", BETA))
    editor.wait_job(sent["job"]["id"])
    alpha = next(f for f in sent["files"] if f["name"] == "alpha.md")
    query = "alpha protocol approvals steering board"

    def names() -> set[str]:
        return {h["name"] for h in editor.search(query, ds["id"], k=10)}

    assert "alpha.md" in names()
    off = editor.ok("PATCH", f"/api/v1/datasets/{ds['id']}/files/{alpha['id']}", json={"enabled": False})
    assert off["enabled"] is False
    assert "alpha.md" not in names()
    editor.ok("PATCH", f"/api/v1/datasets/{ds['id']}/files/{alpha['id']}", json={"enabled": True})
    assert "alpha.md" in names()
    job = editor.ok("POST", f"/api/v1/datasets/{ds['id']}/files/{alpha['id']}/reindex", 202)["job"]
    done = editor.wait_job(job["id"])
    assert (done["status"], done["done"]) == ("succeeded", 1)
    assert "alpha.md" in names()
    removed = editor.ok("DELETE", f"/api/v1/datasets/{ds['id']}/files/{alpha['id']}")
    assert removed["chunks_deleted"] >= 1
    assert "alpha.md" not in names()
    assert editor.get(f"/api/v1/datasets/{ds['id']}/files/{alpha['id']}").status_code == 404


def test_deleting_a_dataset_removes_its_points(acme: dict[str, Api], service: Api) -> None:
    editor = acme["editor"]
    ds = editor.ok("POST", "/api/v1/datasets", 201, json={"name": "doomed"})
    editor.wait_job(upload(editor, ds["id"], ("gamma.md", GAMMA))["job"]["id"])
    body = {"queries": ["Gamma releases December"], "collection_names": [ds["collection_name"]], "k": 3}
    assert service.ok("POST", "/search", json=body)["documents"][0]
    gone = editor.ok("DELETE", f"/api/v1/datasets/{ds['id']}")
    assert gone["chunks_deleted"] >= 1
    assert service.ok("POST", "/search", json=body)["documents"] in ([], [[]])


def read_events(api: Api, params: dict[str, str], timeout_s: float = 60.0) -> list[dict[str, Any]]:
    events = []
    headers = {"Authorization": f"Bearer {api.key}"}
    with (
        httpx.Client(base_url=api.url, headers=headers) as client,
        client.stream("GET", "/api/v1/events", params=params, timeout=timeout_s) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
    return events


def test_events_stream_a_jobs_progress_until_it_ends(acme: dict[str, Api]) -> None:
    editor = acme["editor"]
    ds = editor.ok("POST", "/api/v1/datasets", 201, json={"name": "streamed"})
    files = [(f"note-{i}.md", f"# Note {i}\nItem {i} of the streamed batch.\n".encode()) for i in range(12)]
    job = upload(editor, ds["id"], *files)["job"]
    events = read_events(editor, {"job_id": job["id"]})
    assert events[-1]["status"] == "succeeded"
    assert events[-1]["done"] == events[-1]["total"] == 12
    done = [e["done"] for e in events]
    assert done == sorted(done)
    assert {"rate_per_s", "eta_s", "chunks", "failed", "errors"} <= set(events[-1])
    missing = editor.get("/api/v1/events", params={"job_id": "nope"})
    assert missing.status_code == 404


def test_cancel_a_queued_job(acme: dict[str, Api]) -> None:
    editor = acme["editor"]
    ds = editor.ok("POST", "/api/v1/datasets", 201, json={"name": "cancelled"})
    files = [(f"n{i}.md", f"# N{i}\nCancelled batch item {i}.\n".encode()) for i in range(40)]
    job = upload(editor, ds["id"], *files)["job"]
    editor.ok("POST", f"/api/v1/jobs/{job['id']}/cancel")
    final = editor.wait_job(job["id"])
    assert final["status"] in ("cancelled", "succeeded")  # it may have finished before the request
    if final["status"] == "cancelled":
        assert final["done"] < 40 or final["error"]["code"] == "CANCELLED"


def test_cli_follows_a_job_with_a_progress_bar(acme: dict[str, Api], kb_server: LiveServer) -> None:
    editor = acme["editor"]
    ds = editor.ok("POST", "/api/v1/datasets", 201, json={"name": "cli"})
    job = upload(editor, ds["id"], ("alpha.md", ALPHA), ("broken.pdf", CORRUPT_PDF))["job"]
    result = CliRunner().invoke(
        cli, ["jobs", "watch", job["id"], "--url", kb_server.url, "--key", editor.key]
    )
    assert result.exit_code == 1, result.output  # not every file made it
    assert f"job {job['id']}: partial" in result.output
    assert "EXTRACTION_FAILED" in result.output
    clean = upload(editor, ds["id"], ("beta.md", BETA))["job"]
    result = CliRunner().invoke(
        cli, ["jobs", "watch", clean["id"], "--url", kb_server.url, "--key", editor.key]
    )
    assert result.exit_code == 0, result.output
    assert f"job {clean['id']}: succeeded" in result.output


def test_tenant_keys_do_not_open_the_service_surface(acme: dict[str, Api]) -> None:
    body = {"queries": ["alpha"], "collection_names": ["kb"], "k": 3}
    # a collection that is not one of the tenant's datasets is left out, as an unknown one is
    assert acme["admin"].post("/search", json=body).json() == {
        "documents": [[]],
        "metadatas": [[]],
        "distances": [[]],
    }
    # ingestion stays the service key's
    assert acme["admin"].http.put("/api/v1/ingest", data={"file_id": "x"}).status_code == 401
    assert acme["admin"].get("/api/v1/tenants").json()["tenants"][0]["name"] == "acme"
    assert acme["admin"].post("/api/v1/tenants", json={"name": "evil"}).status_code == 403


def test_chunking_is_per_dataset(acme: dict[str, Api]) -> None:
    editor = acme["editor"]
    text = ("Sentence number {i} talks about the retention policy of archived mail. " * 1).strip()
    doc = "\n\n".join(text.format(i=i) for i in range(120)).encode()
    small = editor.ok(
        "POST",
        "/api/v1/datasets",
        201,
        json={"name": "small", "chunking": {"strategy": "recursive", "size": 300, "overlap": 0}},
    )
    large = editor.ok("POST", "/api/v1/datasets", 201, json={"name": "large"})
    a = editor.wait_job(upload(editor, small["id"], ("policy.md", doc))["job"]["id"])
    b = editor.wait_job(upload(editor, large["id"], ("policy.md", doc))["job"]["id"])
    assert a["chunks"] > 2 * b["chunks"] > 0
    started = time.monotonic()
    refused = editor.patch(f"/api/v1/datasets/{small['id']}", json={"chunking": {"strategy": "token"}})
    assert refused.status_code == 409
    assert time.monotonic() - started < 10


@pytest.mark.slow
def test_a_small_upload_is_not_starved_behind_a_big_one(acme: dict[str, Api]) -> None:
    """The knowledge-base worker runs jobs side by side and the embedder serves short texts first:
    a 5 KB file uploaded while a big one is being embedded finishes long before it."""
    editor = acme["editor"]
    ds = editor.ok("POST", "/api/v1/datasets", 201, json={"name": "fairness"})
    words = ("harbour", "ledger", "saffron", "tariff", "quarter", "manifest", "crate", "invoice")
    big_text = " ".join(words[(i * 7) % len(words)] + str(i % 97) for i in range(25_000))  # one line
    big = upload(editor, ds["id"], ("big.txt", big_text.encode()[:195_000]))["job"]
    time.sleep(1.0)  # the big file is being embedded
    small = upload(editor, ds["id"], ("small.txt", b"A short note about the harbour tariff. " * 130))["job"]
    small_done = editor.wait_job(small["id"])
    big_done = editor.wait_job(big["id"])
    assert (small_done["status"], big_done["status"]) == ("succeeded", "succeeded")
    assert small_done["finished_at"] < big_done["finished_at"], "the small file waited for the big one"
    small_took = small_done["finished_at"] - small_done["started_at"]
    big_took = big_done["finished_at"] - big_done["started_at"]
    assert small_took < big_took / 2, (small_took, big_took)  # a ratio: it holds on a loaded machine too


def test_the_dataset_search_honours_the_search_knobs(acme: dict[str, Api]) -> None:
    """vector_weight, max_per_file and diversity on POST /api/v1/datasets/{id}/search and
    /api/v1/search, with the corpus of tests/api/test_search_knobs.py."""
    editor = acme["editor"]
    body = {"name": "knobs", "chunking": {"strategy": "token", "size": 40, "overlap": 0}}
    ds = editor.ok("POST", "/api/v1/datasets", 201, json=body)
    job = upload(editor, ds["id"], *((name, data) for _, name, data in FILES))["job"]
    assert editor.wait_job(job["id"])["status"] == "succeeded"

    def names(query: str, k: int = 3, **knobs: object) -> list[str]:
        path = f"/api/v1/datasets/{ds['id']}/search"
        found = editor.ok("POST", path, json={"query": query, "k": k, **knobs})["results"]
        return [r["name"] for r in found]

    assert names(CAR, vector_weight=0.0)[0] == "parking.md"
    assert names(CAR, vector_weight=1.0)[0] == "engine.md"
    plain, capped = names(HARBOUR), names(HARBOUR, max_per_file=1)
    assert len(set(capped)) == len(capped) == 3
    assert plain.count("tariffs.md") > 1
    assert names(HARBOUR, diversity=0.7).count("tariffs.md") < plain.count("tariffs.md")
    assert set(names(HARBOUR, languages=["de", "fr"])) == {"hafen.md", "port.md"}
    across = editor.ok(
        "POST", "/api/v1/search", json={"query": CAR, "k": 3, "dataset_ids": [ds["id"]], "vector_weight": 1.0}
    )
    assert across["results"][0]["name"] == "engine.md"
    bad = editor.post(f"/api/v1/datasets/{ds['id']}/search", json={"query": CAR, "vector_weight": 2})
    assert bad.status_code == 422
