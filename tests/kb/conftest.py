"""A live ragd service with its job worker, on a SQLite and on a PostgreSQL catalog.

Tests speak HTTP to it (real uvicorn, embedded Qdrant, the real model) as the
knowledge-base API's clients would: the service key creates tenants and keys,
tenant keys do the rest.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragd.api.app import create_app
from ragd.kb.context import KbContext
from ragd.kb.worker import Worker
from ragd.kb_types import Job
from ragd.settings import (
    CatalogSettings,
    ChatSettings,
    CrawlSettings,
    EmbeddingSettings,
    ExtractSettings,
    LlmSettings,
    QueryGenerationSettings,
    ServerSettings,
    Settings,
    WorkerSettings,
)
from tests.support.live_server import LiveServer
from tests.support.postgres import PostgresServer

SERVICE_KEY = "kb-service-key-0123456789abcdef0123456789"


def kb_settings(data_dir: Path, model_cache: Path, catalog_url: str | None, **overrides: Any) -> Settings:
    return Settings(
        data_dir=data_dir,
        embedding=EmbeddingSettings(cache_dir=model_cache),
        extract=ExtractSettings(max_file_bytes=200_000),
        server=ServerSettings(api_key=SERVICE_KEY),  # type: ignore[arg-type]
        catalog=CatalogSettings(url=catalog_url, folder_roots=[data_dir.parent]),
        worker=WorkerSettings(poll_s=0.1, lease_s=5, backoff_s=0.2, debounce_ms=150),
        crawl=CrawlSettings(delay_s=0.0, allow_private=True),
        **overrides,
    )


def chat_kb_settings(data_dir: Path, model_cache: Path, upstream_url: str) -> Settings:
    """:func:`kb_settings` with the chat proxy answering through a scripted upstream at
    ``upstream_url`` (model ``up-model``; no query generation, no retries: each scripted reply
    answers one question)."""
    return kb_settings(
        data_dir,
        model_cache,
        None,
        llm=LlmSettings(base_url=f"{upstream_url}/v1", model="up-model"),  # type: ignore[call-arg]
        query_generation=QueryGenerationSettings(enabled=False),  # type: ignore[call-arg]
        chat=ChatSettings(retries=0, timeout_s=10),  # type: ignore[call-arg]
    )


class Api:
    """A small client of the knowledge-base API with one key."""

    def __init__(self, url: str, key: str) -> None:
        self.url, self.key = url, key
        self.http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60)

    def __getattr__(self, method: str) -> Any:
        return getattr(self.http, method)

    def ok(self, method: str, path: str, status: int = 200, **kwargs: Any) -> Any:
        r = self.http.request(method, path, **kwargs)
        assert r.status_code == status, f"{method} {path}: {r.status_code} {r.text}"
        return r.json()

    def wait_job(self, job_id: str, timeout_s: float = 120.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            job = self.ok("GET", f"/api/v1/jobs/{job_id}")
            if job["finished"]:
                return job  # type: ignore[no-any-return]
            time.sleep(0.1)
        raise AssertionError(f"job {job_id} did not finish: {job}")

    def search(self, query: str, dataset_id: str | None = None, k: int = 5) -> list[dict[str, Any]]:
        path = f"/api/v1/datasets/{dataset_id}/search" if dataset_id else "/api/v1/search"
        return self.ok("POST", path, json={"query": query, "k": k})["results"]  # type: ignore[no-any-return]

    def close(self) -> None:
        self.http.close()


def new_tenant(service: Api, name: str, *roles: str) -> tuple[str, dict[str, Api]]:
    """A tenant and one client per role."""
    tenant = service.ok("POST", "/api/v1/tenants", 201, json={"name": name})
    keys = {}
    for role in roles:
        made = service.ok("POST", f"/api/v1/tenants/{tenant['id']}/keys", 201, json={"role": role})
        keys[role] = Api(service.url, made["secret"])
    return tenant["id"], keys


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def kb_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, model_cache: Path
) -> Iterator[LiveServer]:
    url = None
    server_pg: PostgresServer | None = None
    if request.param == "postgres":
        server_pg = request.getfixturevalue("postgres_server")
        url = server_pg.create_database()
    data_dir = tmp_path_factory.mktemp("kb") / "data"
    settings = kb_settings(data_dir, model_cache, url)
    try:
        with LiveServer(create_app(settings)) as server:
            server.wait_ready()
            yield server
    finally:
        if server_pg is not None and url is not None:
            server_pg.drop_database(url)


@pytest.fixture(scope="module")
def service(kb_server: LiveServer) -> Iterator[Api]:
    api = Api(kb_server.url, SERVICE_KEY)
    yield api
    api.close()


async def run_to_end(kb: KbContext, job: Job) -> Job:
    """Run a queued job as a worker would (claim, run, finish) and return it finished."""
    worker = Worker(kb, WorkerSettings(concurrency=1, poll_s=0.05))
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    try:
        async with asyncio.timeout(120):
            while True:
                current = await kb.catalog.get_job(job.id)
                assert current is not None
                if current.status.finished:
                    return current
                await asyncio.sleep(0.05)
    finally:
        stop.set()
        await task
