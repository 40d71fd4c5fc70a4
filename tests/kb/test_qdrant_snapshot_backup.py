"""A Qdrant server's index is backed up with its snapshot API and restored by uploading it.

No Qdrant server runs here: a scripted server on loopback speaks the REST shapes of the endpoints
used (qdrant-client 1.20's OpenAPI models: ``InlineResponse20015`` with a ``SnapshotDescription``
for a new snapshot, ``InlineResponse20013`` ``{"result": true}`` for delete and upload, the error
body ``{"status": {"error": ...}}``, the multipart field ``snapshot`` of the upload).  The snapshot
file itself is opaque to ragd, so its bytes are arbitrary here.  What the server would hold after a
recovery is played by qdrant-client's local mode (the collection the settle step then reads).
"""

from __future__ import annotations

import ast
import asyncio
import hashlib
import inspect
import json
import socket
import uuid
from email.parser import BytesParser
from email.policy import HTTP
from pathlib import Path
from urllib.parse import parse_qs

import numpy as np
import pytest

from ragd.api.app import create_app
from ragd.bootstrap.backups import restore_into
from ragd.errors import BackupInvalid, Conflict, StoreError, StoreUnavailable
from ragd.kb import backup_format as fmt
from ragd.kb import dataset_export
from ragd.kb.backup import take_backup
from ragd.kb.restore import NOT_IN_BACKUP, recover_snapshot
from ragd.kb_types import FileEntry, FileStatus
from ragd.settings import Settings, StoreSettings
from ragd.store.qdrant_snapshots import QdrantSnapshots
from ragd.store.qdrant_store import QdrantStore
from ragd.types import PointFilter, StoredChunk
from tests.kb.conftest import SERVICE_KEY, Api, kb_settings, new_tenant
from tests.store.data import DIM, manifest, random_sparse, unit
from tests.support import qdrant_server
from tests.support.live_server import LiveServer
from tests.support.scripted_http import RecordedRequest, Reply, ScriptedServer

COLLECTION = "ragd chunks"  # a space: the path must quote it
BASE = "/collections/ragd%20chunks/snapshots"
NAME = "ragd chunks-8641238470-2026-11-28-03-30-00.snapshot"
SNAPSHOT_PATH = f"{BASE}/ragd%20chunks-8641238470-2026-11-28-03-30-00.snapshot"
KEY = "qdrant-key-0123456789"
BLOB = b"QDRANT-SNAPSHOT\x00" + bytes(range(256)) * 300


def described(blob: bytes, *, checksum: str | None = None, size: int | None = None) -> Reply:
    return Reply.json(
        {
            "result": {
                "name": NAME,
                "creation_time": "2026-11-28T03:30:00",
                "size": len(blob) if size is None else size,
                "checksum": checksum or hashlib.sha256(blob).hexdigest(),
            },
            "status": "ok",
            "time": 0.012,
        }
    )


OK = Reply.json({"result": True, "status": "ok", "time": 0.001})


def snapshots(server: ScriptedServer) -> QdrantSnapshots:
    return QdrantSnapshots(url=server.url, collection=COLLECTION, api_key=KEY, timeout_s=5)


def script_take(server: ScriptedServer, blob: bytes = BLOB, **description: object) -> None:
    server.expect("POST", BASE, described(blob, **description))  # type: ignore[arg-type]
    server.expect("GET", SNAPSHOT_PATH, Reply(200, blob, {"Content-Type": "application/octet-stream"}))
    server.expect("DELETE", SNAPSHOT_PATH, OK)


