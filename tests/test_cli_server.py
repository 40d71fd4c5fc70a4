"""The CLI while a server holds the index: search, stats and ingest go through the server's API
(the same output as local), any other command names the server, and without a live server record
the lock decides as before (STORE_LOCKED)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from ragd.cli.app import app
from ragd.cli.remote import _check
from ragd.cli.server_record import (
    RECORD_FILE,
    read_record,
    remove_record,
    server_url,
    write_record,
)
from ragd.errors import EmptyDocument, InvalidRequest, RagError, Unauthorized
from ragd.store.dir_lock import DirLock
from tests.support.processes import free_port, ragd, wait_ready

KEY = "cli-server-key-0123456789abcdef0123456789"


@pytest.fixture
def data_dir(tmp_path: Path, model_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The CLI's (and the server's) settings: only these RAGD_ variables."""
    for name in [k for k in os.environ if k.startswith("RAGD_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("RAGD_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("RAGD_EMBEDDING__CACHE_DIR", str(model_cache))
    monkeypatch.setenv("RAGD_SERVER__API_KEY", KEY)
    return tmp_path / "data"


def serve(tmp_path: Path) -> tuple[subprocess.Popen[str], str]:
    """A real ``ragd serve`` on a free loopback port over the data dir, ready; it and its URL."""
    port = free_port()
    log_path = tmp_path / "serve.log"
    with log_path.open("w") as log:
        proc = ragd(["serve", "--port", str(port)], dict(os.environ), stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(proc, url, output=log_path.read_text)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc, url


def notes(root: Path) -> Path:
    folder = root / "notes"
    folder.mkdir()
    (folder / "review.md").write_text("# Review\n\nThe quarterly review happens in the glass room.\n")
    (folder / "roadmap.md").write_text("# Roadmap\n\nThe lantern committee decides the roadmap.\n")
    (folder / "empty.txt").write_bytes(b"")
    return folder


@pytest.mark.slow
def test_search_stats_and_ingest_go_through_the_server(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proc, server = serve(tmp_path)
    try:
        found = _through(data_dir, server, tmp_path, monkeypatch)
    finally:
        proc.send_signal(signal.SIGTERM)  # a clean stop removes the record
        proc.wait(timeout=60)
    assert not (data_dir / RECORD_FILE).exists()
    monkeypatch.setenv("RAGD_SERVER__API_KEY", KEY)
    local = CliRunner().invoke(app, ["search", "where is the review?", "-c", "kb", "--json"])
    assert local.exit_code == 0, local.output
    assert "using the server" not in local.stderr
    assert json.loads(local.stdout) == found  # the same output as through the server


def _through(data_dir: Path, server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    """The commands through the server at ``server``; what ``search --json`` printed."""
    cli = CliRunner()
    record = read_record(data_dir)
    assert record is not None
    assert record.url == server
    notes(tmp_path)
    monkeypatch.chdir(tmp_path)  # sources are named as given: notes/review.md

    ingested = cli.invoke(app, ["ingest", "notes", "-c", "kb"])
    assert ingested.exit_code == 1, ingested.output  # the empty file failed
    assert f"using the server at {server}" in ingested.stderr
    assert "2 indexed (2 chunks), 0 unchanged" in ingested.stdout
    assert "EMPTY_DOCUMENT" in ingested.stdout  # the failure table, with ragd's own code
    assert "notes/empty.txt" in ingested.stdout
    again = cli.invoke(app, ["ingest", "notes/review.md", "-c", "kb"])
    assert again.exit_code == 0, again.output
    assert "0 indexed (0 chunks), 1 unchanged" in again.stdout
    forced = cli.invoke(app, ["ingest", "notes/review.md", "-c", "kb", "--force"])
    assert "1 indexed (1 chunks), 0 unchanged" in forced.stdout, forced.output

    found = cli.invoke(app, ["search", "where is the review?", "-c", "kb", "--json"])
    assert found.exit_code == 0, found.output
    assert f"using the server at {server}" in found.stderr
    hits = json.loads(found.stdout)  # stdout stays JSON: the notice is on stderr
    auth = {"Authorization": f"Bearer {KEY}"}
    body = {"query": "where is the review?", "collection_names": ["kb"], "explain": True}
    api = httpx.post(f"{server}/api/v1/search", json=body, headers=auth, timeout=60).json()["results"]
    assert [h["id"] for h in hits] == [r["id"] for r in api]
    assert [h["content"] for h in hits] == [r["content"] for r in api]
    assert [h["score"] for h in hits] == [r["score"] for r in api]
    assert [h["meta"] for h in hits] == [r["meta"] for r in api]
    assert hits[0]["meta"]["source"] == "notes/review.md"
    shown = cli.invoke(app, ["search", "where is the review?", "-c", "kb", "--explain"])
    assert "notes/review.md" in shown.stdout
    assert "glass room" in shown.stdout

    stats = cli.invoke(app, ["stats"])
    assert stats.exit_code == 0, stats.output
    served = httpx.get(f"{server}/api/v1/stats", headers=auth).json()
    assert served["collections"] == [{"name": "kb", "files": 2, "chunks": 2}]
    assert re.search(r"kb\s*│\s*2\s*│\s*2", stats.stdout), stats.stdout
    assert f"{served['chunks']} chunks in total" in stats.stdout
    assert served["manifest"]["dense_model"] in stats.stdout
    assert cli.invoke(app, ["tenants", "create", "acme"]).exit_code == 0
    tenant_key = cli.invoke(app, ["keys", "create", "-t", "acme", "-r", "admin"]).stdout.split()[-1]
    other = httpx.get(f"{server}/api/v1/stats", headers={"Authorization": f"Bearer {tenant_key}"})
    assert other.status_code == 403  # the whole index's figures are the service key's
    assert other.json()["detail"]["code"] == "FORBIDDEN"

    refused = cli.invoke(app, ["rm", "notes/review.md", "-c", "kb"])  # does not go through a server
    assert refused.exit_code == 2
    assert "STORE_LOCKED" in refused.stderr
    assert server in refused.stderr.replace("\n", "")

    monkeypatch.setenv("RAGD_SERVER__API_KEY", "not-the-servers-key-0123456789abcdef")
    wrong = cli.invoke(app, ["search", "review", "-c", "kb"])
    assert wrong.exit_code == 2
    assert "UNAUTHORIZED" in wrong.stderr
    return hits


def test_a_stale_record_is_ignored(data_dir: Path) -> None:
    """A record whose process is gone, or whose port is closed: the lock decides, as without one."""
    lock = DirLock(data_dir / "qdrant" / "ingestion_files")
    lock.acquire()
    try:
        for pid in (_dead_pid(), os.getpid()):  # gone; alive, but nothing listens on the port
            _record(data_dir, pid, f"http://127.0.0.1:{free_port()}")
            held = CliRunner().invoke(app, ["stats"])
            assert held.exit_code == 2, held.output
            assert "STORE_LOCKED" in held.stderr
            assert "using the server" not in held.stderr
    finally:
        lock.release()
    free = CliRunner().invoke(app, ["stats"])  # no lock: the stale record is no reason to fail
    assert free.exit_code == 0, free.output
    assert "chunks in total" in free.stdout


def test_a_locked_store_without_a_record_is_store_locked(data_dir: Path) -> None:
    lock = DirLock(data_dir / "qdrant" / "ingestion_files")
    lock.acquire()
    try:
        for args in (["search", "anything"], ["stats"]):
            result = CliRunner().invoke(app, args)
            assert result.exit_code == 2, result.output
            assert "STORE_LOCKED" in result.stderr
    finally:
        lock.release()


def test_a_probe_of_the_lock_neither_takes_nor_creates_it(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    assert not DirLock(folder).held_elsewhere()
    assert not folder.exists()
    holder = DirLock(folder)
    holder.acquire()
    assert DirLock(folder).held_elsewhere()
    assert not holder.held_elsewhere()  # its own holder
    holder.release()
    assert not DirLock(folder).held_elsewhere()
    DirLock(folder).acquire()  # the probe left nothing behind


def test_the_record_is_the_writers_to_remove(tmp_path: Path) -> None:
    write_record(tmp_path, "http://127.0.0.1:9")
    record = read_record(tmp_path)
    assert record is not None
    assert (record.pid, record.url, record.data_dir) == (os.getpid(), "http://127.0.0.1:9", str(tmp_path))
    _record(tmp_path, _dead_pid(), "http://127.0.0.1:9")  # a later server's record
    remove_record(tmp_path)
    assert read_record(tmp_path) is not None, "another process's record is left alone"
    write_record(tmp_path, "http://127.0.0.1:9")
    remove_record(tmp_path)
    assert not (tmp_path / RECORD_FILE).exists()
    (tmp_path / RECORD_FILE).write_text("{not json")
    assert read_record(tmp_path) is None


def test_a_wildcard_bind_is_reached_on_loopback() -> None:
    assert server_url("0.0.0.0", 8000) == "http://127.0.0.1:8000"
    assert server_url("::", 8000) == "http://[::1]:8000"
    assert server_url("127.0.0.1", 81) == "http://127.0.0.1:81"


@pytest.mark.parametrize(
    ("status", "body", "error", "code"),
    [
        (401, {"detail": "Invalid API key"}, Unauthorized, "UNAUTHORIZED"),
        (
            422,
            {
                "detail": {
                    "status": False,
                    "error": "empty",
                    "code": "EXTRACTION_FAILED",
                    "reason": "EMPTY_DOCUMENT",
                }
            },
            EmptyDocument,
            "EMPTY_DOCUMENT",
        ),
        (
            409,
            {"detail": {"status": False, "error": "x", "code": "SOMETHING_NEW"}},
            RagError,
            "SOMETHING_NEW",
        ),
        (422, {"detail": [{"loc": ["body", "k"], "msg": "too big"}]}, InvalidRequest, "INVALID_REQUEST"),
        (502, {"oops": 1}, RagError, "PIPELINE_FAILED"),
    ],
)
def test_a_server_error_comes_back_with_its_code(
    status: int, body: dict[str, object], error: type[RagError], code: str
) -> None:
    response = httpx.Response(status, json=body, request=httpx.Request("GET", "http://x/api/v1/stats"))
    with pytest.raises(error) as raised:
        _check(response, "http://x")
    assert raised.value.code == code


def _record(data_dir: Path, pid: int, url: str) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / RECORD_FILE).write_text(json.dumps({"pid": pid, "url": url, "data_dir": str(data_dir)}))


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid
