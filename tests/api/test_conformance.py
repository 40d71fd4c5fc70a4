"""The black-box conformance plan of ``contracts.md`` §7.1-§7.3, over real HTTP.

One live service per module; tests run in file order because later ones build on
earlier ingests (as the plan's IDs do).  Each test names the plan IDs it covers.
"""

from __future__ import annotations

import uuid

import httpx
import pytest
import requests

import ragd
from tests.api.conftest import ALPHA, AUTH, BETA, KEY
from tests.support.live_server import LiveServer

F1, F2, KB1 = (str(uuid.uuid4()) for _ in range(3))
INGEST_KEYS = {"status", "collection_name", "chunks_count"}


def search(live: LiveServer, body: dict[str, object], path: str = "/search") -> httpx.Response:
    return httpx.post(live.url + path, json=body, headers=AUTH, timeout=30)


def upload(
    live: LiveServer, name: str, data: bytes, file_id: str, collection: str, **fields: str
) -> requests.Response:
    """Open WebUI's multipart shape: the file part has no Content-Type (contracts.md §3.3)."""
    form = {
        "file_id": file_id,
        "filename": name,
        "collection_name": collection,
        "collection_type": "file",
        "user_id": "u-1",
        "overwrite": "true",
        **fields,
    }
    return requests.put(
        f"{live.url}/api/v1/ingest", headers=AUTH, files={"file": (name, data)}, data=form, timeout=60
    )


def test_health_and_ready(live: LiveServer) -> None:  # R-01 R-02 I-01 I-02
    health = httpx.get(live.url + "/health").json()
    assert health["status"] == "ok"  # the reference's body; ragproxy's ok and model ride along
    assert set(health) == {"status", "ok", "model"}
    ready = httpx.get(live.url + "/health/ready")
    assert (ready.status_code, ready.json()) == (200, {"status": "ok"})


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": "Basic dXNlcjpwYXNz"},
        {"Authorization": f"Token {KEY}"},
        {"Authorization": "Bearer ключ".encode()},
    ],
)
def test_auth_rejections(
    live: LiveServer, headers: dict[str, str | bytes]
) -> None:  # R-03 R-04 R-05 I-03 I-04 I-25
    body = {"queries": ["x"], "collection_names": ["c"]}
    for method, path, kwargs in (
        ("POST", "/search", {"json": body}),
        ("PUT", "/api/v1/ingest", {"json": {"file_id": "x"}}),
        ("DELETE", "/api/v1/documents/x", {}),
        ("GET", "/metrics", {}),
        ("POST", "/api/v1/extract", {}),
    ):
        r = httpx.request(method, live.url + path, headers=headers, **kwargs)  # type: ignore[arg-type]
        assert r.status_code == 401, (method, path)
        assert r.json() == {"detail": "Invalid API key"}
        assert r.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize(
    "body",
    [
        {"collection_names": ["c"]},
        {"queries": [], "collection_names": ["c"]},
        {"queries": ["hello"]},
        {"queries": ["hello"], "collection_names": ["c"], "k": 0},
        {"queries": [f"q{i}" for i in range(11)], "collection_names": ["c"]},
        {"queries": ["x"], "collection_names": [f"c{i}" for i in range(21)]},
        {"queries": ["x"], "collection_names": []},
        {"queries": ["x"], "collection_names": ["../etc"]},
        {"messages": [{"role": "user", "content": "x" * 10_001}], "collection_names": ["c"]},
        {"messages": [{"role": "user", "content": "x"}] * 51, "collection_names": ["c"]},
        {"queries": "not a list", "collection_names": ["c"]},
    ],
)
def test_search_validation_is_422(live: LiveServer, body: dict[str, object]) -> None:
    r = search(live, body)
    assert r.status_code == 422
    assert isinstance(r.json()["detail"], list)


@pytest.mark.parametrize(
    "body",
    [
        {"queries": ["x" * 2001], "collection_names": ["c"]},  # clamped, not 422 (issue 17)
        {"queries": ["x"], "collection_names": ["c"], "k": 101},  # clamped, not 422 (issue 17)
    ],
)
def test_over_limit_query_length_and_k_are_clamped_not_refused(
    live: LiveServer, body: dict[str, object]
) -> None:
    """ragd differs from the reference here on purpose: a 422 silently turns RAG off in Open WebUI."""
    r = search(live, body)
    assert r.status_code == 200, r.text
    assert r.json() == {"documents": [[]], "metadatas": [[]], "distances": [[]]}  # unknown collection "c"


