"""The audit trail over HTTP, on a live service with a SQLite and a PostgreSQL catalog: every
administrative action (and its refused or failed attempts) is one record with who, what, the target
and the outcome; who may read which records; keyset pages; the JSON-lines export; 401 bursts; and
no route that changes or deletes a record."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.kb.conftest import SERVICE_KEY, Api
from tests.support.live_server import LiveServer

DOC = b"# Audit\nThe audit trail keeps who did what.\n"


@dataclass
class Actors:
    tenant_id: str
    keys: dict[str, Api]
    key_ids: dict[str, str]


def make_tenant(service: Api, *roles: str) -> Actors:
    tenant = service.ok("POST", "/api/v1/tenants", 201, json={"name": f"audit-{uuid.uuid4().hex[:8]}"})
    keys, ids = {}, {}
    for role in roles:
        made = service.ok("POST", f"/api/v1/tenants/{tenant['id']}/keys", 201, json={"role": role})
        keys[role], ids[role] = Api(service.url, made["secret"]), made["key"]["id"]
    return Actors(tenant["id"], keys, ids)


@pytest.fixture(scope="module")
def acme(service: Api) -> Iterator[Actors]:
    actors = make_tenant(service, "admin", "editor", "reader")
    yield actors
    for api in actors.keys.values():
        api.close()


def every_record(api: Api, **params: Any) -> list[dict[str, Any]]:
    """All records the key may read, page by page (newest first), each page checked."""
    records: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = api.ok("GET", "/api/v1/audit", params={**params, **({"cursor": cursor} if cursor else {})})
        records += page["records"]
        cursor = page["next_cursor"]
        if cursor is None:
            return records


def test_each_action_writes_one_record_with_its_actor_target_and_outcome(
    service: Api, kb_server: LiveServer
) -> None:
    t = make_tenant(service, "admin", "editor", "reader")
    admin, editor, reader = t.keys["admin"], t.keys["editor"], t.keys["reader"]
    ds = admin.ok("POST", "/api/v1/datasets", 201, json={"name": "audited"})
    reader.ok("POST", "/api/v1/datasets", 403, json={"name": "nope"})
    admin.ok("POST", "/api/v1/datasets", 400, json={"name": "bad", "embedding": "no-such-model"})
    admin.ok("PATCH", f"/api/v1/datasets/{ds['id']}", json={"description": "changed"})
    sent = admin.ok("POST", f"/api/v1/datasets/{ds['id']}/files", 202, files=[("files", ("a.md", DOC))])
    admin.wait_job(sent["job"]["id"])
    file_id = sent["files"][0]["id"]
    admin.ok("PATCH", f"/api/v1/datasets/{ds['id']}/files/{file_id}", json={"enabled": False})
    admin.ok("PATCH", f"/api/v1/datasets/{ds['id']}/files/{file_id}", json={"enabled": True})
    admin.ok("DELETE", f"/api/v1/datasets/{ds['id']}/files/{file_id}")
    folder = Path(kb_server.app.state.ragd.settings.data_dir).parent / f"audit-{uuid.uuid4().hex[:6]}"
    folder.mkdir()
    (folder / "b.md").write_bytes(DOC)
    body = {"kind": "folder", "config": {"path": str(folder)}}
    editor.ok("POST", f"/api/v1/datasets/{ds['id']}/sources", 403, json=body)
    added = service.ok("POST", f"/api/v1/datasets/{ds['id']}/sources", 202, json=body)
    service.wait_job(added["job"]["id"])
    source_id = added["source"]["id"]
    admin.ok("POST", f"/api/v1/datasets/{ds['id']}/sources/{source_id}/sync", 202)
    admin.ok("DELETE", f"/api/v1/datasets/{ds['id']}/sources/{source_id}")
    admin.ok("DELETE", f"/api/v1/datasets/{ds['id']}")
    admin.ok("DELETE", f"/api/v1/tenants/{t.tenant_id}/keys/{t.key_ids['reader']}")

    ids = t.key_ids
    expected = [
        ("tenant.create", "ok", "service", "tenant", t.tenant_id),
        ("key.create", "ok", "service", "key", ids["admin"]),
        ("key.create", "ok", "service", "key", ids["editor"]),
        ("key.create", "ok", "service", "key", ids["reader"]),
        ("dataset.create", "ok", ids["admin"], "dataset", ds["id"]),
        ("dataset.create", "denied", ids["reader"], "dataset", None),
        ("dataset.create", "failed", ids["admin"], "dataset", None),
        ("dataset.update", "ok", ids["admin"], "dataset", ds["id"]),
        ("file.upload", "ok", ids["admin"], "dataset", ds["id"]),
        ("file.disable", "ok", ids["admin"], "file", file_id),
        ("file.enable", "ok", ids["admin"], "file", file_id),
        ("file.delete", "ok", ids["admin"], "file", file_id),
        ("source.add", "denied", ids["editor"], "dataset", ds["id"]),
        ("source.add", "ok", "service", "dataset", ds["id"]),
        ("source.sync", "ok", ids["admin"], "source", source_id),
        ("source.remove", "ok", ids["admin"], "source", source_id),
        ("dataset.delete", "ok", ids["admin"], "dataset", ds["id"]),
        ("key.revoke", "ok", ids["admin"], "key", ids["reader"]),
    ]
    mine = {e[0] for e in expected}  # other parts record more (grant.* when the service key adds a source)
    records = [r for r in reversed(every_record(service, tenant=t.tenant_id)) if r["action"] in mine]
    got = [(r["action"], r["outcome"], r["actor"], r["target_kind"], r["target_id"]) for r in records]
    assert got == expected
    assert {r["tenant_id"] for r in records} == {t.tenant_id}
    assert {r["client"] for r in records} == {"127.0.0.1"}
    by_action = {(r["action"], r["outcome"]): r for r in records}
    assert by_action[("dataset.create", "failed")]["detail"]["code"] == "INVALID_REQUEST"
    assert by_action[("dataset.create", "denied")]["detail"]["code"] == "FORBIDDEN"
    assert by_action[("dataset.update", "ok")]["detail"]["changed"] == ["description"]
    assert by_action[("source.add", "ok")]["detail"]["reach"] == str(folder.resolve())
    assert by_action[("key.create", "ok")]["actor_role"] == "admin"
    secrets = [api.key for api in t.keys.values()]
    assert not any(secret in json.dumps(records) for secret in secrets)  # never a key, only key ids
    for api in t.keys.values():
        api.close()


def test_a_tenant_admin_reads_only_its_tenant_and_other_roles_get_403(service: Api, acme: Actors) -> None:
    other = make_tenant(service, "admin")
    other.keys["admin"].ok("POST", "/api/v1/datasets", 201, json={"name": "theirs"})
    acme.keys["admin"].ok("POST", "/api/v1/datasets", 201, json={"name": "ours"})

    mine = every_record(acme.keys["admin"])
    assert mine
    assert {r["tenant_id"] for r in mine} == {acme.tenant_id}
    assert any(r["action"] == "dataset.create" for r in mine)
    acme.keys["admin"].ok("GET", "/api/v1/audit", 404, params={"tenant": other.tenant_id})
    acme.keys["admin"].ok("GET", "/api/v1/audit/export", 404, params={"tenant": other.tenant_id})
    for role in ("editor", "reader"):
        acme.keys[role].ok("GET", "/api/v1/audit", 403)
        acme.keys[role].ok("GET", "/api/v1/audit/export", 403)
    everyone = {r["tenant_id"] for r in every_record(service)}
    assert {acme.tenant_id, other.tenant_id} <= everyone
    other.keys["admin"].close()


def test_pages_cover_every_record_once_and_the_export_is_json_lines(service: Api, acme: Actors) -> None:
    admin = acme.keys["admin"]
    for i in range(7):
        admin.ok("POST", "/api/v1/datasets", 201, json={"name": f"paged-{i}"})
    everything = every_record(service, tenant=acme.tenant_id)
    paged = every_record(service, tenant=acme.tenant_id, limit=3)
    assert [r["seq"] for r in paged] == [r["seq"] for r in everything]
    assert len({r["seq"] for r in paged}) == len(paged) >= 7
    assert [r["seq"] for r in paged] == sorted((r["seq"] for r in paged), reverse=True)

    made = every_record(service, tenant=acme.tenant_id, action="dataset.create")
    assert len(made) >= 7
    assert {r["action"] for r in made} == {"dataset.create"}

    r = service.get("/api/v1/audit/export", params={"tenant": acme.tenant_id})
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in r.text.splitlines()]
    assert lines == list(reversed(everything))  # oldest first
    resumed = service.get("/api/v1/audit/export", params={"tenant": acme.tenant_id, "after": lines[2]["seq"]})
    assert [json.loads(line) for line in resumed.text.splitlines()] == lines[3:]
    for bad in ("yesterday", "nan", "inf", "1e999"):
        assert service.get("/api/v1/audit", params={"since": bad}).status_code == 400, bad
    assert service.ok("GET", "/api/v1/audit", params={"since": "2999-01-01T00:00Z"})["records"] == []


def test_a_burst_of_401s_from_one_client_is_one_record(kb_server: LiveServer, service: Api) -> None:
    """The default burst is 10 failures in 60 s; 25 failures of three kinds within a window: one record."""
    bad = {"Authorization": "Bearer rgd_made-up-key-that-is-not-in-the-catalog"}
    with httpx.Client(base_url=kb_server.url, timeout=30) as client:
        for i in range(25):
            if i % 3 == 0:
                r = client.get("/api/v1/datasets", headers=bad)  # the auth dependency
            elif i % 3 == 1:
                r = client.post("/api/v1/datasets", headers=bad, json={"name": "x"})  # the body gate
            else:
                r = client.get("/api/v1/datasets")  # no key at all
            assert r.status_code == 401
    bursts = every_record(service, action="auth.failed_burst")
    assert len(bursts) == 1
    (burst,) = bursts
    assert burst["outcome"] == "denied"
    assert burst["tenant_id"] is None
    assert (burst["target_kind"], burst["target_id"], burst["client"]) == ("client", "127.0.0.1", "127.0.0.1")
    assert burst["detail"] == {"failures": 10, "window_s": 60.0}
    assert burst["actor"] == "anonymous"


def test_no_route_changes_or_deletes_a_record(kb_server: LiveServer) -> None:
    schema = httpx.get(f"{kb_server.url}/openapi.json").json()
    audit_paths = {p: ops for p, ops in schema["paths"].items() if p.startswith("/api/v1/audit")}
    assert set(audit_paths) == {"/api/v1/audit", "/api/v1/audit/export"}
    assert {m for ops in audit_paths.values() for m in ops} == {"get"}
    auth = {"Authorization": f"Bearer {SERVICE_KEY}"}
    for method in ("PUT", "PATCH", "DELETE", "POST"):
        r = httpx.request(method, f"{kb_server.url}/api/v1/audit", headers=auth)
        assert r.status_code == 405, (method, r.status_code)


def test_a_delete_on_the_ingestion_surface_is_recorded(service: Api) -> None:
    file_id = f"owui-{uuid.uuid4().hex[:8]}"
    service.ok("DELETE", f"/api/v1/documents/{file_id}")
    (record,) = every_record(service, action="file.delete", actor="service")[:1]
    assert (record["target_kind"], record["target_id"], record["outcome"]) == ("file", file_id, "ok")
    assert record["detail"] == {"chunks_deleted": 0, "surface": "ingestion"}
    assert record["tenant_id"] is None
