"""A live ragd service (real uvicorn, embedded Qdrant, the real model) shared by a test module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ragd.api.app import create_app
from ragd.settings import EmbeddingSettings, ExtractSettings, ServerSettings, Settings
from tests.support.live_server import LiveServer

KEY = "test-api-key-0123456789abcdef0123456789"
AUTH = {"Authorization": f"Bearer {KEY}"}
ALPHA = b"# Alpha\nThe alpha protocol requires three approvals from the steering board.\n"
BETA = b"# Beta\nBeta deployments run every Tuesday at 06:00 UTC.\n"


GAMMA = b"# Gamma\nGamma releases are frozen during the December holidays.\n"


THREE = (("a", "alpha.md", ALPHA), ("b", "beta.md", BETA), ("g", "gamma.md", GAMMA))


def ingest_over_http(server: LiveServer, files: tuple[tuple[str, str, bytes], ...] = THREE) -> None:
    """Upload ``(file_id, filename, bytes)`` files into collection ``kb`` through the ingest API."""
    for file_id, name, data in files:
        form = {"file_id": file_id, "filename": name, "collection_name": "kb", "user_id": "u"}
        r = httpx.put(f"{server.url}/api/v1/ingest", files={"file": (name, data)}, data=form, headers=AUTH)
        assert r.status_code == 200, r.text


def service_settings(data_dir: Path, model_cache: Path, **server: object) -> Settings:
    return Settings(
        data_dir=data_dir,
        embedding=EmbeddingSettings(cache_dir=model_cache),
        extract=ExtractSettings(max_file_bytes=4096),
        server=ServerSettings(api_key=KEY, **server),  # type: ignore[arg-type]
    )


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[LiveServer]:
    settings = service_settings(tmp_path_factory.mktemp("ragd"), model_cache, inspection_enabled=True)
    with LiveServer(create_app(settings)) as server:
        server.wait_ready()
        yield server