async def test_take_downloads_the_snapshot_checks_it_and_deletes_the_servers_copy(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    script_take(scripted_server)
    got = await snapshots(scripted_server).take(tmp_path / "index.snapshot")
    assert (tmp_path / "index.snapshot").read_bytes() == BLOB
    assert (got.bytes, got.sha256) == (len(BLOB), hashlib.sha256(BLOB).hexdigest())
    calls = scripted_server.requests
    assert [(r.method, r.path) for r in calls] == [
        ("POST", BASE),
        ("GET", SNAPSHOT_PATH),
        ("DELETE", SNAPSHOT_PATH),
    ]
    assert all(r.header("api-key") == KEY for r in calls)
    assert parse_qs(calls[0].query) == {"wait": ["true"]}
    assert parse_qs(calls[2].query) == {"wait": ["true"]}
    scripted_server.verify()


@pytest.mark.parametrize("lie", ["checksum", "size"])
async def test_a_download_that_does_not_match_the_servers_description_is_refused(
    tmp_path: Path, scripted_server: ScriptedServer, lie: str
) -> None:
    wrong = {"checksum": "0" * 64} if lie == "checksum" else {"size": len(BLOB) + 1}
    script_take(scripted_server, **wrong)
    with pytest.raises(StoreError, match=lie if lie == "checksum" else "bytes after download"):
        await snapshots(scripted_server).take(tmp_path / "index.snapshot")
    scripted_server.verify()  # the server's copy was deleted all the same


async def test_the_servers_refusal_and_silence_are_store_errors(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    refusal = {"status": {"error": "Not found: Collection `ragd chunks` doesn't exist!"}, "time": 0.0}
    scripted_server.expect("POST", BASE, Reply.json(refusal, status=404))
    with pytest.raises(StoreError, match="doesn't exist") as refused:
        await snapshots(scripted_server).take(tmp_path / "a.snapshot")
    assert refused.value.code == "QDRANT_WRITE_FAILED"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens on it once closed
    silent = QdrantSnapshots(url=f"http://127.0.0.1:{port}", collection=COLLECTION, timeout_s=2)
    with pytest.raises(StoreUnavailable):
        await silent.take(tmp_path / "b.snapshot")
    with pytest.raises(StoreUnavailable):
        await silent.recover(Path(__file__), "0" * 64)


def multipart_file(request: RecordedRequest, field: str) -> tuple[str | None, bytes]:
    head = f"Content-Type: {request.header('content-type')}\r\n\r\n".encode()
    message = BytesParser(policy=HTTP).parsebytes(head + request.body)
    for part in message.iter_parts():
        if part.get_param("name", header="content-disposition") == field:
            return part.get_filename(), part.get_payload(decode=True)
    raise AssertionError(f"no multipart field {field!r}")


async def test_recover_uploads_the_file_with_its_checksum_and_a_refusal_is_an_error(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    path = tmp_path / "index.snapshot"
    path.write_bytes(BLOB)
    sha = hashlib.sha256(BLOB).hexdigest()
    upload = f"{BASE}/upload"
    bad = {"status": {"error": "Bad request: Snapshot checksum mismatch"}, "time": 0.0}
    scripted_server.expect("POST", upload, OK, Reply.json(bad, status=400))
    await snapshots(scripted_server).recover(path, sha)
    (request,) = scripted_server.requests
    assert request.header("api-key") == KEY
    assert parse_qs(request.query) == {"wait": ["true"], "priority": ["snapshot"], "checksum": [sha]}
    assert multipart_file(request, "snapshot") == ("index.snapshot", BLOB)
    with pytest.raises(StoreError, match="checksum mismatch"):
        await snapshots(scripted_server).recover(path, sha)
    scripted_server.verify()


def test_only_a_qdrant_server_store_has_the_snapshot_port() -> None:
    assert QdrantSnapshots.from_settings(StoreSettings()) is None  # embedded Qdrant Edge: scrolled
    assert QdrantSnapshots.from_settings(StoreSettings(backend="qdrant", url=":memory:")) is None
    assert isinstance(
        QdrantSnapshots.from_settings(StoreSettings(backend="qdrant", url="http://qdrant:6333")),
        QdrantSnapshots,
    )


def point(file_id: str, split: int, count: int, version: str, rng: np.random.Generator) -> StoredChunk:
    meta = {
        "collection_name": "ds-col",
        "file_id": file_id,
        "split_id": split,
        "chunk_count": count,
        "ingest_version": version,
        "file_hash": f"h-{version}",
    }
    return StoredChunk(
        id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"{file_id}/{version}/{split}")),
        content=f"{file_id} part {split}",
        meta=meta,
        dense=unit(rng.normal(size=DIM)),
        sparse=random_sparse(rng),
    )


def entry(file_id: str, chunks: int) -> FileEntry:
    return FileEntry(id=file_id, dataset_id="d", name=file_id, status=FileStatus.INDEXED, chunks=chunks)


async def test_a_backup_holds_the_servers_snapshot_and_restore_settles_what_it_recovers(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    rng = np.random.default_rng(3)
    source = QdrantStore(url=":memory:")
    await source.open(manifest())
    await source.upsert([point("a", i, 2, "v1", rng) for i in range(2)])
    script_take(scripted_server)
    dest = tmp_path / "backup"
    report = await take_backup(
        dest,
        store=source,
        index_manifest={"m": 1},
        copy_catalog=lambda path: path.write_bytes(b"catalog"),
        files_dir=tmp_path / "no-uploads",
        snapshots=snapshots(scripted_server),
    )
    await source.close()
    assert report.points == 2
    assert not (dest / fmt.INDEX).exists()  # nothing scrolled
    written = json.loads((dest / fmt.MANIFEST).read_text())
    assert written["index"] == fmt.QDRANT_SNAPSHOT
    info = fmt.verify_backup(dest)
    assert info.index_part == fmt.SNAPSHOT
    (part,) = [p for p in info.parts if p.path == fmt.SNAPSHOT]
    assert part.sha256 == hashlib.sha256(BLOB).hexdigest()

    # the server recovers the snapshot: its collection then holds what the backup caught, here file
    # a whole and file b half-written (1 of its 2 chunks), and a point of a file the catalog lacks
    target = QdrantStore(url=":memory:")
    await target.open(manifest())
    recovered = [point("a", i, 2, "v1", rng) for i in range(2)] + [point("b", 0, 2, "v1", rng)]
    await target.upsert([*recovered, point("gone", 0, 1, "v1", rng)])
    scripted_server.expect("POST", f"{BASE}/upload", OK)
    files = {"a": entry("a", 2), "b": entry("b", 2)}
    kept, plan = await recover_snapshot(
        target, snapshots(scripted_server), dest / fmt.SNAPSHOT, part.sha256, files, frozenset({"ds-col"})
    )
    assert kept == 2
    left, _ = await target.scroll(PointFilter(), limit=100)
    assert sorted(c.meta["file_id"] for c in left) == ["a", "a"]
    (fixed,) = plan.fixes
    assert (fixed.id, fixed.status, fixed.error_code) == ("b", FileStatus.FAILED, NOT_IN_BACKUP)
    await target.close()
    upload = scripted_server.requests_to("POST", f"{BASE}/upload")[0]
    assert multipart_file(upload, "snapshot")[1] == BLOB
    scripted_server.verify()

    (dest / fmt.SNAPSHOT).write_bytes(BLOB[:-1] + b"!")  # one byte changed
    with pytest.raises(BackupInvalid, match="SHA-256"):
        fmt.verify_backup(dest)


async def test_a_snapshot_backup_is_not_restored_without_a_qdrant_server(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    script_take(scripted_server)
    source = QdrantStore(url=":memory:")
    await source.open(manifest())
    dest = tmp_path / "backup"
    await take_backup(
        dest,
        store=source,
        index_manifest={"m": 1},
        copy_catalog=lambda path: path.write_bytes(b"catalog"),
        files_dir=tmp_path / "no-uploads",
        snapshots=snapshots(scripted_server),
    )
    await source.close()
    settings = Settings(data_dir=tmp_path / "data")  # the embedded engine
    with pytest.raises(Conflict, match="Qdrant server's snapshot"):
        await restore_into(settings, dest)
    assert not (tmp_path / "data" / "catalog.db").exists()  # nothing written


def test_a_dataset_export_never_uses_the_snapshot_port() -> None:
    """A snapshot holds every tenant's points: an export reads only its dataset's, by scrolling."""
    tree = ast.parse(inspect.getsource(dataset_export))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {"ragd.store.snapshots", "ragd.store.qdrant_snapshots"} & imported
    assert not any("snapshot" in name for name in inspect.signature(dataset_export.export_dataset).parameters)


@pytest.mark.slow  # a live service and a model; runs only on a real Qdrant server
def test_a_live_service_on_a_real_qdrant_server_backs_up_by_snapshot_and_restores_the_same_hits(
    tmp_path: Path, model_cache: Path
) -> None:
    """The gated suite (docs/deployment.md#before-an-upgrade): skipped unless RAGD_TEST_QDRANT_URL
    names a server, where the whole round trip runs through the composed services."""
    url, key = qdrant_server.server()
    names = qdrant_server.collection_name(), qdrant_server.collection_name()
    admin: Api | None = None
    try:
        source = kb_settings(
            tmp_path / "a",
            model_cache,
            None,
            store=StoreSettings(backend="qdrant", url=url, api_key=key, collection=names[0]),
        )
        with LiveServer(create_app(source)) as server:
            server.wait_ready()
            service = Api(server.url, SERVICE_KEY)
            _, keys = new_tenant(service, "harbour", "admin")
            admin = keys["admin"]
            try:
                ds = admin.ok("POST", "/api/v1/datasets", 201, json={"name": "lights"})
                doc = b"# Lighthouses\n\nA lighthouse keeper trims the lamp wick at dusk.\n"
                sent = admin.ok(
                    "POST", f"/api/v1/datasets/{ds['id']}/files", 202, files=[("files", ("l.md", doc))]
                )
                assert admin.wait_job(sent["job"]["id"])["status"] == "succeeded"
                before = admin.search("who trims the lamp wick", ds["id"])
                assert before
                answer = service.post("/api/v1/system/backup", json={"name": "snap"})
                assert answer.status_code == 201, answer.text
            finally:
                service.close()
        path = Path(answer.json()["path"])
        assert fmt.verify_backup(path).index == fmt.QDRANT_SNAPSHOT
        target = kb_settings(
            tmp_path / "b",
            model_cache,
            None,
            store=StoreSettings(backend="qdrant", url=url, api_key=key, collection=names[1]),
        )
        report = asyncio.run(restore_into(target, path))
        assert report.points > 0
        assert report.files_to_reindex == ()
        with LiveServer(create_app(target)) as again:
            again.wait_ready()
            other = Api(again.url, admin.key)
            try:
                assert [h["id"] for h in other.search("who trims the lamp wick", ds["id"])] == [
                    h["id"] for h in before
                ]
            finally:
                other.close()
    finally:
        if admin is not None:
            admin.close()
        for name in names:
            qdrant_server.drop(url, key, name)
