"""Scheduled backups: ``ragd serve`` with RAGD_BACKUP__INTERVAL_S takes them, keeps the newest
RAGD_BACKUP__KEEP, and records each in /metrics and the audit trail (client ``scheduler``)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import pytest

from ragd.api.app import create_app
from ragd.bootstrap.backups import prune
from ragd.kb.backup_format import verify_backup
from ragd.settings import BackupSettings, EmbeddingSettings, ServerSettings, Settings
from tests.support.live_server import LiveServer

KEY = "backup-schedule-key-0123456789abcdef0123"


def test_prune_keeps_the_newest_complete_scheduled_backups_and_never_a_named_one(tmp_path: Path) -> None:
    for name in ["scheduled-1", "scheduled-2", "scheduled-3", "scheduled-4", "nightly", "scheduled-5"]:
        (tmp_path / name).mkdir()
        if name != "scheduled-2":  # a failed run's folder: no backup.json
            (tmp_path / name / "backup.json").write_text("{}")
    (tmp_path / "scheduled-6").mkdir()  # the run in progress
    deleted = prune(tmp_path, 2, keep_name="scheduled-6")
    assert sorted(deleted) == ["scheduled-1", "scheduled-2", "scheduled-3"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "nightly",
        "scheduled-4",
        "scheduled-5",
        "scheduled-6",
    ]


def ok_backups(url: str) -> float:
    text = httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {KEY}"}).text
    found = re.search(r'^ragd_backups_total\{outcome="ok"\} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


@pytest.mark.slow
def test_a_server_backs_up_on_its_schedule_and_keeps_the_newest(tmp_path: Path, model_cache: Path) -> None:
    settings = Settings(
        data_dir=tmp_path / "data",
        embedding=EmbeddingSettings(cache_dir=model_cache),
        server=ServerSettings(api_key=KEY),  # type: ignore[arg-type]
        backup=BackupSettings(interval_s=0.3, keep=2),
    )
    folder = settings.backup_dir
    with LiveServer(create_app(settings)) as server:
        server.wait_ready()
        deadline = time.monotonic() + 60
        while ok_backups(server.url) < 4:
            assert time.monotonic() < deadline, "no 4 scheduled backups within 60 s"
            time.sleep(0.1)
        auth = {"Authorization": f"Bearer {KEY}"}
        trail = httpx.get(f"{server.url}/api/v1/audit", params={"action": "system.backup"}, headers=auth)
        records = trail.json()["records"]
    assert len(records) >= 4
    assert {(r["outcome"], r["client"]) for r in records} == {("ok", "scheduler")}
    complete = sorted(p for p in folder.iterdir() if (p / "backup.json").is_file())
    assert [p.name[:10] for p in complete] == ["scheduled-", "scheduled-"]
    verify_backup(complete[-1])
    assert not [p for p in folder.iterdir() if not (p / "backup.json").is_file()]  # no half-written one
