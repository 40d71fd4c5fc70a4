"""What the web UI reads from the knowledge-base API: dataset counts, explained search, a file's
chunks, job retry and the system overview, over HTTP on a live server (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.kb.conftest import Api, new_tenant

ALPHA = b"# Alpha\nThe alpha protocol requires three approvals from the steering board.\n"
BETA = b"# Beta\nBeta deployments run every Tuesday at 06:00 UTC.\n"
CORRUPT_PDF = b"%PDF-1.7\n this is not really a pdf \x00\x01\x02"
LONG = "\n\n".join(
    f"## Part {i}\nSection {i} explains step {i} of the harbour crane maintenance routine in detail, "
    f"with the torque value {i * 10} newton metres and the inspection interval of {i} weeks."
    for i in range(8)
).encode()
NO_SUCH = "00000000-0000-0000-0000-000000000000"


@pytest.fixture(scope="module")
def acme(service: Api) -> Iterator[dict[str, Api]]:
    _, keys = new_tenant(service, "acme-ui", "admin", "editor", "reader")
    yield keys
    for api in keys.values():
        api.close()


@pytest.fixture(scope="module")
def rival(service: Api) -> Iterator[Api]:
    _, keys = new_tenant(service, "rival-ui", "admin")
    yield keys["admin"]
    keys["admin"].close()


def upload(api: Api, dataset_id: str, *files: tuple[str, bytes]) -> dict[str, Any]:
    parts = [("files", (name, data)) for name, data in files]
    return api.ok("POST", f"/api/v1/datasets/{dataset_id}/files", 202, files=parts)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def filled(acme: dict[str, Api]) -> dict[str, Any]:
    """A dataset with two indexed files and one failed one, and the job that indexed them."""
    editor = acme["editor"]
    ds = editor.ok("POST", "/api/v1/datasets", 201, json={"name": "counted"})
    sent = upload(editor, ds["id"], ("alpha.md", ALPHA), ("beta.md", BETA), ("broken.pdf", CORRUPT_PDF))
    job = editor.wait_job(sent["job"]["id"])
    assert (job["status"], job["finished"], job["done"], job["failed"]) == ("partial", True, 2, 1), job
    return {"dataset": ds, "job": job, "files": {f["name"]: f for f in sent["files"]}}


def test_datasets_carry_their_file_counts_and_a_status(
    acme: dict[str, Api], rival: Api, filled: dict[str, Any]
) -> None:
    editor = acme["editor"]
    ds = filled["dataset"]
    empty = editor.ok("POST", "/api/v1/datasets", 201, json={"name": "nothing yet"})
    assert (empty["files"], empty["chunks"], empty["files_by_status"], empty["status"]) == (0, 0, {}, "empty")
    assert empty["last_update"] == empty["updated_at"]
    one = editor.ok("GET", f"/api/v1/datasets/{ds['id']}")
    files = editor.ok("GET", f"/api/v1/datasets/{ds['id']}/files")["files"]
    assert one["files"] == 3
    assert one["files_by_status"] == {"indexed": 2, "failed": 1}
    assert one["status"] == "partial"  # a failed file, two searchable ones, none in progress
    assert one["chunks"] == sum(f["chunks"] for f in files) >= 2
    assert one["last_update"] == max([one["updated_at"], *(f["updated_at"] for f in files)])
    listed = {d["id"]: d for d in editor.ok("GET", "/api/v1/datasets")["datasets"]}
    assert listed[ds["id"]] == one
    assert listed[empty["id"]]["status"] == "empty"
    assert rival.get(f"/api/v1/datasets/{ds['id']}").status_code == 404
    assert ds["id"] not in {d["id"] for d in rival.ok("GET", "/api/v1/datasets")["datasets"]}
    # every file indexed: ready; and another tenant's dataset is missing
    readied = editor.ok("POST", "/api/v1/datasets", 201, json={"name": "readied"})
    editor.wait_job(upload(editor, readied["id"], ("alpha.md", ALPHA))["job"]["id"])
    assert editor.ok("GET", f"/api/v1/datasets/{readied['id']}")["status"] == "ready"
    # every file failed: nothing searchable is an error, and so is its job
    broken = editor.ok("POST", "/api/v1/datasets", 201, json={"name": "broken"})
    failed = editor.wait_job(upload(editor, broken["id"], ("broken.pdf", CORRUPT_PDF))["job"]["id"])
    assert (failed["status"], failed["error"], failed["failed"]) == ("failed", None, 1)
    assert editor.ok("GET", f"/api/v1/datasets/{broken['id']}")["status"] == "error"
    editor.ok("DELETE", f"/api/v1/datasets/{empty['id']}")


def test_explained_search_shows_ids_component_scores_and_timings(
    acme: dict[str, Api], filled: dict[str, Any]
) -> None:
    reader = acme["reader"]
    ds = filled["dataset"]
    query = "how many approvals does the alpha protocol need?"
    plain = reader.ok("POST", f"/api/v1/datasets/{ds['id']}/search", json={"query": query})
    assert set(plain) == {"datasets", "results"}
    assert "scores" not in plain["results"][0]
    assert "id" not in plain["results"][0]
    body = {"query": query, "explain": True}
    explained = reader.ok("POST", f"/api/v1/datasets/{ds['id']}/search", json=body)
    top = explained["results"][0]
    assert "three approvals" in top["content"]
    assert len(top["id"]) == 36
    scores = top["scores"]
    assert scores["dense"] is not None
    assert scores["sparse"] is not None
    assert scores["fused"] == pytest.approx(top["score"])  # convex fusion: the score is the fused value
    assert scores["rerank"] is None  # no reranker configured
    timings = explained["timings_ms"]
    assert list(timings)[:4] == ["embed_sparse", "embed_dense", "qdrant", "rerank"]
    assert list(timings)[-1] == "total"
    assert timings["embed_dense"] > 0
    assert timings["qdrant"] > 0
    assert timings["rerank"] is None
    assert timings["total"] >= timings["retrieve"] >= timings["embed_dense"]
    dense = reader.ok("POST", "/api/v1/search", json={**body, "mode": "dense"})
    d = dense["results"][0]["scores"]
    assert d["dense"] is not None
    assert (d["sparse"], d["fused"]) == (None, None)
    assert dense["timings_ms"]["embed_sparse"] is None
    sparse = reader.ok("POST", "/api/v1/search", json={**body, "mode": "sparse"})
    s = sparse["results"][0]["scores"]
    assert s["sparse"] is not None
    assert s["fused"] is None
    # ranked by BM25 alone; the query is then embedded for the hits' cosine, which their relevance
    # reads (the same relevance a hybrid search gives the same match: docs/scoring.md)
    assert s["dense"] == pytest.approx(d["dense"], abs=1e-4)
    assert sparse["timings_ms"]["embed_dense"] > 0
    assert reader.post("/api/v1/search", json={**body, "explain": "maybe"}).status_code == 422


def test_a_files_chunks_page_by_page_and_around_a_hit(acme: dict[str, Api], rival: Api) -> None:
    editor, reader = acme["editor"], acme["reader"]
    chunking = {"strategy": "token", "size": 32, "overlap": 0}
    ds = editor.ok("POST", "/api/v1/datasets", 201, json={"name": "chunked", "chunking": chunking})
    sent = upload(editor, ds["id"], ("crane.md", LONG))
    assert editor.wait_job(sent["job"]["id"])["done"] == 1
    file_id = sent["files"][0]["id"]
    path = f"/api/v1/datasets/{ds['id']}/files/{file_id}/chunks"
    everything = reader.ok("GET", path, params={"limit": 200})
    assert (everything["file_id"], everything["name"]) == (file_id, "crane.md")
    total = everything["total"]
    assert total >= 5
    assert [c["split_id"] for c in everything["chunks"]] == list(range(total))
    assert set(everything["chunks"][0]) == {"id", "split_id", "content", "page", "headers", "page_image"}
    assert everything["chunks"][0]["page_image"] is None  # Markdown has no pages to draw
    page = reader.ok("GET", path, params={"offset": 1, "limit": 2})
    assert [c["split_id"] for c in page["chunks"]] == [1, 2]
    assert page["total"] == total
    assert reader.ok("GET", path, params={"offset": total})["chunks"] == []
    around = reader.ok("GET", path, params={"around": 2, "radius": 1})
    assert [c["split_id"] for c in around["chunks"]] == [1, 2, 3]
    assert [c["split_id"] for c in reader.ok("GET", path, params={"around": 0})["chunks"]] == [0, 1, 2]
    # a hit's split_id leads to its neighbours
    hit = reader.search("torque value 30 newton metres", ds["id"], k=1)[0]
    near = reader.ok("GET", path, params={"around": hit["split_id"], "radius": 0})["chunks"]
    assert [c["content"] for c in near] == [hit["content"]]
    # disabled files still show their chunks
    editor.ok("PATCH", f"/api/v1/datasets/{ds['id']}/files/{file_id}", json={"enabled": False})
    assert reader.ok("GET", path)["total"] == total
    for params, status in (
        ({"limit": 0}, 422),
        ({"limit": 201}, 422),
        ({"offset": -1}, 422),
        ({"radius": 51, "around": 1}, 422),
        ({"around": "x"}, 422),
        ({"around": 1, "offset": 0}, 400),
        ({"around": 999}, 404),
    ):
        r = reader.get(path, params=params)
        assert r.status_code == status, (params, r.text)
        assert "detail" in r.json()
    assert reader.get(path, params={"around": 1, "offset": 0}).json()["detail"]["code"] == "INVALID_REQUEST"
    other = editor.ok("POST", "/api/v1/datasets", 201, json={"name": "elsewhere"})
    missing = [
        (reader, f"/api/v1/datasets/{other['id']}/files/{file_id}/chunks"),  # the file is not in it
        (reader, f"/api/v1/datasets/{ds['id']}/files/{NO_SUCH}/chunks"),
        (rival, path),  # another tenant: like a missing dataset
        (rival, f"/api/v1/datasets/{NO_SUCH}/files/{file_id}/chunks"),
    ]
    for api, where in missing:
        r = api.get(where)
        assert r.status_code == 404, where
        assert r.json()["detail"]["code"] == "NOT_FOUND"
    assert rival.get(path).json()["detail"]["error"] == f"dataset {ds['id']!r} not found"


def test_retry_runs_a_jobs_failed_files_again(
    acme: dict[str, Api], rival: Api, filled: dict[str, Any]
) -> None:
    editor, reader = acme["editor"], acme["reader"]
    job = filled["job"]
    retry_path = f"/api/v1/jobs/{job['id']}/retry"
    assert reader.post(retry_path).json()["detail"]["code"] == "FORBIDDEN"
    assert rival.post(retry_path).status_code == 404
    assert editor.post(f"/api/v1/jobs/{NO_SUCH}/retry").status_code == 404
    # the corrupt PDF would fail the same way again: nothing to retry, and the answer says why
    refused = editor.post(retry_path)
    assert refused.status_code == 409
    assert refused.json()["detail"]["code"] == "CONFLICT"
    assert "1 failed files would fail the same way again (1 EXTRACTION_FAILED)" in refused.text
    item = next(i for i in editor.ok("GET", f"/api/v1/jobs/{job['id']}")["items"] if i["error"])
    assert (item["error"]["code"], item["error"]["permanent"]) == ("EXTRACTION_FAILED", True)
    # a retryable failure (a job cancelled before its files ran) is retried, and counted
    ds = editor.ok("POST", "/api/v1/datasets", 201, json={"name": "cancelled early"})
    parts = [("files", ("gamma.md", b"# Gamma\nGamma is retried.\n"))]
    sent = editor.http.post(f"/api/v1/datasets/{ds['id']}/files", files=parts).json()
    editor.ok("POST", f"/api/v1/jobs/{sent['job']['id']}/cancel")
    stopped = editor.wait_job(sent["job"]["id"])
    if stopped["status"] == "cancelled" and stopped["failed"]:  # not when it ran before the cancel
        again = editor.ok("POST", f"/api/v1/jobs/{stopped['id']}/retry", 202)
        assert again["retry"] == {"retried": 1, "skipped": {}}
        assert editor.wait_job(again["id"])["status"] == "succeeded"
    assert editor.ok("GET", f"/api/v1/jobs/{job['id']}")["status"] == "partial"  # the old job stays
    # a job with nothing left to retry, and a job still running, are conflicts
    clean = editor.ok("POST", "/api/v1/datasets", 201, json={"name": "clean"})
    ok = editor.wait_job(upload(editor, clean["id"], ("beta.md", BETA))["job"]["id"])
    conflict = editor.post(f"/api/v1/jobs/{ok['id']}/retry")
    assert conflict.status_code == 409
    assert conflict.json()["detail"]["code"] == "CONFLICT"


def test_system_tells_a_key_what_it_is_and_what_ragd_offers(
    acme: dict[str, Api], service: Api, filled: dict[str, Any]
) -> None:
    reader = acme["reader"]
    mine = reader.ok("GET", "/api/v1/system")
    assert mine["ready"] is True
    assert mine["ready_detail"] is None
    assert mine["version"]
    assert mine["principal"] == {
        "tenant_id": filled["dataset"]["tenant_id"],
        "tenant_name": "acme-ui",
        "role": "reader",
        "service": False,
        "open": False,
    }
    assert "settings" not in mine
    assert mine["manifest"]["dense_dim"] == 384
    assert "bm25" in mine["manifest"]["sparse_model"]
    assert {"dense_model", "chunker_version", "extra_dense"} <= set(mine["manifest"])
    datasets = reader.ok("GET", "/api/v1/datasets")["datasets"]
    counts = mine["counts"]
    assert counts["datasets"] == len(datasets)
    assert counts["files"] == sum(d["files"] for d in datasets)
    assert counts["chunks"] == sum(d["chunks"] for d in datasets)
    assert counts["jobs_by_status"]["succeeded"] >= 1
    assert counts["jobs_by_status"]["partial"] >= 1  # the filled job: two files indexed, one failed
    assert "points" not in counts
    caps = mine["capabilities"]
    assert caps["embedders"][0] == "default"
    assert caps["modes"] == ["hybrid", "dense", "sparse"]
    assert (caps["fusion"], caps["vector_weight"], caps["chat"], caps["agentic"]) == (
        "convex",
        0.6,
        False,
        False,
    )
    assert caps["max_query_chars"] == 2000  # the sandbox's query field holds no more
    everything = service.ok("GET", "/api/v1/system")
    assert everything["principal"] == {
        "tenant_id": None,
        "tenant_name": None,
        "role": "admin",
        "service": True,
        "open": False,
    }
    assert everything["counts"]["datasets"] >= counts["datasets"]
    assert everything["counts"]["points"] >= everything["counts"]["chunks"] > 0
    assert everything["counts"]["collections"] >= 1
    settings = everything["settings"]
    assert settings["server"]["api_key"] == "***"
    assert settings["retrieval"]["vector_weight"] == 0.6
    assert settings["catalog"]["url"] is None or ":***@" in settings["catalog"]["url"]
    assert "kb-service-key" not in str(everything)
    assert reader.get("/api/v1/system", headers={"Authorization": "Bearer nope"}).status_code == 401


def test_collections_are_listed_and_searched_within_the_keys_reach(
    service: Api, acme: dict[str, Api], rival: Api, filled: dict[str, Any]
) -> None:
    """The service key sees and searches raw collections (Open WebUI's); a tenant key only its own."""
    raw = "owui-file-7"
    form = {"file_id": "owui-7", "filename": "gate.md", "collection_name": raw, "user_id": "u"}
    note = b"# Gate\nThe east gate code changes every Monday at dawn.\n"
    service.ok("PUT", "/api/v1/ingest", files={"file": ("gate.md", note)}, data=form)
    listed = {c["name"]: c for c in service.ok("GET", "/api/v1/collections")["collections"]}
    assert listed[raw] == {"name": raw, "chunks": 1, "dataset_id": None}
    own = filled["dataset"]["collection_name"]
    assert listed[own]["dataset_id"] == filled["dataset"]["id"]
    assert listed[own]["chunks"] >= 2

    body = {"query": "When does the east gate code change?", "collection_names": [raw], "explain": True}
    found = service.ok("POST", "/api/v1/search", json=body)
    assert "Monday at dawn" in found["results"][0]["content"]
    assert (found["results"][0]["collection"], found["results"][0]["dataset_id"]) == (raw, None)
    assert found["datasets"] == []
    assert "timings_ms" in found
    both = service.ok("POST", "/api/v1/search", json={**body, "collection_names": [raw, own], "k": 10})
    assert {hit["collection"] for hit in both["results"]} == {raw, own}
    assert both["datasets"] == [filled["dataset"]["id"]]
    by_id = {**body, "collection_names": [raw], "dataset_ids": [filled["dataset"]["id"]], "k": 10}
    mixed = service.ok("POST", "/api/v1/search", json=by_id)  # a collection and a dataset, both named
    assert {hit["collection"] for hit in mixed["results"]} == {raw, own}
    one = f"/api/v1/datasets/{filled['dataset']['id']}/search"
    assert service.post(one, json=body).status_code == 400  # one dataset's search names no collections

    reader = acme["reader"]
    mine = reader.ok("GET", "/api/v1/collections")["collections"]
    assert raw not in {c["name"] for c in mine}
    assert own in {c["name"] for c in mine}
    assert reader.ok("POST", "/api/v1/search", json=body)["results"] == []  # a raw collection: not theirs
    stranger = rival.ok("POST", "/api/v1/search", json={**body, "collection_names": [own]})
    assert stranger["results"] == []  # another tenant's collection drops out like an unknown one
    assert reader.post("/api/v1/search", json={**body, "collection_names": ["../x"]}).status_code == 422


def test_jobs_are_listed_by_status(acme: dict[str, Api], filled: dict[str, Any]) -> None:
    editor = acme["editor"]
    partial = editor.ok("GET", "/api/v1/jobs", params={"status": "partial"})["jobs"]
    assert filled["job"]["id"] in {j["id"] for j in partial}
    assert {j["status"] for j in partial} == {"partial"}
    both = editor.ok("GET", "/api/v1/jobs", params=[("status", "failed"), ("status", "partial")])["jobs"]
    assert {j["status"] for j in both} <= {"failed", "partial"}
    assert len(both) >= len(partial)
    bad = editor.get("/api/v1/jobs", params={"status": "done"})
    assert bad.status_code == 400
    assert bad.json()["detail"]["code"] == "INVALID_REQUEST"
    assert "valid values: queued, running, succeeded, partial, failed, cancelled" in bad.text
