"""FastAPI's /docs and /redoc pages load their script and CSS from a CDN (cdn.jsdelivr.net), outside the
UI's Content-Security-Policy: off unless ``RAGD_SERVER__API_DOCS_ENABLED=true``; /openapi.json stays."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from ragd.api.app import create_app
from ragd.settings import ServerSettings, Settings


def _client(tmp_path: Path, **server: object) -> TestClient:
    app = create_app(Settings(data_dir=tmp_path, server=ServerSettings(**server)))  # type: ignore[arg-type]
    return TestClient(app, base_url="http://127.0.0.1")  # without a key: loopback names only


@pytest.mark.parametrize("path", ["/docs", "/redoc", "/docs/oauth2-redirect"])
def test_the_cdn_pages_are_off_by_default(tmp_path: Path, path: str) -> None:
    client = _client(tmp_path)
    answer = client.get(path)
    assert answer.status_code == 404
    assert "cdn.jsdelivr.net" not in answer.text


def test_the_schema_is_still_served_and_lists_no_docs_page(tmp_path: Path) -> None:
    schema = _client(tmp_path).get("/openapi.json")
    assert schema.status_code == 200
    assert "/search" in schema.json()["paths"]


def test_the_setting_turns_them_on(tmp_path: Path) -> None:
    client = _client(tmp_path, api_docs_enabled=True)
    assert client.get("/docs").status_code == 200
    assert client.get("/redoc").status_code == 200
