"""Two replicas (two job workers, each with its own connection pool) share one PostgreSQL job
queue: every job runs exactly once, every file is indexed exactly once.  On the embedded index, and
on a Qdrant server when ``RAGD_TEST_QDRANT_URL`` names one (the gated suite, issue 34 §3;
docs/deployment.md#before-an-upgrade)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragd.bootstrap import open_services
from ragd.catalog.sql import open_catalog
from ragd.kb.files import Upload, upload_files
from ragd.kb.worker import Worker
from ragd.kb_types import Principal
from ragd.settings import CatalogSettings, EmbeddingSettings, Settings, StoreSettings, WorkerSettings
from tests.support import qdrant_server

JOBS = 10
SERVICE = Principal(tenant_id=None, role="admin")


class CountingIngestor:
    """The real ingestor, recording which replica indexed which file."""

    def __init__(self, inner: Any, replica: str, seen: list[tuple[str, str]]) -> None:
        self._inner, self._replica, self._seen = inner, replica, seen

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def ingest(self, blob: Any, ref: Any, **kwargs: Any) -> Any:
        self._seen.append((self._replica, ref.file_id))
        await asyncio.sleep(0.05)  # long enough for the other replica to try to claim the same job
        return await self._inner.ingest(blob, ref, **kwargs)


@pytest.fixture(params=["embedded", "qdrant-server"])
def store_settings(request: pytest.FixtureRequest) -> Iterator[StoreSettings]:
    if request.param == "embedded":
        yield StoreSettings()
        return
    url, key = qdrant_server.server()  # skipped unless RAGD_TEST_QDRANT_URL names a server
    name = qdrant_server.collection_name()
    yield StoreSettings(backend="qdrant", url=url, api_key=key, collection=name)
    qdrant_server.drop(url, key, name)


async def test_replicas_never_run_a_job_twice(
    postgres_url: str, tmp_path: Path, model_cache: Path, store_settings: StoreSettings
) -> None:
    settings = Settings(
        data_dir=tmp_path / "data",
        embedding=EmbeddingSettings(cache_dir=model_cache),
        catalog=CatalogSettings(url=postgres_url),
        store=store_settings,
    )
    seen: list[tuple[str, str]] = []
    async with open_services(settings) as services:
        kb = services.knowledge()
        tenant = await kb.catalog.create_tenant("t")
        from ragd.kb.datasets import create_dataset

        ds = await create_dataset(kb, SERVICE, name="shared", tenant_id=tenant.id)
        jobs, files = [], []
        for j in range(JOBS):
            uploads = []
            for f in range(2):
                path = tmp_path / f"j{j}f{f}.md"
                path.write_text(f"# Job {j} file {f}\nReplica test document {j}.{f}.\n")
                uploads.append(Upload(path.name, path, path.stat().st_size))
            entries, job = await upload_files(kb, SERVICE, ds.id, uploads)
            jobs.append(job.id)
            files += [e.id for e in entries]
        second = await open_catalog(postgres_url)
        try:
            replicas = [
                dataclasses.replace(kb, ingestor=CountingIngestor(kb.ingestor, "a", seen)),  # type: ignore[arg-type]
                dataclasses.replace(kb, catalog=second, ingestor=CountingIngestor(kb.ingestor, "b", seen)),  # type: ignore[arg-type]
            ]
            stop = asyncio.Event()
            workers = [
                Worker(r, WorkerSettings(concurrency=2, poll_s=0.05, lease_s=30), worker_id=n)
                for r, n in zip(replicas, "ab", strict=True)
            ]
            running = [asyncio.create_task(w.run(stop)) for w in workers]
            async with asyncio.timeout(180):
                while True:
                    states = [await kb.catalog.get_job(j) for j in jobs]
                    if all(s is not None and s.status.finished for s in states):
                        break
                    await asyncio.sleep(0.1)
            stop.set()
            await asyncio.gather(*running)
        finally:
            await second.aclose()
    assert all(s is not None and s.status.value == "succeeded" and s.attempts == 1 for s in states)
    per_file = Counter(file_id for _, file_id in seen)
    assert set(per_file) == set(files)
    assert set(per_file.values()) == {1}  # no file indexed twice
    assert {replica for replica, _ in seen} == {"a", "b"}  # both replicas took work
