"""Two tenants driven through every surface at random: 0 leaks (issue 30, docs/security.md).

One live ``ragd serve`` (real uvicorn, embedded Qdrant, the real model, a SQLite catalog) holds
two tenants, each with keys of every role, a dataset of uploaded files, a folder source and an S3
source (each on a root or prefix granted to that tenant), and secret marker words in all of them.
A seeded random walk then sends requests as a random key of a random tenant, aimed at its own or the
other tenant's things, through the HTTP API (the audit trail included), the Open WebUI ``/search``,
the chat proxy (its upstream is a scripted LLM that records every prompt it is given), MCP, the
UI's session cookie, the model endpoints, and source creation of every kind.  Every byte a key
gets back, and every prompt the upstream model is shown on that key's behalf, is checked for the
other tenant's markers, ids and names.  The seed is in every failure message.

tests/kb/test_isolation.py walks three tenants through the dataset API alone, on both catalogs.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from ragd.api.app import create_app
from ragd.settings import (
    CatalogSettings,
    CrawlSettings,
    EmbeddingSettings,
    LlmSettings,
    ServerSettings,
    Settings,
    WorkerSettings,
)
from tests.kb.conftest import Api, new_tenant
from tests.support.live_server import LiveServer
from tests.support.s3_server import S3Server, s3_server
from tests.support.scripted_http import RecordedRequest, Reply, ScriptedServer

__all__ = ["s3_server"]

pytestmark = pytest.mark.slow

SEED = 20261128
SERVICE_KEY = "surfaces-service-key-0123456789abcdef01234"
ROLES = ("admin", "editor", "reader")
CHAT = "/v1/chat/completions"
UI = {"X-Ragd-UI": "1"}
#: routes that name nothing of the target's: they answer 200 with the caller's own things
LISTINGS = ("/api/v1/datasets", "/api/v1/search", "/api/v1/jobs", "/api/v1/tenants")
AUDIT = ("/api/v1/audit", "/api/v1/audit/export")


@dataclass
class Tenant:
    name: str
    id: str
    keys: dict[str, Api]
    marker: str
    folder: Path
    prefix: str
    dataset: dict[str, Any] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)

    def secrets(self) -> set[str]:
        """What no key of another tenant may ever see."""
        ds = self.dataset
        return {self.id, self.marker, ds["id"], ds["name"], ds["collection_name"], *self.files, *self.sources}


@dataclass
class World:
    url: str
    service: Api
    tenants: list[Tenant]
    upstream: ScriptedServer
    bucket: str

    def other(self, me: Tenant) -> Tenant:
        return next(t for t in self.tenants if t is not me)


def _completion(request: RecordedRequest) -> Reply:
    return Reply.json(
        {
            "id": "chatcmpl-up",
            "object": "chat.completion",
            "created": 1700000000,
            "model": "up-model",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "As noted [1]."},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    )


@pytest.fixture(scope="module")
def world(
    tmp_path_factory: pytest.TempPathFactory, model_cache: Path, s3_server: S3Server
) -> Iterator[World]:
    root = tmp_path_factory.mktemp("surfaces")
    names = ("northwind", "southmark")
    markers = {n: f"zq{n[:4]}{uuid.uuid4().hex[:6]}" for n in names}
    folders = {}
    for name in names:
        folders[name] = root / "shares" / name
        folders[name].mkdir(parents=True)
        (folders[name] / "memo.md").write_text(f"# Memo\nThe {markers[name]} budget is confidential.\n")
    bucket = s3_server.bucket({f"{n}/plan.md": f"# Plan\nThe {markers[n]} plan.\n".encode() for n in names})
    with ScriptedServer() as upstream:
        upstream.on("POST", CHAT, _completion)
        settings = Settings(
            data_dir=root / "data",
            embedding=EmbeddingSettings(cache_dir=model_cache),
            server=ServerSettings(api_key=SERVICE_KEY),  # type: ignore[arg-type]
            catalog=CatalogSettings(folder_roots=[root / "shares"]),
            worker=WorkerSettings(poll_s=0.1, lease_s=5, backoff_s=0.2, debounce_ms=150),
            crawl=CrawlSettings(delay_s=0.0, allow_private=False),
            llm=LlmSettings(base_url=f"{upstream.url}/v1", model="up-model"),
            s3=s3_server.settings(),
        )
        with LiveServer(create_app(settings)) as live:
            live.wait_ready()
            service = Api(live.url, SERVICE_KEY)
            tenants = []
            for name in names:
                tenant_id, keys = new_tenant(service, name, *ROLES)
                tenants.append(Tenant(name, tenant_id, keys, markers[name], folders[name], f"{name}/"))
            for tenant in tenants:
                _furnish(service, tenant, bucket)
            yield World(live.url, service, tenants, upstream, bucket)
            for api in [service, *(k for t in tenants for k in t.keys.values())]:
                api.close()


def _furnish(service: Api, tenant: Tenant, bucket: str) -> None:
    """Grants from the service key; a dataset, an upload, a folder and an S3 source by the admin."""
    grants = f"/api/v1/tenants/{tenant.id}/grants"
    service.ok("POST", grants, 201, json={"kind": "folder", "target": str(tenant.folder)})
    service.ok("POST", grants, 201, json={"kind": "s3", "target": f"{bucket}/{tenant.prefix}"})
    admin = tenant.keys["admin"]
    tenant.dataset = admin.ok("POST", "/api/v1/datasets", 201, json={"name": f"{tenant.name}-records"})
    ds = tenant.dataset["id"]
    text = f"# Records\nThe {tenant.marker} figures for the quarter are confidential.\n".encode()
    sent = admin.ok("POST", f"/api/v1/datasets/{ds}/files", 202, files=[("files", ("records.md", text))])
    tenant.files += [f["id"] for f in sent["files"]]
    jobs = [sent["job"]["id"]]
    configs = ({"path": str(tenant.folder)}, {"bucket": bucket, "prefix": tenant.prefix})
    for kind, config in zip(("folder", "s3"), configs, strict=True):
        added = admin.ok("POST", f"/api/v1/datasets/{ds}/sources", 202, json={"kind": kind, "config": config})
        tenant.sources.append(added["source"]["id"])
        jobs.append(added["job"]["id"])
    for job in jobs:
        assert admin.wait_job(job)["status"] == "succeeded"
    listed = admin.ok("GET", f"/api/v1/datasets/{ds}/files")["files"]
    tenant.files = [f["id"] for f in listed]
    assert len(tenant.files) == 3, listed


def _leaks(text: str, bad: set[str], sent: str) -> set[str]:
    """Foreign secrets in ``text``, but not those the caller itself sent (an echo reveals nothing)."""
    return {s for s in bad if s in text and s not in sent}


Exchanges = list[tuple[str, str]]  # (what was sent, what came back)


# -- the surfaces: each takes (world, me, role, target, rng) and returns [(what was sent, what came back)]


def _dataset_api(
    w: World, me: Tenant, role: str, target: Tenant, rng: random.Random
) -> list[tuple[str, str]]:
    api = me.keys[role]
    ds = target.dataset["id"]
    file_id = rng.choice(target.files)
    source_id = rng.choice(target.sources)
    calls: list[tuple[str, str, dict[str, Any]]] = [
        ("GET", "/api/v1/datasets", {}),
        ("GET", f"/api/v1/datasets/{ds}", {}),
        ("GET", f"/api/v1/datasets/{ds}/files", {}),
        ("GET", f"/api/v1/datasets/{ds}/files/{file_id}", {}),
        ("GET", f"/api/v1/datasets/{ds}/sources", {}),
        ("POST", f"/api/v1/datasets/{ds}/sources/{source_id}/sync", {}),
        ("POST", "/api/v1/search", {"json": {"query": f"{target.marker} figures", "k": 10}}),
        ("POST", "/api/v1/search", {"json": {"query": "confidential figures", "dataset_ids": [ds]}}),
        ("POST", f"/api/v1/datasets/{ds}/search", {"json": {"query": f"{target.marker} budget"}}),
        ("GET", "/api/v1/jobs", {}),
        ("GET", f"/api/v1/tenants/{target.id}/keys", {}),
        ("GET", f"/api/v1/tenants/{target.id}/grants", {}),
        ("GET", "/api/v1/tenants", {}),
        ("GET", "/api/v1/audit", {}),
        ("GET", "/api/v1/audit", {"params": {"tenant": target.id}}),
        ("GET", "/api/v1/audit/export", {"params": {"tenant": target.id}}),
        ("GET", "/api/v1/audit", {"params": {"action": "dataset"}}),
    ]
    out = []
    for method, path, kwargs in rng.sample(calls, 6):
        response = api.request(method, path, **kwargs)
        assert response.status_code < 500, (method, path, response.text)
        if target is not me and response.status_code < 300:  # a foreign thing named in the path
            assert path in LISTINGS or path in AUDIT, f"{method} {path} answered {response.status_code}"
        out.append((f"{method} {path} {json.dumps(kwargs)}", response.text))
    return out


def _open_webui_search(
    w: World, me: Tenant, role: str, target: Tenant, rng: random.Random
) -> list[tuple[str, str]]:
    every = [t.dataset["collection_name"] for t in w.tenants]
    body = {
        "queries": [f"{target.marker} confidential figures"],
        "collection_names": rng.sample(every, len(every)),
        "k": 10,
    }
    response = me.keys[role].post("/search", json=body)
    assert response.status_code == 200, response.text
    if target is me:
        assert me.marker in response.text  # the walk can see its own data, so a 0 means something
    return [(json.dumps(body), response.text)]


def _chat(w: World, me: Tenant, role: str, target: Tenant, rng: random.Random) -> Exchanges:
    seen = len(w.upstream.requests_to("POST", CHAT))
    question = f"What are the {target.marker} figures?"
    body = {
        "model": f"rag/{target.dataset['collection_name']}",
        "messages": [{"role": "user", "content": question}],
    }
    response = me.keys[role].post(CHAT, json=body)
    expected = 200 if target is me else 404
    assert response.status_code == expected, response.text
    prompts = [r.body.decode() for r in w.upstream.requests_to("POST", CHAT)[seen:]]
    return [(json.dumps(body), response.text), *((json.dumps(body), p) for p in prompts)]


def _ui_session(w: World, me: Tenant, role: str, target: Tenant, rng: random.Random) -> Exchanges:
    with httpx.Client(base_url=w.url, timeout=60) as browser:
        signed = browser.post("/ui/session", json={"key": me.keys[role].key}, headers=UI)
        assert signed.status_code == 200, signed.text
        ds = target.dataset["id"]
        out = [("sign-in", signed.text)]
        for path in ("/api/v1/datasets", f"/api/v1/datasets/{ds}/files", f"/api/v1/tenants/{target.id}/keys"):
            response = browser.get(path, headers=UI)
            assert response.status_code < 500, response.text
            out.append((path, response.text))
        browser.delete("/ui/session", headers=UI)
    return out


def _model_endpoints(
    w: World, me: Tenant, role: str, target: Tenant, rng: random.Random
) -> list[tuple[str, str]]:
    api = me.keys[role]
    embedded = api.post("/v1/embeddings", json={"model": "default", "input": [f"{target.marker} figures"]})
    assert embedded.status_code == 200, embedded.text
    documents = ["the quarter's figures", "a recipe for bread"]
    reranked = api.post("/v1/rerank", json={"query": "figures", "documents": documents})
    assert reranked.status_code in (200, 404, 501), reranked.text  # 404/501: no reranker configured
    return [("embeddings", embedded.text[:2000]), ("rerank", reranked.text)]


def _sources(w: World, me: Tenant, role: str, target: Tenant, rng: random.Random) -> Exchanges:
    """Every source kind aimed at the other tenant's reach is refused; nothing is added."""
    api = me.keys["admin"]
    ds = me.dataset["id"]

    def source_ids() -> set[str]:  # a sync may change a source's times meanwhile: compare which exist
        return {s["id"] for s in api.ok("GET", f"/api/v1/datasets/{ds}/sources")["sources"]}

    before = source_ids()
    other = w.other(me)
    attempts = [
        {"kind": "folder", "config": {"path": str(other.folder)}},
        {"kind": "folder", "config": {"path": str(other.folder.parent)}},
        {"kind": "s3", "config": {"bucket": w.bucket, "prefix": other.prefix}},
        {"kind": "s3", "config": {"bucket": w.bucket, "prefix": ""}},
        {"kind": "web", "config": {"url": f"{w.url}/api/v1/datasets"}},
    ]
    out = []
    for config in rng.sample(attempts, 3):
        response = api.post(f"/api/v1/datasets/{ds}/sources", json=config)
        assert response.status_code in (400, 403, 422), (config, response.status_code, response.text)
        out.append((json.dumps(config), response.text))
    assert source_ids() == before
    return out


