"""``PUT /api/v1/ingest`` takes an optional ``metadata`` (multipart field or JSON key): the file's
tags and fields land in every chunk's payload, and ``POST /search``'s filter finds them; a request
without it is the ingestion service's, unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from ragd.api.app import create_app
from ragd.bootstrap import open_services
from tests.api.conftest import AUTH, THREE, ingest_over_http, service_settings
from tests.support.live_server import LiveServer


def _search(live: LiveServer, flt: object) -> list[str]:
    body = {"queries": ["releases and deployments"], "collection_names": ["meta"], "k": 10, "filter": flt}
    r = httpx.post(f"{live.url}/search", json=body, headers=AUTH, timeout=60)
    assert r.status_code == 200, r.text
    return sorted({m["file_id"] for m in r.json()["metadatas"][0]})


def test_ingest_metadata_reaches_the_payload_and_the_filter(live: LiveServer) -> None:
    ingest_over_http(live)  # the seed's requests: no metadata
    for file_id, name, data in THREE:
        form = {"file_id": f"m-{file_id}", "filename": name, "collection_name": "meta", "user_id": "u"}
        if file_id != "g":
            tags = ["release"] if file_id == "a" else ["deploy", "ops"]
            form["metadata"] = json.dumps(
                {"tags": tags, "fields": {"team": file_id, "year": 2020 + len(name)}}
            )
        r = httpx.put(f"{live.url}/api/v1/ingest", files={"file": (name, data)}, data=form, headers=AUTH)
        assert r.status_code == 200, r.text
    assert _search(live, None) == ["m-a", "m-b", "m-g"]
    assert _search(live, {"must": [{"key": "tags", "match": {"value": "ops"}}]}) == ["m-b"]
    assert _search(live, {"must": [{"key": "fields.year", "range": {"gte": 2028}}]}) == ["m-a"]
    assert _search(live, {"must": [{"is_empty": {"key": "tags"}}]}) == ["m-g"]

    form = {"file_id": "bad", "filename": "x.md", "collection_name": "meta", "user_id": "u"}
    for bad, said in (
        ("[1]", "metadata: must be an object"),
        ('{"fields": {"a b": 1}}', "fields: name 'a b' must match"),
        ('{"labels": []}', "metadata.labels: unknown"),
    ):
        r = httpx.put(
            f"{live.url}/api/v1/ingest",
            files={"file": ("x.md", b"# x\ntext\n")},
            data={**form, "metadata": bad},
            headers=AUTH,
        )
        assert r.status_code == 400, r.text
        assert said in r.json()["detail"]["error"], r.text


async def test_each_field_of_an_ingest_gets_its_payload_index(tmp_path: Path, model_cache: Path) -> None:
    """Without one, a filter on the field reads every point's payload (~1 s a search at 1M chunks,
    docs/benchmarks.md "Filtered search"); a dataset's fields get theirs when their type is recorded."""
    settings = service_settings(tmp_path / "data", model_cache)
    with LiveServer(create_app(settings)) as live:
        live.wait_ready()
        form = {"file_id": "f1", "filename": "a.md", "collection_name": "idx", "user_id": "u"}
        form["metadata"] = json.dumps({"tags": ["x"], "fields": {"team": "core", "year": 2026}})
        r = httpx.put(
            f"{live.url}/api/v1/ingest",
            files={"file": ("a.md", b"# Notes\nThe release train leaves on Fridays.\n")},
            data=form,
            headers=AUTH,
            timeout=60,
        )
        assert r.status_code == 200, r.text
    async with open_services(settings) as services:  # the embedded store the server wrote
        schema = await services.store.payload_schema()  # type: ignore[attr-defined]
    assert schema["meta.fields.team"][0] == "keyword"
    assert schema["meta.fields.year"][0] == "float"
    assert "meta.tags" in schema
