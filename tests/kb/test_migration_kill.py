"""A server killed mid-migration (SIGKILL, a real process), on SQLite and PostgreSQL: after a
restart the dataset answers from its old version at once, the migration resumes and switches, and
the store then holds both versions whole — the new one served, every file's chunks exactly once,
the old one retained for a rollback."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragd.store.edge_store import EdgeStore
from ragd.types import PointFilter
from tests.kb.test_worker_kill import Server, serve_env

pytestmark = pytest.mark.slow

FILES = 24
SENTENCES = 36


def document(i: int) -> bytes:
    lines = [
        f"Depot {i} record {n} lists the spare parts of pump {i}-{n} and their supplier."
        for n in range(SENTENCES)
    ]
    return (f"# Depot {i}\n\n" + "\n".join(lines) + "\n").encode()


@pytest.fixture(params=["sqlite", "postgres"])
def env(request: pytest.FixtureRequest, tmp_path: Path, model_cache: Path) -> Iterator[dict[str, str]]:
    yield from serve_env(request, tmp_path, model_cache, RAGD_MIGRATIONS__SETTLE_S="0.2")


def wait(check: Any, what: str, timeout_s: float = 300) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_a_server_killed_mid_migration_serves_one_version_and_the_migration_resumes(
    env: dict[str, str], tmp_path: Path
) -> None:
    log = tmp_path / "serve.log"
    first = Server(env, log)
    try:
        tenant = first.http.post("/api/v1/tenants", json={"name": "t"}).json()
        ds = first.http.post("/api/v1/datasets", json={"name": "depots", "tenant_id": tenant["id"]}).json()
        parts = [("files", (f"d{i}.md", document(i))) for i in range(FILES)]
        sent = first.http.post(f"/api/v1/datasets/{ds['id']}/files", files=parts)
        assert sent.status_code == 202, sent.text
        job_id = sent.json()["job"]["id"]
        wait(lambda: first.http.get(f"/api/v1/jobs/{job_id}").json()["finished"], "ingest")
        old = {
            f["id"]: f["chunks"] for f in first.http.get(f"/api/v1/datasets/{ds['id']}/files").json()["files"]
        }
        path = f"/api/v1/datasets/{ds['id']}/migrations"
        started = first.http.post(path, json={"chunking": {"strategy": "token", "size": 48, "overlap": 0}})
        assert started.status_code == 202, started.text
        migration = started.json()

        def caught() -> dict[str, Any] | None:
            job = first.http.get(f"/api/v1/jobs/{migration['job_id']}").json()
            assert job["done"] < FILES, "the migration finished before it could be interrupted"
            return job if job["done"] >= 2 else None

        interrupted = wait(caught, "the migration's first files", 120)["done"]
    finally:
        first.kill()

    second = Server(env, log)
    try:
        # at once, before the lapsed job is claimed again: the old version answers, whole
        answer = second.http.post(
            f"/api/v1/datasets/{ds['id']}/search", json={"query": "spare parts of pump 7-3"}
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["results"]
        assert second.http.get(f"{path}/{migration['id']}").json()["state"] == "building"
        done = wait(
            lambda: (m := second.http.get(f"{path}/{migration['id']}").json())["state"] != "building" and m,
            "the resumed migration",
        )
        job = second.http.get(f"/api/v1/jobs/{migration['job_id']}").json()
        files = {
            f["id"]: f["chunks"]
            for f in second.http.get(f"/api/v1/datasets/{ds['id']}/files").json()["files"]
        }
        answer = second.http.post(
            f"/api/v1/datasets/{ds['id']}/search", json={"query": "spare parts of pump 7-3"}
        )
    finally:
        second.stop()
    assert done["state"] == "switched", done
    assert job["attempts"] == 2
    assert (job["total"], job["done"], job["failed"]) == (FILES, FILES, 0)
    assert 2 <= interrupted < FILES
    assert answer.json()["results"]
    tag = done["target"]["generation"]

    async def versions() -> dict[str, dict[str, list[int]]]:
        from ragd.store.manifest_io import read_manifest_file

        store = EdgeStore(Path(env["RAGD_DATA_DIR"]))
        manifest = read_manifest_file(store.root / "ragd-manifest.json")
        assert manifest is not None
        await store.open(manifest)
        try:
            flt = PointFilter(collection_names=(ds["collection_name"],))
            out: dict[str, dict[str, list[int]]] = {}
            offset = None
            while True:
                page, offset = await store.scroll(flt, limit=1000, offset=offset)
                for chunk in page:
                    by_file = out.setdefault(str(chunk.meta.get("generation") or ""), {})
                    by_file.setdefault(str(chunk.meta["file_id"]), []).append(int(chunk.meta["split_id"]))
                if offset is None:
                    return out
        finally:
            await store.close()

    stored = asyncio.run(versions())
    assert set(stored) == {"", tag}  # the new version, and the old one retained
    for generation, expected in (("", old), (tag, files)):
        assert {f: len(s) for f, s in stored[generation].items()} == expected, generation
        for file_id, splits in stored[generation].items():
            assert sorted(splits) == list(range(expected[file_id])), (
                generation,
                file_id,
            )  # no duplicate, no gap
    assert sum(files.values()) > sum(old.values())  # 48-token chunks: more of them