SURFACES = (_dataset_api, _open_webui_search, _chat, _ui_session, _model_endpoints, _sources)


async def _mcp(w: World, me: Tenant, role: str, target: Tenant) -> list[tuple[str, str]]:
    headers = {"Authorization": f"Bearer {me.keys[role].key}"}
    out = []
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120) as http,
        Client(streamable_http_client(f"{w.url}/mcp", http_client=http)) as client,
    ):
        listed = await client.call_tool("list_collections", {})
        out.append(("list_collections", json.dumps(listed.structured_content)))
        args = {"query": f"{target.marker} figures", "collections": [target.dataset["collection_name"]]}
        found = await client.call_tool("search", args)
        text = " ".join(getattr(b, "text", "") for b in found.content)
        out.append((json.dumps(args), json.dumps(found.structured_content) + text))
        if target is not me:
            assert found.is_error or not (found.structured_content or {}).get("results")
    return out


async def test_two_tenants_through_every_surface_leak_nothing(world: World) -> None:
    rng = random.Random(SEED)
    checked = 0
    for step in range(24):
        me = rng.choice(world.tenants)
        role = rng.choice(ROLES)
        target = rng.choice(world.tenants)
        bad = world.other(me).secrets()
        surface = SURFACES[step % len(SURFACES)]
        for sent, got in surface(world, me, role, target, rng):
            leaked = _leaks(got, bad, sent)
            assert not leaked, (
                f"seed {SEED} step {step}: {role} of {me.name} via {surface.__name__}: {leaked}"
            )
            checked += 1
        for sent, got in await _mcp(world, me, role, target):
            leaked = _leaks(got, bad, sent)
            assert not leaked, (
                f"seed {SEED} step {step}: {role} of {me.name} via MCP: {leaked} in {got[:300]}"
            )
            checked += 1
    assert checked >= 100, checked
