"""User metadata on files and the one filter language, on every search surface of a live service.

One live ``ragd serve`` per catalog (SQLite, PostgreSQL; real uvicorn, embedded Qdrant, the real
model) holds two tenants: A's dataset has files uploaded with tags and typed fields (and one
without), B's dataset has a file with the same metadata as A's first.  The same filter then gives
the same hits on ``/api/v1/search``, the dataset search, Open WebUI's ``POST /search`` and MCP's
``search``; a bad filter is INVALID_FILTER naming the field on each; a filter that admits nothing
says so (``filter_matched: 0``); a PATCH of a file's metadata changes what a filter finds without
re-indexing it; and a ``should`` naming tenant B's dataset never reaches B's chunks.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.kb.conftest import Api, new_tenant
from tests.support.live_server import LiveServer

pytestmark = pytest.mark.slow

QUERY = "invoice payment terms for the quarter"
INVOICE_TEXT = (
    "# Invoice {n}\n\nThe quarterly invoice lists the payment terms: net thirty days, late fees of two "
    "percent, and the amounts due for consulting and licences. Customer {customer}.\n"
)
MEMO_TEXT = "# Memo\n\nA memo about the invoice payment terms for the quarter, to be reviewed next week.\n"
#: invoices tagged "invoice", not from before 2023
RECENT_INVOICES = {
    "must": [{"key": "tags", "match": {"value": "invoice"}}],
    "must_not": [{"key": "fields.year", "range": {"lt": 2023}}],
}
BAD = {"must": [{"key": "colour", "match": {"value": "red"}}]}
NOTHING = {"must": [{"key": "tags", "match": {"value": "no-such-tag"}}]}


@dataclass
class World:
    url: str
    a: Api
    b: Api
    a_dataset: dict[str, Any]
    b_dataset: dict[str, Any]
    files: dict[str, dict[str, Any]]


def _upload(api: Api, dataset_id: str, name: str, text: str, **form: str) -> dict[str, Any]:
    files = {"files": (name, text.encode(), "text/markdown")}
    out = api.ok("POST", f"/api/v1/datasets/{dataset_id}/files", 202, files=files, data=form)
    job = api.wait_job(out["job"]["id"])
    assert job["status"] == "succeeded", job
    return out["files"][0]  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def world(kb_server: LiveServer, service: Api) -> Iterator[World]:
    _, a_keys = new_tenant(service, "filters-a", "editor")
    _, b_keys = new_tenant(service, "filters-b", "editor")
    a, b = a_keys["editor"], b_keys["editor"]
    a_ds = a.ok("POST", "/api/v1/datasets", 201, json={"name": "invoices"})
    b_ds = b.ok("POST", "/api/v1/datasets", 201, json={"name": "invoices"})
    acme = {"customer": "acme", "year": 2024, "paid": True, "issued": "2024-03-01"}
    files = {
        "acme": _upload(
            a,
            a_ds["id"],
            "acme.md",
            INVOICE_TEXT.format(n=1, customer="Acme"),
            tags="invoice",
            fields=json.dumps(acme),
        ),
        "globex": _upload(
            a,
            a_ds["id"],
            "globex.md",
            INVOICE_TEXT.format(n=2, customer="Globex"),
            tags='["invoice", "old"]',
            fields=json.dumps({"customer": "globex", "year": 2021, "paid": False, "issued": "2021-05-01"}),
        ),
        "memo": _upload(a, a_ds["id"], "memo.md", MEMO_TEXT),
        "b-acme": _upload(
            b,
            b_ds["id"],
            "b-acme.md",
            INVOICE_TEXT.format(n=3, customer="Acme"),
            tags="invoice",
            fields=json.dumps(acme),
        ),
    }
    yield World(kb_server.url, a, b, a_ds, b_ds, files)
    a.close()
    b.close()


def _api_hits(api: Api, path: str, flt: object, **body: Any) -> tuple[set[tuple[str, str]], dict[str, Any]]:
    out = api.ok("POST", path, json={"query": QUERY, "k": 20, "filter": flt, **body})
    return {(h["file_id"], h["content"]) for h in out["results"]}, out


def _webui_search(w: World, key: str, flt: object, collection: str) -> httpx.Response:
    body = {"queries": [QUERY], "collection_names": [collection], "k": 20, "filter": flt}
    return httpx.post(f"{w.url}/search", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=60)


async def _mcp_search(w: World, key: str, args: dict[str, Any]) -> Any:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120) as http,
        Client(streamable_http_client(f"{w.url}/mcp", http_client=http)) as client,
    ):
        return await client.call_tool("search", {"query": QUERY, "k": 20, **args})


def _mcp_hits(found: Any) -> set[tuple[str, str]]:
    assert not found.is_error, found.content
    return {(h["file_id"], h["text"]) for h in found.structured_content["hits"]}


def test_the_same_filter_gives_the_same_hits_on_every_surface(world: World) -> None:
    w = world
    acme = w.files["acme"]["id"]
    want, out = _api_hits(w.a, "/api/v1/search", RECENT_INVOICES)
    assert want
    assert {f for f, _ in want} == {acme}
    assert out["filter_matched"] == w.files["acme"]["chunks"] or out["filter_matched"] >= 1
    unfiltered, plain = _api_hits(w.a, "/api/v1/search", None)
    assert {f for f, _ in unfiltered} > {acme}  # the filter narrowed a search that finds more
    assert "filter_matched" not in plain

    in_dataset, _ = _api_hits(w.a, f"/api/v1/datasets/{w.a_dataset['id']}/search", RECENT_INVOICES)
    assert in_dataset == want

    r = _webui_search(w, w.a.key, RECENT_INVOICES, w.a_dataset["collection_name"])
    assert r.status_code == 200, r.text
    docs, metas = r.json()["documents"][0], r.json()["metadatas"][0]
    assert {(m["file_id"], d) for m, d in zip(metas, docs, strict=True)} == want
    assert int(r.headers["x-ragd-filter-matched"]) == out["filter_matched"]

    found = asyncio.run(_mcp_search(w, w.a.key, {"datasets": [w.a_dataset["id"]], "filter": RECENT_INVOICES}))
    assert _mcp_hits(found) == want
    assert found.structured_content["filter_matched"] == out["filter_matched"]

    dates = {
        "must": [
            {"key": "fields.issued", "range": {"gte": "2024-01-01"}},
            {"key": "fields.paid", "match": {"value": True}},
        ]
    }
    by_date, _ = _api_hits(w.a, "/api/v1/search", dates)
    assert {f for f, _ in by_date} == {acme}


def _problem(r: httpx.Response) -> str:
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert detail["code"] == "INVALID_FILTER", detail
    return str(detail["error"])


def test_a_bad_filter_is_invalid_filter_naming_the_field_on_every_surface(world: World) -> None:
    w = world
    named = re.compile(r"filter\.must\[0\]\.key: unknown key 'colour'")
    for path in ("/api/v1/search", f"/api/v1/datasets/{w.a_dataset['id']}/search"):
        r = w.a.post(path, json={"query": QUERY, "filter": BAD})
        assert named.search(_problem(r)), path
    assert named.search(_problem(_webui_search(w, w.a.key, BAD, w.a_dataset["collection_name"])))
    found = asyncio.run(_mcp_search(w, w.a.key, {"filter": BAD}))
    assert found.is_error
    text = " ".join(getattr(b, "text", "") for b in found.content)
    assert text.startswith("INVALID_FILTER: "), text
    assert named.search(text), text


def test_a_filter_that_admits_nothing_says_so(world: World) -> None:
    w = world
    hits, out = _api_hits(w.a, "/api/v1/search", NOTHING)
    assert hits == set()
    assert out["filter_matched"] == 0
    r = _webui_search(w, w.a.key, NOTHING, w.a_dataset["collection_name"])
    assert r.json()["documents"] == [[]]
    assert r.headers["x-ragd-filter-matched"] == "0"
    found = asyncio.run(_mcp_search(w, w.a.key, {"filter": NOTHING}))
    assert _mcp_hits(found) == set()
    assert found.structured_content["filter_matched"] == 0


def test_a_should_naming_another_tenants_dataset_never_widens_the_scope(world: World) -> None:
    w = world
    widen = {
        "should": [
            {"key": "dataset", "match": {"value": w.b_dataset["id"]}},
            {"key": "collection", "match": {"value": w.b_dataset["collection_name"]}},
            {"key": "fields.customer", "match": {"value": "acme"}},
        ]
    }
    hits, out = _api_hits(w.a, "/api/v1/search", widen)
    assert {f for f, _ in hits} == {w.files["acme"]["id"]}
    only_b = {"must": [{"key": "dataset", "match": {"value": w.b_dataset["id"]}}]}
    hits, out = _api_hits(w.a, "/api/v1/search", only_b)
    assert hits == set()
    assert out["filter_matched"] == 0
    found = asyncio.run(_mcp_search(w, w.a.key, {"filter": only_b}))
    assert _mcp_hits(found) == set()
    # B's own key does find B's file with the same filter (the filter, not the data, was the limit)
    hits, _ = _api_hits(w.b, "/api/v1/search", only_b)
    assert {f for f, _ in hits} == {w.files["b-acme"]["id"]}


def _jobs(api: Api) -> list[str]:
    """The tenant's jobs (an index or re-index of a file is one)."""
    return [j["id"] for j in api.ok("GET", "/api/v1/jobs", params={"limit": 1000})["jobs"]]


