"""``PUT /api/v1/ingest`` by S3 reference, against a real S3 server on loopback (moto) — I-20, I-21."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ragd.api.app import create_app
from tests.api.conftest import ALPHA, AUTH, service_settings
from tests.support.live_server import LiveServer
from tests.support.s3_server import S3Server, s3_server

__all__ = ["s3_server"]


@pytest.fixture(scope="module")
def bucket(s3_server: S3Server) -> str:
    return s3_server.bucket({"F1_alpha.md": ALPHA, "big.txt": b"x" * 5000})


@pytest.fixture(scope="module")
def live(
    tmp_path_factory: pytest.TempPathFactory, model_cache: Path, s3_server: S3Server, bucket: str
) -> Iterator[LiveServer]:
    settings = service_settings(tmp_path_factory.mktemp("ragd"), model_cache)
    settings = settings.model_copy(update={"s3": s3_server.settings(allowed_buckets=(bucket,))})
    with LiveServer(create_app(settings)) as server:
        server.wait_ready()
        yield server


def reads(s3: S3Server, bucket: str, key: str = "") -> list[str]:
    """HEAD/GET requests ragd made for ``bucket`` (the test's own PUTs are left out)."""
    return [q.method for q in s3.requests_for(bucket) if q.method in ("HEAD", "GET") and key in q.path]


def ingest(live: LiveServer, bucket: str, key: str, file_id: str = "F1") -> httpx.Response:
    body = {
        "s3_bucket": bucket,
        "s3_key": key,
        "file_id": file_id,
        "filename": "alpha.md",
        "collection_name": f"file-{file_id}",
        "collection_type": "file",
        "user_id": "u-1",
        "overwrite": True,
    }
    return httpx.put(f"{live.url}/api/v1/ingest", json=body, headers=AUTH, timeout=60)


def test_ingest_by_reference_then_search(live: LiveServer, s3_server: S3Server, bucket: str) -> None:
    r = ingest(live, bucket, "F1_alpha.md")
    assert r.status_code == 200, r.text
    assert r.json() == {"status": True, "collection_name": "file-F1", "chunks_count": 1}
    assert reads(s3_server, bucket, "F1_alpha") == ["HEAD", "GET"]
    found = httpx.post(
        f"{live.url}/search",
        json={"queries": ["alpha approvals"], "collection_names": ["file-F1"]},
        headers=AUTH,
    ).json()
    assert found["metadatas"][0][0]["filename"] == "alpha.md"
    assert found["metadatas"][0][0]["user_id"] == "u-1"


def test_missing_key_is_s3_fetch_failed_without_hostnames(
    live: LiveServer, s3_server: S3Server, bucket: str
) -> None:
    r = ingest(live, bucket, "nope.md", file_id="F9")
    detail = r.json()["detail"]
    assert (r.status_code, detail["code"], detail["status"]) == (500, "S3_FETCH_FAILED", False)
    text = r.text
    assert "127.0.0.1" not in text
    assert str(s3_server.port) not in text
    assert "testing" not in text


def test_bucket_outside_the_allow_list_is_403_before_any_fetch(live: LiveServer, s3_server: S3Server) -> None:
    other = s3_server.bucket({"F1_alpha.md": ALPHA})
    r = ingest(live, other, "F1_alpha.md")
    assert (r.status_code, r.json()["detail"]["code"]) == (403, "INVALID_REQUEST")
    assert "RAGD_S3__ALLOWED_BUCKETS" in r.json()["detail"]["hint"]  # the setting that exists
    assert reads(s3_server, other) == []


def test_oversize_object_is_refused_from_head(live: LiveServer, s3_server: S3Server, bucket: str) -> None:
    r = ingest(live, bucket, "big.txt", file_id="F2")
    assert (r.status_code, r.json()["detail"]["code"]) == (413, "INVALID_REQUEST")
    assert reads(s3_server, bucket, "big.txt") == ["HEAD"]


def test_binding_is_checked_before_s3(live: LiveServer, s3_server: S3Server, bucket: str) -> None:
    before = len(reads(s3_server, bucket))
    body = {
        "s3_bucket": bucket,
        "s3_key": "F1_alpha.md",
        "file_id": "attacker",
        "filename": "a.md",
        "collection_name": "file-victim",
        "user_id": "u",
    }
    r = httpx.put(f"{live.url}/api/v1/ingest", json=body, headers=AUTH)
    assert r.status_code == 403
    assert len(reads(s3_server, bucket)) == before
