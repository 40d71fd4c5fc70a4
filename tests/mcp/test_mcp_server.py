"""The MCP server as agents reach it, driven by the SDK's own client over both transports.

Streamable HTTP: a live ``ragd serve`` app on loopback (real uvicorn, embedded Qdrant, the real
model, a SQLite catalog) with two tenants and their keys.  Stdio: ``ragd mcp`` as a process, the
way Claude Desktop starts it.  Texts are small; the model loads once per server.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from ragd.api.app import create_app
from ragd.errors import RenderUnavailable
from ragd.settings import CrawlSettings, EmbeddingSettings, ServerSettings, Settings, WorkerSettings
from ragd.sources.render import find_chromium
from tests.kb.conftest import Api, new_tenant
from tests.sources.site import LoopbackSite, Page
from tests.support.fake_dns import PUBLIC, FakeDns
from tests.support.live_server import LiveServer

SERVICE_KEY = "mcp-service-key-0123456789abcdef0123456789"
READ_TOOLS = {"search", "list_collections", "read_document"}
ALL_TOOLS = READ_TOOLS | {"add_text", "add_url"}
TURBINE = "The Zephyr-9 wind turbine needs a gearbox inspection every 450 operating hours."
SECRET = "Project Nightingale's launch password is BLUE-FALCON-77."
MANUAL = "\n\n".join(
    f"## Section {n}\n\nStep {n} of the pump manual: open valve V{n} and wait {n * 7} seconds before "
    f"reading gauge G{n}; log the pressure in the sheet."
    for n in range(1, 31)
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[LiveServer]:
    data_dir = tmp_path_factory.mktemp("mcp") / "data"
    settings = Settings(
        data_dir=data_dir,
        embedding=EmbeddingSettings(cache_dir=model_cache),
        server=ServerSettings(api_key=SERVICE_KEY),  # type: ignore[arg-type]
        worker=WorkerSettings(poll_s=0.1, lease_s=5, backoff_s=0.2),
        crawl=CrawlSettings(delay_s=0.0, allow_private=False),
    )
    with LiveServer(create_app(settings)) as live:
        live.wait_ready()
        yield live


@pytest.fixture(scope="module")
def world(server: LiveServer) -> Iterator[dict[str, Any]]:
    """Tenant A (editor, reader keys) with a handbook dataset; tenant B (editor) with a secret one."""
    service = Api(server.url, SERVICE_KEY)
    _, a = new_tenant(service, "acme", "editor", "reader")
    _, b = new_tenant(service, "globex", "editor")
    handbook = a["editor"].ok("POST", "/api/v1/datasets", 201, json={"name": "handbook"})
    secrets = b["editor"].ok("POST", "/api/v1/datasets", 201, json={"name": "secrets"})
    yield {"a": a, "b": b, "handbook": handbook, "secrets": secrets}
    for api in [service, *a.values(), *b.values()]:
        api.close()


@asynccontextmanager
async def http_client(server: LiveServer, key: str, mode: str = "auto") -> AsyncIterator[Client]:
    """The SDK's client with ``key``; ``mode="legacy"``: the initialize handshake today's agents do."""
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120) as http,
        Client(streamable_http_client(f"{server.url}/mcp", http_client=http), mode=mode) as client,
    ):
        yield client


def ok(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def error(result: CallToolResult) -> str:
    assert result.is_error, result.structured_content
    return " ".join(getattr(block, "text", "") for block in result.content)


async def tool_names(client: Client) -> set[str]:
    return {tool.name for tool in (await client.list_tools()).tools}


async def test_tools_by_role_search_and_citations(server: LiveServer, world: dict[str, Any]) -> None:
    handbook = world["handbook"]
    async with http_client(server, world["a"]["editor"].key) as editor:
        assert await tool_names(editor) == ALL_TOOLS
        added = ok(
            await editor.call_tool(
                "add_text", {"dataset_id": handbook["id"], "name": "turbines", "text": TURBINE}
            )
        )
        assert added["status"] == "indexed"
        assert added["chunks"] >= 1
        assert added["collection"] == handbook["collection_name"]
        assert added["name"] == "turbines.md"
        again = ok(
            await editor.call_tool(
                "add_text", {"collection": handbook["collection_name"], "name": "turbines", "text": TURBINE}
            )
        )
        assert again["file_id"] == added["file_id"]  # the same name replaces, never duplicates
        assert again["status"] == "unchanged"
    async with http_client(server, world["a"]["reader"].key) as reader:
        assert await tool_names(reader) == READ_TOOLS
        found = ok(await reader.call_tool("search", {"query": "How often is the gearbox inspected?"}))
    best = found["hits"][0]
    assert "450 operating hours" in best["text"]
    assert best["citation"] == "[1]"
    assert best["name"] == "turbines.md"
    assert best["collection"] == handbook["collection_name"]
    assert best["file_id"] == added["file_id"]
    assert 0 <= best["relevance"] <= 1
    assert best["page"] is None
    files = world["a"]["editor"].ok("GET", f"/api/v1/datasets/{handbook['id']}/files")
    assert [f["name"] for f in files["files"] if f["id"] == added["file_id"]] == ["turbines.md"]


async def test_a_tenant_key_reaches_only_its_tenant(server: LiveServer, world: dict[str, Any]) -> None:
    secrets = world["secrets"]
    async with http_client(server, world["b"]["editor"].key) as other:
        ok(await other.call_tool("add_text", {"dataset_id": secrets["id"], "name": "launch", "text": SECRET}))
        assert (
            "BLUE-FALCON"
            in ok(await other.call_tool("search", {"query": "launch password"}))["hits"][0]["text"]
        )
    async with http_client(server, world["a"]["reader"].key) as reader:
        listed = ok(await reader.call_tool("list_collections", {}))
        assert [d["name"] for d in listed["datasets"]] == ["handbook"]
        assert listed["collections"] == []
        everything = ok(await reader.call_tool("search", {"query": "Nightingale launch password", "k": 10}))
        assert all("Nightingale" not in hit["text"] for hit in everything["hits"])
        assert {hit["collection"] for hit in everything["hits"]} <= {world["handbook"]["collection_name"]}
        named = ok(
            await reader.call_tool("search", {"query": "launch", "collections": [secrets["collection_name"]]})
        )
        assert named["hits"] == []  # another tenant's collection is left out, like an unknown one
        assert "NOT_FOUND" in error(
            await reader.call_tool("search", {"query": "launch", "datasets": [secrets["id"]]})
        )
        hidden = {"collection": secrets["collection_name"], "file_id": "x"}
        assert "NOT_FOUND" in error(await reader.call_tool("read_document", hidden))
    async with http_client(server, world["a"]["editor"].key) as editor:
        stranger = {"dataset_id": secrets["id"], "name": "x", "text": "planted"}
        assert "NOT_FOUND" in error(await editor.call_tool("add_text", stranger))
        raw = {"collection": "notes", "name": "x", "text": "planted"}
        assert "NOT_FOUND" in error(await editor.call_tool("add_text", raw))  # raw collections: service key


async def test_a_reader_key_cannot_add(server: LiveServer, world: dict[str, Any]) -> None:
    async with http_client(server, world["a"]["reader"].key) as reader:
        text = {"dataset_id": world["handbook"]["id"], "name": "x", "text": "planted"}
        assert "FORBIDDEN" in error(await reader.call_tool("add_text", text))
        page = {"dataset_id": world["handbook"]["id"], "url": "https://example.org/"}
        assert "FORBIDDEN" in error(await reader.call_tool("add_url", page))
        found = ok(await reader.call_tool("search", {"query": "planted", "k": 50}))
        assert all("planted" not in hit["text"] for hit in found["hits"])


async def test_read_document_pages(server: LiveServer, world: dict[str, Any]) -> None:
    handbook = world["handbook"]
    async with http_client(server, world["a"]["editor"].key) as editor:
        added = ok(
            await editor.call_tool(
                "add_text", {"dataset_id": handbook["id"], "name": "pump.md", "text": MANUAL}
            )
        )
        assert added["chunks"] > 1
        where = {"collection": handbook["collection_name"], "file_id": added["file_id"]}
        whole = ok(await editor.call_tool("read_document", {**where, "limit": 100_000}))
        assert whole["next_offset"] is None
        assert whole["total_chars"] == len(whole["text"])
        assert "Step 1 of the pump manual" in whole["text"]
        assert "Step 30 of the pump manual" in whole["text"]
        pages, offset = [], 0
        while offset is not None:
            page = ok(await editor.call_tool("read_document", {**where, "offset": offset, "limit": 700}))
            assert page["offset"] == offset
            assert len(page["text"]) <= 700
            pages.append(page["text"])
            offset = page["next_offset"]
        assert len(pages) == -(-whole["total_chars"] // 700)
        assert "".join(pages) == whole["text"]
        past = ok(await editor.call_tool("read_document", {**where, "offset": 10**9}))
        assert (past["text"], past["next_offset"]) == ("", None)
        assert "INVALID_REQUEST" in error(await editor.call_tool("read_document", {**where, "limit": 0}))


async def test_the_service_key_sees_every_collection_and_adds_pages(
    server: LiveServer, world: dict[str, Any]
) -> None:
    site = {
        "/doc": Page.html("Heat pumps", "<p>The Aurora heat pump defrosts every 35 minutes in frost.</p>"),
        "/empty": Page.text("  "),
    }
    with LoopbackSite(site) as web:
        async with http_client(server, SERVICE_KEY) as service:
            assert await tool_names(service) == ALL_TOOLS
            added = ok(
                await service.call_tool("add_url", {"collection": "web-notes", "url": web.url("/doc")})
            )
            assert (added["name"], added["source"], added["dataset_id"]) == (
                "Heat pumps",
                web.url("/doc"),
                None,
            )
            listed = ok(await service.call_tool("list_collections", {}))
            names = {c["name"]: c for c in listed["collections"]}
            assert names["web-notes"]["chunks"] >= 1
            assert names[world["secrets"]["collection_name"]]["dataset_id"] == world["secrets"]["id"]
            assert {d["name"] for d in listed["datasets"]} >= {"handbook", "secrets"}
            hits = ok(
                await service.call_tool(
                    "search", {"query": "How often does it defrost?", "collections": ["web-notes"]}
                )
            )
            assert "35 minutes" in hits["hits"][0]["text"]
            assert hits["hits"][0]["source"] == web.url("/doc")
            empty = {"collection": "web-notes", "url": web.url("/empty")}
            assert "EMPTY_DOCUMENT" in error(await service.call_tool("add_url", empty))
        async with http_client(server, world["a"]["editor"].key) as editor:
            page = {"dataset_id": world["handbook"]["id"], "url": web.url("/doc")}
            assert "PRIVATE_ADDRESS" in error(await editor.call_tool("add_url", page))  # not for tenants
        assert web.page_paths() == ["/doc", "/empty"]


@pytest.mark.slow
async def test_add_url_with_render_makes_a_page_written_by_javascript_searchable(server: LiveServer) -> None:
    """Without render the page is empty (its text is written by a script from JSON); with it, the
    text is indexed and found.  Needs Chromium and Playwright (skips without)."""
    try:
        find_chromium(None)
    except RenderUnavailable:
        pytest.skip("no Chromium: apt-get install chromium")
    pytest.importorskip("playwright.async_api")
    script = (
        "fetch('/facts.json').then(r => r.json()).then(d => { document.getElementById('main')"
        ".innerHTML = '<article><h1>Otters</h1><p>' + d.text + '</p></article>'; });"
    )
    fact = (
        "The river station counts the sea otters every Tuesday at dawn, and the count of the "
        "Kelpwood colony was 48 otters, two more than last spring after the storm season."
    )
    site = {
        "/app": Page(
            f"<!DOCTYPE html><html><head><title>Otters</title></head><body><main id='main'></main>"
            f"<script>{script}</script></body></html>".encode()
        ),
        "/facts.json": Page(f'{{"text": "{fact}"}}'.encode(), content_type="application/json"),
    }
    with LoopbackSite(site) as web:
        async with http_client(server, SERVICE_KEY) as service:
            page = {"collection": "rendered-notes", "url": web.url("/app")}
            assert "EMPTY_DOCUMENT" in error(await service.call_tool("add_url", page))
            added = ok(await service.call_tool("add_url", {**page, "render": True}))
            assert added["chunks"] >= 1
            assert added["source"] == web.url("/app")
            hits = ok(
                await service.call_tool(
                    "search",
                    {"query": "How many otters in the Kelpwood colony?", "collections": ["rendered-notes"]},
                )
            )
            assert "48 otters" in hits["hits"][0]["text"]
        assert web.page_paths() == ["/app", "/app", "/facts.json"]


async def test_add_url_of_a_page_redirecting_to_javascript_is_a_tool_error(server: LiveServer) -> None:
    # httpx refuses such a Location (InvalidURL): a tool error with a code, not a JSON-RPC internal error
    with LoopbackSite({"/js": Page.redirect("javascript:alert(1)")}) as web:
        async with http_client(server, SERVICE_KEY) as service:
            bad = {"collection": "web-notes", "url": web.url("/js")}
            assert "INVALID_LINK" in error(await service.call_tool("add_url", bad))
            assert await tool_names(service) == ALL_TOOLS  # the session goes on


async def test_add_url_of_a_name_that_rebinds_to_loopback_is_refused_at_connection(
    server: LiveServer, world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Public when add_url checks the URL, loopback when the page is fetched: a tool error, no request."""
    dns = FakeDns(monkeypatch)
    with LoopbackSite({"/doc": Page.html("Doc", "<p>The heron pump needs oil every week.</p>")}) as web:
        dns.answer("notes.rebind.test", [PUBLIC], ["127.0.0.1"])
        page = {
            "dataset_id": world["handbook"]["id"],
            "url": web.url("/doc").replace("127.0.0.1", "notes.rebind.test"),
        }
        async with http_client(server, world["a"]["editor"].key) as editor:
            assert "PRIVATE_ADDRESS" in error(await editor.call_tool("add_url", page))
        assert web.requests == []
        assert dns.asked == ["notes.rebind.test", "notes.rebind.test"]  # the check, then the connection