def test_patching_metadata_changes_filtered_hits_without_reindexing(world: World) -> None:
    w = world
    memo = w.files["memo"]
    jobs = _jobs(w.a)
    assert len(jobs) >= 3  # A's three uploads
    chunks_before = w.a.ok("GET", f"/api/v1/datasets/{w.a_dataset['id']}/files/{memo['id']}/chunks")
    hits, _ = _api_hits(w.a, "/api/v1/search", RECENT_INVOICES)
    assert memo["id"] not in {f for f, _ in hits}

    patched = w.a.ok(
        "PATCH",
        f"/api/v1/datasets/{w.a_dataset['id']}/files/{memo['id']}",
        json={"tags": ["invoice", "memo"], "fields": {"year": 2025, "customer": "acme"}},
    )
    assert patched["tags"] == ["invoice", "memo"]
    assert patched["fields"] == {"year": 2025, "customer": "acme"}
    hits, _out = _api_hits(w.a, "/api/v1/search", RECENT_INVOICES)
    assert memo["id"] in {f for f, _ in hits}
    assert _jobs(w.a) == jobs  # nothing was indexed (or embedded) again
    chunks_after = w.a.ok("GET", f"/api/v1/datasets/{w.a_dataset['id']}/files/{memo['id']}/chunks")
    assert [c["id"] for c in chunks_after["chunks"]] == [c["id"] for c in chunks_before["chunks"]]

    # a field removed (null), the tags left as they were
    w.a.ok(
        "PATCH", f"/api/v1/datasets/{w.a_dataset['id']}/files/{memo['id']}", json={"fields": {"year": None}}
    )
    listed = w.a.ok("GET", f"/api/v1/datasets/{w.a_dataset['id']}/files/{memo['id']}")
    assert listed["tags"] == ["invoice", "memo"]
    assert listed["fields"] == {"customer": "acme"}

    # a field keeps its type in the dataset
    r = w.a.patch(
        f"/api/v1/datasets/{w.a_dataset['id']}/files/{memo['id']}", json={"fields": {"year": "soon"}}
    )
    assert r.status_code == 422, r.text
    assert r.json()["detail"]["code"] == "INVALID_METADATA", r.text
    assert "year" in r.json()["detail"]["error"]
    r = w.a.patch(f"/api/v1/datasets/{w.a_dataset['id']}/files/{memo['id']}", json={"fields": {"9x": 1}})
    assert r.status_code == 422, r.text
    assert "9x" in r.json()["detail"]["error"], r.text


def test_a_dataset_lists_its_fields_with_their_types(world: World) -> None:
    """What the sandbox's filter builder offers as keys: each field the dataset's files carry with
    the type recorded for it; another tenant's dataset is not found, as everywhere."""
    w = world
    listed = w.a.ok("GET", f"/api/v1/datasets/{w.a_dataset['id']}/fields")
    assert listed == {
        "fields": [
            {"name": "customer", "type": "string"},
            {"name": "issued", "type": "date"},
            {"name": "paid", "type": "boolean"},
            {"name": "year", "type": "number"},
        ]
    }
    r = w.b.get(f"/api/v1/datasets/{w.a_dataset['id']}/fields")
    assert r.status_code == 404, r.text
    assert r.json()["detail"]["code"] == "NOT_FOUND", r.text
