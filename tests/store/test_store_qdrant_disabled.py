"""The disabled flag on the wire to a Qdrant server: the JSON bodies qdrant-client sends.

Local mode (the contract suite) proves the behaviour; this pins what a real server receives:
a bool index, ``must_not`` on every search path, and a set-payload nested under ``meta``;
and the dense search parameters (int8 scan rescored with the float32 vectors, ACORN when filtered).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from qdrant_client import AsyncQdrantClient

from ragd.store import payload as pl
from ragd.store.qdrant_store import QdrantStore
from ragd.types import PointFilter, SparseVector, StoreQuery
from tests.support.scripted_http import Reply, ScriptedServer

from .data import DIM, manifest

COLLECTION = "ingestion_files"
BASE = f"/collections/{COLLECTION}"
NOT_DISABLED = {"must_not": [{"key": "meta.disabled", "match": {"value": True}}]}


async def _collection_info(tmp_path: Path) -> dict[str, Any]:
    """The collection as a server describes it, made by ragd (in local mode), with the older
    indexes only: a store opened before ``meta.disabled`` existed."""
    store = QdrantStore(path=tmp_path, collection=COLLECTION)
    await store.open(manifest())
    await store.close()
    client = AsyncQdrantClient(path=str(tmp_path))
    info = (await client.get_collection(COLLECTION)).model_dump(mode="json", exclude_none=True)
    await client.close()
    keyword = {"data_type": "keyword", "params": {"type": "keyword"}, "points": 0}
    info["payload_schema"] = {i.key: keyword for i in pl.PAYLOAD_INDEXES if i.key != pl.DISABLED_KEY}
    return info


def _script(server: ScriptedServer, info: dict[str, Any]) -> None:
    ok = {"operation_id": 1, "status": "completed"}
    server.on("GET", f"{BASE}/exists", lambda _: Reply.json({"result": {"exists": True}}))
    server.on("GET", BASE, lambda _: Reply.json({"result": info}))
    server.on("PUT", f"{BASE}/index", lambda _: Reply.json({"result": ok}))
    server.on("POST", f"{BASE}/points/count", lambda _: Reply.json({"result": {"count": 8}}))
    server.on("POST", f"{BASE}/points/payload", lambda _: Reply.json({"result": ok}))
    server.on("POST", f"{BASE}/points/query", lambda _: Reply.json({"result": {"points": []}}))
    server.on("POST", f"{BASE}/points/query/batch", lambda r: Reply.json({"result": _empty_batch(r.json)}))


def _empty_batch(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"points": []} for _ in body["searches"]]


async def test_what_a_server_receives(tmp_path: Path) -> None:
    info = await _collection_info(tmp_path)
    with ScriptedServer() as server:
        _script(server, info)
        store = QdrantStore(url=server.url, collection=COLLECTION)
        await store.open(manifest())
        flt = PointFilter(collection_names=("kb",), file_id="f")
        assert await store.set_disabled(flt, True) == 8
        dense, sparse = [1.0] + [0.0] * (DIM - 1), SparseVector((3,), (1.0,))
        await store.search(StoreQuery(filter=PointFilter(), limit=3, dense=dense))  # type: ignore[arg-type]
        await store.search(StoreQuery(filter=flt, limit=3, dense=dense, sparse=sparse))  # type: ignore[arg-type]
        await store.close()
        server.verify()
    bodies = {(r.method, r.path): r.json for r in server.requests}

    assert bodies[("PUT", f"{BASE}/index")] == {
        "field_name": "meta.disabled",
        "field_schema": {"type": "bool"},
    }
    scope = {
        "must": [
            {"key": "meta.collection_name", "match": {"value": "kb"}},
            {"key": "meta.file_id", "match": {"value": "f"}},
        ]
    }
    assert bodies[("POST", f"{BASE}/points/payload")] == {
        "payload": {"disabled": True},
        "filter": scope,
        "key": "meta",
    }
    assert bodies[("POST", f"{BASE}/points/count")] == {"filter": scope, "exact": True}
    assert bodies[("POST", f"{BASE}/points/query")]["filter"] == NOT_DISABLED
    fused, *alone = bodies[("POST", f"{BASE}/points/query/batch")]["searches"]
    assert "filter" not in fused
    for request in [*fused["prefetch"], *alone]:
        assert request["filter"] == {**scope, **NOT_DISABLED}
    rescored = {"rescore": True, "oversampling": 2.0}
    assert bodies[("POST", f"{BASE}/points/query")]["params"] == {"quantization": rescored}
    dense_prefetch, sparse_prefetch = fused["prefetch"]
    assert dense_prefetch["params"] == {"acorn": {"enable": True}, "quantization": rescored}
    assert "params" not in sparse_prefetch
