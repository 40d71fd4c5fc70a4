"""Health endpoints: HEAD answers, a failed start-up is not "ok", readiness covers the catalog."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx

from ragd.api.app import create_app
from ragd.bootstrap import Services
from ragd.errors import StoreLocked
from ragd.observe.metrics import Metrics
from ragd.settings import Settings
from tests.api.conftest import service_settings
from tests.support.live_server import LiveServer


@asynccontextmanager
async def failing(settings: Settings, metrics: Metrics) -> AsyncIterator[Services]:
    raise StoreLocked("Qdrant Edge open: the shard is in use by another process")
    yield  # pragma: no cover


def test_a_failed_start_up_makes_health_503(tmp_path: Path, model_cache: Path) -> None:
    with LiveServer(create_app(service_settings(tmp_path, model_cache), factory=failing)) as server:
        for _ in range(100):
            if server.app.state.ragd.startup_error is not None:
                break
            httpx.get(f"{server.url}/health")
        assert httpx.get(f"{server.url}/health").status_code == 503
        assert httpx.head(f"{server.url}/health").status_code == 503
        assert httpx.get(f"{server.url}/health/ready").status_code == 503


def test_head_health_and_readiness_with_the_catalog(tmp_path: Path, model_cache: Path) -> None:
    with LiveServer(create_app(service_settings(tmp_path, model_cache))) as server:
        server.wait_ready()
        assert httpx.head(f"{server.url}/health").status_code == 200
        assert httpx.get(f"{server.url}/health/ready").json() == {"status": "ok"}
        services = server.app.state.ragd.services
        assert services.kb is not None, "the service opens its catalog"

        async def broken(dataset_id: str) -> None:
            raise OSError("database is gone")

        services.kb.catalog.get_dataset = broken  # the database goes away under a running service
        ready = httpx.get(f"{server.url}/health/ready")
        assert (ready.status_code, ready.json()["detail"]) == (503, "catalog unreachable")
