"""Issue 34 §1/§2 on a live service (real uvicorn, the worker, the real model), on a SQLite and a
PostgreSQL catalog: a text given to ``POST /api/v1/datasets/{id}/content`` takes ``tags`` and
``fields`` as an upload does, and a folder source's files carry their folders, their path and the
source's label, found by ``/api/v1/search`` with a ``filter``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kb.conftest import Api, new_tenant
from tests.support.live_server import LiveServer

POLICY = "# Travel\nThe travel policy asks every traveller to book trains for trips under 600 km.\n"


@pytest.fixture(scope="module")
def editor(kb_server: LiveServer, service: Api) -> Iterator[Api]:
    _, keys = new_tenant(service, "content-metadata", "editor")
    yield keys["editor"]
    keys["editor"].close()


def _hits(api: Api, dataset_id: str, flt: object) -> set[str]:
    out = api.ok(
        "POST",
        "/api/v1/search",
        json={"query": "travel policy", "dataset_ids": [dataset_id], "k": 10, "filter": flt},
    )
    return {h["file_id"] for h in out["results"]}


def test_a_text_takes_tags_and_fields_like_an_upload(editor: Api) -> None:
    ds = editor.ok("POST", "/api/v1/datasets", 201, json={"name": "texts"})
    path = f"/api/v1/datasets/{ds['id']}/content"
    body = {"title": "Travel", "text": POLICY, "tags": ["policy"], "fields": {"owner": "hr", "year": 2024}}
    made = editor.ok("POST", path, 202, json=body)
    entry = made["files"][0]
    assert (entry["tags"], entry["fields"]) == (["policy"], {"owner": "hr", "year": 2024})
    assert editor.wait_job(made["job"]["id"])["status"] == "succeeded"
    plain = editor.ok("POST", path, 202, json={"title": "Other", "text": POLICY.replace("trains", "buses")})
    assert editor.wait_job(plain["job"]["id"])["status"] == "succeeded"
    assert _hits(editor, ds["id"], {"must": [{"key": "fields.owner", "match": {"value": "hr"}}]}) == {
        entry["id"]
    }
    assert _hits(editor, ds["id"], {"must": [{"key": "tags", "match": {"value": "policy"}}]}) == {entry["id"]}
    # bad metadata: 400 INVALID_METADATA naming it, and nothing kept
    for bad in ({"tags": "policy"}, {"fields": {"year": "soon"}}, {"fields": {"bad name": 1}}):
        refused = editor.post(path, json={"title": "Bad", "text": POLICY, **bad})
        assert refused.status_code == 422, refused.text
        assert refused.json()["detail"]["code"] == "INVALID_METADATA"
    names = {f["name"] for f in editor.ok("GET", f"/api/v1/datasets/{ds['id']}/files")["files"]}
    assert names == {"Travel.md", "Other.md"}


def test_a_folder_sources_files_carry_their_path_and_label(
    service: Api, editor: Api, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("source-metadata")
    (folder / "hr" / "travel").mkdir(parents=True)
    (folder / "hr" / "travel" / "trains.md").write_text(POLICY)
    (folder / "notes.md").write_text(POLICY.replace("trains", "bicycles"))
    ds = editor.ok("POST", "/api/v1/datasets", 201, json={"name": "folder"})
    made = service.ok(
        "POST",
        f"/api/v1/datasets/{ds['id']}/sources",
        202,
        json={"kind": "folder", "config": {"path": str(folder)}},
    )
    assert service.wait_job(made["job"]["id"])["status"] == "succeeded"
    files: dict[str, Any] = {
        f["name"]: f for f in editor.ok("GET", f"/api/v1/datasets/{ds['id']}/files")["files"]
    }
    trains = files["trains.md"]
    assert (trains["tags"], trains["fields"]) == (["hr", "travel"], {"path": "hr/travel/trains.md"})
    assert trains["source_label"] == files["notes.md"]["source_label"] == f"folder:{Path(folder).resolve()}"
    assert _hits(editor, ds["id"], {"must": [{"key": "tags", "match": {"value": "travel"}}]}) == {
        trains["id"]
    }
    by_path = {"must": [{"key": "fields.path", "match": {"value": "notes.md"}}]}
    assert _hits(editor, ds["id"], by_path) == {files["notes.md"]["id"]}