def test_extra_fields_ignored_and_unknown_collection_is_empty(live: LiveServer) -> None:  # R-17 R-21
    r = search(
        live,
        {
            "queries": ["x"],
            "collection_names": ["c"],
            "unknown_field": 1,
            "retrieval_query_generation_prompt_template": "t",
        },
    )
    assert r.status_code == 200
    r = search(live, {"queries": ["anything"], "collection_names": ["does-not-exist"], "k": 3})
    assert r.json() == {"documents": [[]], "metadatas": [[]], "distances": [[]]}


def test_ingest_gates(live: LiveServer) -> None:  # I-05 I-06 I-07 I-08 I-09 I-12 I-13 I-14 I-15 I-19 I-32
    url = f"{live.url}/api/v1/ingest"
    r = httpx.put(url, content=b"raw", headers={**AUTH, "Content-Type": "text/plain"})
    assert r.status_code == 415
    assert r.json()["detail"]["code"] == "INVALID_REQUEST"
    assert r.json()["detail"]["status"] is False
    base = {"file_id": F1, "filename": "alpha.md", "collection_name": f"file-{F1}", "user_id": "u-1"}
    for body in (
        base,
        {**base, "s3_bucket": "openwebui", "s3_key": "k", "collection_nam": "typo"},
        {**base, "file_id": "   ", "s3_bucket": "b", "s3_key": "k"},
    ):
        r = httpx.put(url, json=body, headers=AUTH)
        assert (r.status_code, r.json()["detail"]["code"]) == (400, "INVALID_REQUEST"), body
    r = requests.put(
        url,
        headers=AUTH,
        data={"file_id": F1, "filename": "a", "collection_name": "c", "user_id": "u"},
        files={"other": ("x", b"y")},
        timeout=10,
    )
    assert (r.status_code, r.json()["detail"]["error"]) == (400, "multipart request missing 'file' field")
    assert upload(live, "alpha.md", ALPHA, F1, f"file-{F1}", overwrite="bogus").status_code == 400
    assert upload(live, "alpha.md", ALPHA, " ", f"file-{F1}").status_code == 400
    victim = upload(live, "alpha.md", ALPHA, "attacker", "file-victim")
    assert (victim.status_code, victim.json()["detail"]["code"]) == (403, "INVALID_REQUEST")
    r = upload(live, "alpha.md", ALPHA, F1, "user-memory-victim")
    assert r.status_code == 403
    big = upload(live, "big.txt", b"x" * 5000, F1, f"file-{F1}")
    assert (big.status_code, big.json()["detail"]["code"]) == (413, "INVALID_REQUEST")
    assert search(live, {"queries": ["alpha"], "collection_names": ["file-victim"]}).json()["documents"] == [
        []
    ]


def test_ingest_two_files(live: LiveServer) -> None:  # I-10 I-11 OW-04
    r = upload(live, "alpha.md", ALPHA, F1, f"file-{F1}")
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == INGEST_KEYS
    assert body["status"] is True
    assert body["collection_name"] == f"file-{F1}"
    assert body["chunks_count"] >= 1
    r = upload(live, "beta.md", BETA, F2, f"file-{F2}")
    assert bool(r.json().get("status"))


def test_search_finds_the_right_file(live: LiveServer) -> None:  # R-18 R-19 R-20 R-30 OW-01 OW-03
    r = search(live, {"queries": ["alpha approvals"], "collection_names": [f"file-{F1}"]})
    data = r.json()
    assert set(data) == {"documents", "metadatas", "distances"}
    assert len(data["documents"]) == len(data["metadatas"]) == len(data["distances"]) == 1
    assert 1 <= len(data["documents"][0]) <= 5
    r = search(
        live,
        {
            "queries": ["How many approvals does the alpha protocol need?"],
            "collection_names": [f"file-{F1}", f"file-{F2}"],
            "k": 3,
        },
    )
    data = r.json()
    assert "three approvals" in data["documents"][0][0]
    meta = data["metadatas"][0][0]
    assert (meta["file_id"], meta["source"], meta["name"]) == (F1, "alpha.md", "alpha.md")
    assert meta["collection_name"] == f"file-{F1}"
    distances = data["distances"][0]
    assert distances == sorted(distances, reverse=True)
    assert all(0.0 <= d <= 1.0 for d in distances)
    ids = {m.get("source") or "item" for m in data["metadatas"][0]}
    assert all(isinstance(i, str) and not i.startswith("http") for i in ids)
    isolated = search(live, {"queries": ["alpha approvals"], "collection_names": [f"file-{F2}"], "k": 5})
    assert all(m["file_id"] == F2 for m in isolated.json()["metadatas"][0])


