"""A (nearly) full data disk: writes get 507 STORAGE_FULL, search keeps serving, start-up fails clearly.

The disk is made "full" by asking ragd to keep more free space than the disk has
(``RAGD_STORE__MIN_FREE_MB``): the check is the real one, against the real free space.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import httpx

from ragd.api.app import create_app
from ragd.settings import StoreSettings
from tests.api.conftest import AUTH, ingest_over_http, service_settings
from tests.support.live_server import LiveServer
from tests.support.processes import free_port, ragd


def test_a_full_disk_refuses_writes_and_keeps_searching(tmp_path: Path, model_cache: Path) -> None:
    settings = service_settings(tmp_path, model_cache)
    with LiveServer(create_app(settings)) as server:
        server.wait_ready()
        ingest_over_http(server)
        store = server.app.state.ragd.services.store
        store._min_free = (
            shutil.disk_usage(tmp_path).free + 10**12
        )  # the disk "fills up" under a running service
        form = {"file_id": "late", "filename": "late.md", "collection_name": "kb", "user_id": "u"}
        files = {"file": ("late.md", b"# Late\nWritten after the disk filled up.\n")}
        refused = httpx.put(f"{server.url}/api/v1/ingest", files=files, data=form, headers=AUTH, timeout=60)
        assert refused.status_code == 507, refused.text
        assert refused.json()["detail"]["code"] == "STORAGE_FULL"
        assert "RAGD_STORE__MIN_FREE_MB" in refused.json()["detail"]["hint"]
        body = {"queries": ["alpha protocol approvals"], "collection_names": ["kb"]}
        found = httpx.post(f"{server.url}/search", json=body, headers=AUTH, timeout=60)
        assert found.status_code == 200
        assert found.json()["documents"][0]


def test_start_up_on_a_full_disk_exits_with_a_clear_error(tmp_path: Path, model_cache: Path) -> None:
    import os

    full = shutil.disk_usage(tmp_path).free // (1024 * 1024) + 10**6
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGD_")}
    env |= {
        "RAGD_DATA_DIR": str(tmp_path / "data"),
        "RAGD_EMBEDDING__CACHE_DIR": str(model_cache),
        "RAGD_STORE__MIN_FREE_MB": str(full),
    }
    proc = ragd(["serve", "--port", str(free_port())], env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err[-2000:]
    assert "STORAGE_FULL" in err
    assert StoreSettings(min_free_mb=0).min_free_mb == 0  # the check can be turned off
