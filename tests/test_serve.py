"""``ragd serve`` as a user runs it: a real process, real HTTP, a clean shutdown."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.support.processes import free_port, ragd, wait_ready

KEY = "serve-test-key-0123456789abcdef0123456789"


@pytest.fixture
def env(tmp_path: Path, model_cache: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RAGD_")}
    return {**clean, "RAGD_DATA_DIR": str(tmp_path / "data"), "RAGD_EMBEDDING__CACHE_DIR": str(model_cache)}


def test_refuses_a_public_address_without_a_key(env: dict[str, str]) -> None:
    proc = ragd(["serve", "--host", "0.0.0.0"], env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert "without an API key" in err
    assert "RAGD_SERVER__API_KEY" in err


def test_refuses_a_short_key(env: dict[str, str]) -> None:
    proc = ragd(
        ["serve"], {**env, "RAGD_SERVER__API_KEY": "short"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert "RAGD_SERVER__API_KEY" in err
    assert "32 characters" in err


@pytest.mark.slow
def test_serves_ingests_searches_and_stops_cleanly(env: dict[str, str], tmp_path: Path) -> None:
    port = free_port()
    log_path = tmp_path / "serve.log"
    with log_path.open("w") as log:
        proc = ragd(
            ["serve", "--port", str(port)],
            {**env, "RAGD_SERVER__API_KEY": KEY, "RAGD_LOG__FORMAT": "json"},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url, auth = f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {KEY}"}
    try:
        wait_ready(proc, url, output=log_path.read_text)
        files = {"file": ("notes.md", b"# Notes\nThe quarterly review happens in the glass room.\n")}
        form = {"file_id": "n1", "filename": "notes.md", "collection_name": "kb", "user_id": "u"}
        r = httpx.put(f"{url}/api/v1/ingest", files=files, data=form, headers=auth, timeout=60)
        assert r.json()["chunks_count"] == 1
        r = httpx.post(
            f"{url}/search",
            json={"queries": ["where is the review?"], "collection_names": ["kb"]},
            headers=auth,
            timeout=60,
        )
        assert "glass room" in r.json()["documents"][0][0]
        # a CLI finds this server by its record and goes through it (tests/test_cli_server.py); one
        # that cannot (the record gone: an older ragd holds the index) must fail clearly, and leave
        # the server's index alone
        record = tmp_path / "data" / "ragd.server.json"
        assert json.loads(record.read_text())["url"] == url
        record.unlink()
        note = tmp_path / "cli.md"
        note.write_text("# CLI\nWritten by the command line while the server runs.\n")
        for args in (["search", "review", "-c", "kb"], ["ingest", str(note), "-c", "kb"]):
            cli = ragd(args, env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            out, err = cli.communicate(timeout=120)
            assert cli.returncode == 2, (args, out, err)
            assert "STORE_LOCKED" in err, err
            assert "ragd serve" in err, err  # the hint says what to do
        r = httpx.post(
            f"{url}/search",
            json={"queries": ["where is the review?"], "collection_names": ["kb"], "k": 10},
            headers=auth,
            timeout=60,
        )
        documents = r.json()["documents"][0]
        assert len(documents) == 1, documents  # the refused CLI ingest wrote nothing
        assert "glass room" in documents[0]
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
    # uvicorn shuts down gracefully, then re-raises the signal so the exit status tells why it stopped
    assert code in (0, -signal.SIGTERM)
    lines = [json.loads(line) for line in log_path.read_text().splitlines() if line.strip()]
    messages = [line["message"] for line in lines]
    assert "ragd is ready" in messages
    assert "Application shutdown complete." in messages


@pytest.mark.slow
def test_a_fatal_start_up_error_exits_non_zero(env: dict[str, str], tmp_path: Path) -> None:
    """The store is locked by a first server: the second one must exit 2, not serve a dead /health."""
    first_port, second_port = free_port(), free_port()
    log_path = tmp_path / "first.log"
    with log_path.open("w") as log:
        first = ragd(
            ["serve", "--port", str(first_port)],
            {**env, "RAGD_SERVER__API_KEY": KEY},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_ready(first, f"http://127.0.0.1:{first_port}", output=log_path.read_text)
        assert httpx.head(f"http://127.0.0.1:{first_port}/health").status_code == 200
        second = ragd(
            ["serve", "--port", str(second_port)],
            {**env, "RAGD_SERVER__API_KEY": KEY},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        _, err = second.communicate(timeout=120)
        assert second.returncode == 2, err[-2000:]
        assert "STORE_LOCKED" in err
        assert "failed to start" in err
    finally:
        first.send_signal(signal.SIGINT)
        first.wait(60)


@pytest.mark.slow
def test_the_demo_serves_its_docs_as_a_dataset_in_the_ui(env: dict[str, str], tmp_path: Path) -> None:
    """The README's first command: index the docs, answer, then serve the UI with them as a dataset."""
    port = free_port()
    log_path = tmp_path / "demo.log"
    demo_env = {**env, "RAGD_SERVER__PORT": str(port), "COLUMNS": "200"}
    with log_path.open("w") as log:
        proc = ragd(["demo", "--serve"], demo_env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(proc, url, output=log_path.read_text)
        assert f"Open {url}/ui/" in log_path.read_text()
        assert httpx.get(f"{url}/", follow_redirects=True).headers["content-type"].startswith("text/html")
        deadline = time.monotonic() + 120
        while True:
            (dataset,) = httpx.get(f"{url}/api/v1/datasets").json()["datasets"]
            if dataset.get("status") == "ready" or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert dataset["name"] == "ragd docs"
        assert dataset["files"] >= 10
        assert dataset["files_by_status"] == {"indexed": dataset["files"]}
        files = httpx.get(f"{url}/api/v1/datasets/{dataset['id']}/files").json()["files"]
        assert {Path(f["name"]).suffix for f in files} == {".md"}  # the docs, not their screenshots
        collections = httpx.get(f"{url}/api/v1/collections").json()["collections"]
        assert [c["dataset_id"] for c in collections] == [dataset["id"]], "the docs are embedded once"
        assert "Indexing ragd's docs into the dataset 'ragd docs'" in log_path.read_text()
        found = httpx.post(
            f"{url}/api/v1/search", json={"query": "How do I run the tests?"}, timeout=60
        ).json()
        assert found["results"]
    finally:
        proc.send_signal(signal.SIGINT)  # Ctrl+C: uvicorn shuts down, then re-raises the signal
        assert proc.wait(timeout=30) in (0, 130, -signal.SIGINT)
    assert "Traceback" not in log_path.read_text()
    # a second run finds its dataset and queues nothing again
    second = ragd(["demo", "--no-serve"], demo_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out, _ = second.communicate(timeout=300)
    assert second.returncode == 0, out
    assert "Open http" not in out
    assert "is indexed already" in out


def test_a_taken_port_is_a_clear_error(env: dict[str, str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = ragd(["serve", "--port", str(port)], env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2
    assert "ADDRESS_IN_USE" in err
    assert "RAGD_SERVER__PORT" in err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        demo_env = {**env, "RAGD_SERVER__PORT": str(taken.getsockname()[1])}
        demo = ragd(["demo", "--serve"], demo_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = demo.communicate(timeout=120)
    assert demo.returncode == 2
    assert "ADDRESS_IN_USE" in err
    assert "Indexing" not in out  # refused before any work