def test_messages_multimodal_and_double_slash(live: LiveServer) -> None:  # R-22 R-23 R-27 R-28 OW-02
    messages = [
        {"role": "user", "content": "Tell me about deployments"},
        {"role": "assistant", "content": "Sure."},
        {"role": "user", "content": "When do beta deployments run?"},
    ]
    r = search(live, {"messages": messages, "collection_names": [f"file-{F2}"], "k": 2})
    assert "Tuesday" in r.json()["documents"][0][0]
    r = httpx.post(
        live.url + "/search",
        json={
            "queries": ["When do beta deployments run?"],
            "collection_names": [f"file-{F1}", f"file-{F2}"],
            "k": 3,
            "messages": [{"role": "user", "content": "When do beta deployments run?"}],
        },
        headers={**AUTH, "X-OpenWebUI-User-Id": "u-1"},
    )
    assert r.json()["metadatas"][0][0]["file_id"] == F2
    parts = [
        {"type": "text", "text": "alpha approvals?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}},
    ]
    r = search(
        live, {"messages": [{"role": "user", "content": parts}], "collection_names": [f"file-{F1}"], "k": 2}
    )
    assert r.status_code == 200
    assert "alpha" in r.json()["documents"][0][0]
    url = live.url + "/"  # Open WebUI's deployed URL ends in a slash and it appends "/search"
    r = requests.post(
        f"{url}/search",
        json={"queries": ["alpha approvals"], "collection_names": [f"file-{F1}"]},
        headers=AUTH,
        timeout=30,
    )
    r.raise_for_status()
    assert r.json()["metadatas"][0][0]["file_id"] == F1


def test_multi_query_results_all_in_the_first_list(live: LiveServer) -> None:  # R-24 R-26
    r = search(
        live,
        {
            "queries": ["alpha approvals", "beta deployments Tuesday"],
            "collection_names": [f"file-{F1}", f"file-{F2}"],
            "k": 4,
        },
    )
    data = r.json()
    assert len(data["documents"]) == 1
    assert {m["file_id"] for m in data["metadatas"][0]} == {F1, F2}
    r = search(live, {"queries": ["the"], "collection_names": [f"file-{F1}", f"file-{F2}"], "k": 1})
    assert all(len(inner) <= 1 for inner in r.json()["documents"])


def test_knowledge_base_dedup_and_idempotency(live: LiveServer) -> None:  # I-16 I-17 I-18 R-25 OW-06
    assert upload(live, "alpha.md", ALPHA, F1, KB1).status_code == 200
    r = search(live, {"queries": ["alpha approvals"], "collection_names": [KB1]})
    assert r.json()["metadatas"][0][0]["collection_name"] == KB1
    both = search(live, {"queries": ["alpha approvals"], "collection_names": [f"file-{F1}", KB1], "k": 5})
    docs = both.json()["documents"][0]
    assert len(docs) == len(set(docs))
    first, again = (
        upload(live, "alpha.md", ALPHA, F1, f"file-{F1}"),
        upload(live, "alpha.md", ALPHA, F1, f"file-{F1}"),
    )
    assert first.json()["chunks_count"] == again.json()["chunks_count"]
    chunks = httpx.get(f"{live.url}/api/v1/documents/{F1}/chunks", headers=AUTH).json()
    assert chunks["stats"]["total_chunks"] == 2 * again.json()["chunks_count"]  # file-F1 and KB1
    assert search(live, {"queries": ["alpha approvals"], "collection_names": [KB1]}).json()["documents"][0]


def test_inspection_paginates_and_refuses_a_bad_cursor(live: LiveServer) -> None:  # I-30
    url = f"{live.url}/api/v1/documents/{F1}/chunks"
    first = httpx.get(url, params={"limit": 1}, headers=AUTH).json()
    assert first["returned"] == 1
    assert first["next_offset"]
    second = httpx.get(url, params={"limit": 1, "offset": first["next_offset"]}, headers=AUTH).json()
    assert second["chunks"][0]["meta"]["collection_name"] != first["chunks"][0]["meta"]["collection_name"]
    assert second.get("next_offset") is None
    bad = httpx.get(url, params={"offset": "../../etc"}, headers=AUTH)
    assert (bad.status_code, bad.json()["detail"]["code"]) == (400, "INVALID_REQUEST")


def test_empty_document_keeps_the_previous_version(live: LiveServer) -> None:  # I-22
    r = upload(live, "empty.txt", b"  \n\t \n", F2, f"file-{F2}")
    assert (r.status_code, r.json()["detail"]["code"]) == (422, "EXTRACTION_FAILED")
    assert r.json()["detail"]["reason"] == "EMPTY_DOCUMENT"
    r = search(
        live, {"queries": ["When do beta deployments run?"], "collection_names": [f"file-{F2}"], "k": 2}
    )
    assert "Tuesday" in r.json()["documents"][0][0]


def test_inspection(live: LiveServer) -> None:  # I-30
    url = f"{live.url}/api/v1/documents/{F2}/chunks"
    data = httpx.get(url, headers=AUTH).json()
    assert data["file_id"] == F2
    assert data["returned"] == data["stats"]["total_chunks"] >= 1
    assert data["chunks"][0]["content_length"] == len(data["chunks"][0]["content"])
    assert httpx.get(url, params={"include_content": "bogus"}, headers=AUTH).status_code == 400
    assert (
        "content" not in httpx.get(url, params={"include_content": "false"}, headers=AUTH).json()["chunks"][0]
    )
    assert httpx.get(url, params={"limit": 0}, headers=AUTH).status_code == 422


def test_extract(live: LiveServer) -> None:  # I-26 I-27 I-28 I-29
    url = f"{live.url}/api/v1/extract"
    r = requests.post(url, headers=AUTH, files={"file": ("alpha.md", ALPHA)}, timeout=30)
    body = r.json()
    assert (body["status"], body["profile"]) == (True, None)
    assert isinstance(body["engine"], str)
    assert "alpha" in body["documents"][0]["content"]
    for engine in ("banana", "auto"):
        r = requests.post(
            url, headers=AUTH, files={"file": ("a.md", ALPHA)}, data={"engine": engine}, timeout=30
        )
        assert (r.status_code, r.json()["detail"]["code"]) == (400, "INVALID_REQUEST")
        assert engine in r.json()["detail"]["error"]
    r = requests.post(url, headers=AUTH, data={"engine": "text"}, files={"x": ("a", b"b")}, timeout=30)
    assert r.status_code == 400
    r = requests.post(url, headers=AUTH, files={"file": ("a.md", ALPHA)}, data={"engine": "TEXT"}, timeout=30)
    assert r.json()["engine"] == "text"


def test_metrics(live: LiveServer) -> None:  # R-06 I-31
    text = httpx.get(live.url + "/metrics", headers=AUTH).text
    for family in (
        "search_requests_total",
        "retrieval_stage_duration_seconds",
        "ingest_requests_total",
        "http_requests_total",
        "hybrid_path_total",
        "process_resident_memory_bytes",
        "process_cpu_seconds_total",
        "python_info",
    ):
        assert family in text
    assert f'ragd_build_info{{version="{ragd.__version__}"}} 1.0' in text
    for stage in ("embed_dense", "embed_sparse", "qdrant", "retrieve"):  # the seeds' stage labels too
        assert f'retrieval_stage_duration_seconds_count{{stage="{stage}"}}' in text
    assert 'ingest_requests_total{code="INVALID_REQUEST",outcome="error"}' in text
    assert F1 not in text
    assert KB1 not in text
    assert "alpha" not in text


def test_delete(live: LiveServer) -> None:  # I-23 I-24 OW-05
    r = requests.delete(f"{live.url}/api/v1/documents/{F1}", headers=AUTH, timeout=30)
    r.raise_for_status()
    body = r.json()
    assert body["status"] is True
    assert body["file_id"] == F1
    assert body["chunks_deleted"] >= 2
    for names in ([f"file-{F1}"], [KB1]):
        assert search(live, {"queries": ["alpha approvals"], "collection_names": names}).json()[
            "documents"
        ] == [[]]
    again = requests.delete(f"{live.url}/api/v1/documents/{F1}", headers=AUTH, timeout=30)
    assert again.json() == {"status": True, "file_id": F1, "chunks_deleted": 0}
