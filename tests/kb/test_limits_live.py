"""Limits per tenant and per key on a live service (SQLite and PostgreSQL catalogs): the limits API
and its roles, rates (429 + Retry-After per key and surface), storage quotas (QUOTA_EXCEEDED before
anything is written), usage and /metrics."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.kb.conftest import Api, new_tenant
from tests.support.live_server import LiveServer

SMALL = b"# Harbour\nThe harbour master opens the east gate at dawn.\n"
SENTENCE = "Sentence number {i} explains how the archive keeps mail for seven years."
LONG = "\n\n".join(SENTENCE.format(i=i) for i in range(150)).encode()
SMALL_CHUNKS = {"strategy": "recursive", "size": 200, "overlap": 0}


@pytest.fixture(scope="module")
def tenants(service: Api) -> Iterator[dict[str, tuple[str, dict[str, Api]]]]:
    made = {
        "a": new_tenant(service, "limits-a", "admin", "editor", "reader"),
        "b": new_tenant(service, "limits-b", "admin", "reader"),
        "c": new_tenant(service, "limits-c", "editor"),
    }
    yield made
    for _, keys in made.values():
        for api in keys.values():
            api.close()


def _limits(api: Api, tenant_id: str, status: int = 200) -> Any:
    return api.ok("GET", f"/api/v1/tenants/{tenant_id}/limits", status)


def _upload(api: Api, dataset_id: str, name: str, data: bytes, status: int = 202) -> Any:
    return api.ok("POST", f"/api/v1/datasets/{dataset_id}/files", status, files=[("files", (name, data))])


def test_the_service_key_sets_limits_and_a_tenant_admin_reads_its_own(
    service: Api, tenants: dict[str, tuple[str, dict[str, Api]]]
) -> None:
    a_id, a = tenants["a"]
    b_id, _ = tenants["b"]
    seen = _limits(service, a_id)
    assert seen["overrides"] == {}
    assert seen["limits"] == seen["defaults"]
    assert seen["limits"]["search_per_minute"] == 0  # the settings' default: no limit
    assert _limits(a["admin"], a_id)["tenant_id"] == a_id
    assert _limits(a["reader"], a_id, 403)["detail"]["code"] == "FORBIDDEN"
    assert _limits(a["admin"], b_id, 404)["detail"]["code"] == "NOT_FOUND"  # another tenant: as missing
    refused = a["admin"].put(f"/api/v1/tenants/{a_id}/limits", json={"max_chunks": 10**9})
    assert refused.status_code == 403
    assert refused.json()["detail"]["code"] == "FORBIDDEN"
    for bad in ({"max_chunks": -1}, {"max_chunks": "many"}, {"per_hour": 3}, {"max_bytes": 2**60}):
        assert service.put(f"/api/v1/tenants/{a_id}/limits", json=bad).status_code == 422, bad
    assert service.put("/api/v1/tenants/nope/limits", json={"max_chunks": 1}).status_code == 404
    set_ = service.ok(
        "PUT", f"/api/v1/tenants/{a_id}/limits", json={"max_chunks": 500, "chat_per_minute": None}
    )
    assert set_["overrides"] == {"max_chunks": 500}
    assert set_["limits"]["max_chunks"] == 500
    assert set_["limits"]["chat_per_minute"] == 0
    assert _limits(a["admin"], a_id)["overrides"] == {"max_chunks": 500}
    records = service.ok("GET", "/api/v1/audit", params={"action": "limits.update", "tenant": a_id})[
        "records"
    ]
    outcomes = sorted(r["outcome"] for r in records)
    assert outcomes.count("ok") == 1
    assert "denied" in outcomes
    done = next(r for r in records if r["outcome"] == "ok")
    assert done["actor"] == "service"
    assert done["target_id"] == a_id
    assert done["detail"]["after"] == {"max_chunks": 500}
    service.ok("PUT", f"/api/v1/tenants/{a_id}/limits", json={})


def test_a_key_over_its_rate_gets_429_with_retry_after_and_other_keys_do_not(
    service: Api, tenants: dict[str, tuple[str, dict[str, Api]]], kb_server: LiveServer
) -> None:
    a_id, a = tenants["a"]
    _, b = tenants["b"]
    service.ok("PUT", f"/api/v1/tenants/{a_id}/limits", json={"search_per_minute": 2, "models_per_minute": 1})
    body = {"query": "east gate", "k": 3}
    try:
        for _ in range(2):
            a["reader"].ok("POST", "/api/v1/search", json=body)
        refused = a["reader"].post("/api/v1/search", json=body)
        assert refused.status_code == 429, refused.text
        assert refused.json()["detail"]["code"] == "RATE_LIMITED"
        assert 1 <= int(refused.headers["Retry-After"]) <= 30
        # refused before its body is read: 16 MiB announced, none of it sent, and the answer comes
        assert _status_without_body(kb_server, a["reader"].key, "/api/v1/search", 16 * 2**20) == 429
        # a dataset's search counts on the same surface
        ds = a["editor"].ok("POST", "/api/v1/datasets", 201, json={"name": "rates"})
        assert a["reader"].post(f"/api/v1/datasets/{ds['id']}/search", json=body).status_code == 429
        # another key of the same tenant, and a key of a tenant without limits: unaffected
        for _ in range(2):  # its own two
            a["editor"].ok("POST", "/api/v1/search", json=body)
        for _ in range(4):
            b["reader"].ok("POST", "/api/v1/search", json=body)
        # the model endpoints count apart, and answer in OpenAI's shape
        first = a["reader"].post("/v1/embeddings", json={"input": "east gate"})
        assert first.status_code == 200, first.text
        second = a["reader"].post("/v1/embeddings", json={"input": "east gate"})
        assert second.status_code == 429
        error = second.json()["error"]
        assert (error["code"], error["type"]) == ("RATE_LIMITED", "rate_limit_error")
        assert int(second.headers["Retry-After"]) >= 1
        metrics = service.get("/metrics").text
        assert 'ragd_rate_limited_total{surface="search"} 3.0' in metrics
        assert 'ragd_rate_limited_total{surface="models"} 1.0' in metrics
        samples = [line for line in metrics.splitlines() if line.startswith("ragd_rate_limited_total{")]
        assert all(line.split("{", 1)[1].startswith('surface="') and "," not in line for line in samples)
    finally:
        service.ok("PUT", f"/api/v1/tenants/{a_id}/limits", json={})


async def test_mcp_search_counts_on_the_keys_search_rate(
    service: Api, tenants: dict[str, tuple[str, dict[str, Api]]], kb_server: LiveServer
) -> None:
    a_id, a = tenants["a"]
    service.ok("PUT", f"/api/v1/tenants/{a_id}/limits", json={"search_per_minute": 1})
    headers = {"Authorization": f"Bearer {a['admin'].key}"}
    try:
        async with (
            httpx2.AsyncClient(headers=headers, timeout=120) as http,
            Client(streamable_http_client(f"{kb_server.url}/mcp", http_client=http)) as mcp,
        ):
            first = await mcp.call_tool("search", {"query": "east gate"})
            assert not first.is_error, first.content
            second = await mcp.call_tool("search", {"query": "east gate"})
            assert second.is_error
            assert " ".join(getattr(b, "text", "") for b in second.content).startswith("RATE_LIMITED:")
    finally:
        service.ok("PUT", f"/api/v1/tenants/{a_id}/limits", json={})


def _status_without_body(server: LiveServer, key: str, path: str, length: int) -> int:
    """The status a POST announcing ``length`` bytes of JSON gets while none of them is sent."""
    url = urlsplit(server.url)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {url.hostname}\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    )
    with socket.create_connection((url.hostname or "127.0.0.1", url.port or 80), timeout=20) as conn:
        conn.sendall(head.encode())
        answer = conn.recv(4096).decode("latin-1")
    return int(answer.split(" ", 2)[1])


def _usage(api: Api, tenant_id: str) -> Any:
    return api.ok("GET", f"/api/v1/tenants/{tenant_id}/usage")


def _points(api: Api) -> dict[str, int]:
    return {c["name"]: c["chunks"] for c in api.ok("GET", "/api/v1/collections")["collections"]}


def test_an_ingest_over_the_storage_quota_fails_before_anything_is_written(
    service: Api, tenants: dict[str, tuple[str, dict[str, Api]]]
) -> None:
    c_id, c = tenants["c"]
    editor = c["editor"]
    ds = editor.ok("POST", "/api/v1/datasets", 201, json={"name": "quota", "chunking": SMALL_CHUNKS})
    first = editor.wait_job(_upload(editor, ds["id"], "harbour.md", SMALL)["job"]["id"])
    assert first["status"] == "succeeded", first
    held = _usage(service, c_id)["usage"]
    assert held["chunks"] == first["chunks"] >= 1
    assert held["bytes"] == len(SMALL)
    files_before = editor.ok("GET", f"/api/v1/datasets/{ds['id']}/files")["files"]
    points_before = _points(editor)
    service.ok("PUT", f"/api/v1/tenants/{c_id}/limits", json={"max_chunks": held["chunks"] + 3})
    try:
        job = editor.wait_job(_upload(editor, ds["id"], "archive.md", LONG)["job"]["id"])
        assert job["status"] == "failed", job
        assert [e["code"] for e in job["errors"]] == ["QUOTA_EXCEEDED"]
        assert _points(editor) == points_before  # not one point written
        assert _usage(service, c_id)["usage"]["chunks"] == held["chunks"]
        files = {f["name"]: f for f in editor.ok("GET", f"/api/v1/datasets/{ds['id']}/files")["files"]}
        assert files["harbour.md"] == next(f for f in files_before if f["name"] == "harbour.md")
        assert files["archive.md"]["status"] == "failed"
        assert files["archive.md"]["chunks"] == 0
        assert files["archive.md"]["error"]["code"] == "QUOTA_EXCEEDED"
        # re-indexing what is stored replaces its own chunks: within the quota
        again = editor.ok(
            "POST", f"/api/v1/datasets/{ds['id']}/files/{files['harbour.md']['id']}/reindex", 202
        )
        assert editor.wait_job(again["id"] if "id" in again else again["job"]["id"])["status"] == "succeeded"
        # bytes: an upload already over the quota is refused before it is kept
        service.ok("PUT", f"/api/v1/tenants/{c_id}/limits", json={"max_bytes": len(SMALL) + 10})
        refused = _upload(editor, ds["id"], "big.md", SMALL * 2, 413)
        assert refused["detail"]["code"] == "QUOTA_EXCEEDED"
        names = [f["name"] for f in editor.ok("GET", f"/api/v1/datasets/{ds['id']}/files")["files"]]
        assert "big.md" not in names
        usage = _usage(service, c_id)
        assert usage["against"]["bytes"] == {"used": len(SMALL), "limit": len(SMALL) + 10}
        metrics = service.get("/metrics").text
        assert f'kb_tenant_usage{{resource="chunks",tenant="limits-c"}} {float(held["chunks"])}' in metrics
        assert f'kb_tenant_limit{{limit="max_bytes",tenant="limits-c"}} {float(len(SMALL) + 10)}' in metrics
    finally:
        service.ok("PUT", f"/api/v1/tenants/{c_id}/limits", json={})