async def test_a_handshake_era_client_gets_the_same_answers(
    server: LiveServer, world: dict[str, Any]
) -> None:
    async with http_client(server, world["a"]["reader"].key, mode="legacy") as reader:
        assert reader.protocol_version.startswith("2025-")
        assert await tool_names(reader) == READ_TOOLS
        found = ok(await reader.call_tool("search", {"query": "gearbox inspection interval", "k": 1}))
        assert found["hits"][0]["collection"] == world["handbook"]["collection_name"]
        assert "FORBIDDEN" in error(
            await reader.call_tool("add_text", {"collection": "x", "name": "x", "text": "x"})
        )


def test_a_missing_or_bad_key_is_401(server: LiveServer) -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    for headers in ({}, {"Authorization": "Bearer wrong-key"}, {"Authorization": "Bearer rgd_not_a_key"}):
        r = httpx.post(f"{server.url}/mcp", json=ping, headers={"Accept": "application/json", **headers})
        assert r.status_code == 401, r.text
        assert r.json() == {"detail": "Invalid API key"}
        assert r.headers["www-authenticate"] == "Bearer"


@pytest.mark.slow  # > 5 s (the fast tier's bound)
async def test_stdio_serves_the_local_index(tmp_path: Path, model_cache: Path) -> None:
    """``ragd mcp`` with the local user's rights, and nothing but protocol on stdout."""
    env = {"RAGD_EMBEDDING__CACHE_DIR": str(model_cache), "HF_HUB_OFFLINE": "1"}
    env |= {k: v for k, v in os.environ.items() if k in ("PYTHONPATH", "VIRTUAL_ENV")}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ragd.cli.app", "mcp", "--data-dir", str(tmp_path / "data")],
        env=env,
    )
    stray: list[Exception] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, Exception):  # a stdout line that is no JSON-RPC message
            stray.append(message)

    # the initialize handshake, as Claude Desktop does it
    async with Client(params, message_handler=on_message, read_timeout_seconds=120, mode="legacy") as client:
        assert await tool_names(client) == ALL_TOOLS
        added = ok(
            await client.call_tool("add_text", {"collection": "notes", "name": "pump.md", "text": MANUAL})
        )
        found = ok(await client.call_tool("search", {"query": "valve V12", "collections": ["notes"], "k": 3}))
        assert any("valve V12 " in hit["text"] for hit in found["hits"])
        assert found["hits"][0]["citation"] == "[1]"
        first = ok(
            await client.call_tool(
                "read_document", {"collection": "notes", "file_id": added["file_id"], "limit": 500}
            )
        )
        assert first["next_offset"] == 500
        assert first["text"].startswith("## Section 1")
        assert "INVALID_REQUEST" in error(await client.call_tool("search", {"query": "x", "k": 0}))
    assert stray == []
