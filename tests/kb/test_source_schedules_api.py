"""Source schedules over HTTP and `ragd sources` on a live service (SQLite and PostgreSQL catalogs):
set, show, pause, resume and clear; a schedule that cannot run is 422 INVALID_SCHEDULE; only
tenant admins change schedules; each change is in the audit trail."""

from __future__ import annotations

import uuid
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from click.testing import Result
from typer.testing import CliRunner

from ragd.cli.app import app as cli
from tests.kb.conftest import Api, new_tenant
from tests.support.live_server import LiveServer


def test_a_source_schedule_is_set_shown_paused_resumed_and_audited(
    service: Api, kb_server: LiveServer
) -> None:
    tenant_id, keys = new_tenant(service, f"sched-{uuid.uuid4().hex[:8]}", "admin", "editor")
    admin, editor = keys["admin"], keys["editor"]
    ds = admin.ok("POST", "/api/v1/datasets", 201, json={"name": "scheduled"})["id"]
    folder = Path(kb_server.app.state.ragd.settings.data_dir).parent / f"sched-{uuid.uuid4().hex[:6]}"
    folder.mkdir()
    (folder / "a.md").write_text("# Memo\nThe schedule memo.\n")
    added = service.ok(
        "POST",
        f"/api/v1/datasets/{ds}/sources",
        202,
        json={"kind": "folder", "config": {"path": str(folder)}},
    )
    source = added["source"]
    assert (source["schedule"], source["paused"], source["next_run_at"], source["last_run_at"]) == (
        None,
        False,
        None,
        None,
    )
    base = f"/api/v1/datasets/{ds}/sources/{source['id']}"
    nightly = {"cron": "0 3 * * *", "timezone": "Europe/Berlin"}

    editor.ok("PUT", f"{base}/schedule", 403, json=nightly)
    for bad in (
        {"interval_s": 10},  # under worker.schedule_min_interval_s
        {"cron": "0 3 * * *", "timezone": "Nowhere/Atlantis"},
        {"cron": "every night"},
        {"interval_s": 3600, "cron": "0 3 * * *"},
        {},
    ):
        r = admin.put(f"{base}/schedule", json=bad)
        assert r.status_code == 422, (bad, r.text)
        assert r.json()["detail"]["code"] == "INVALID_SCHEDULE", bad
    admin.ok("PUT", f"/api/v1/datasets/{ds}/sources/nope/schedule", 404, json=nightly)

    set_ = admin.ok("PUT", f"{base}/schedule", json=nightly)["source"]
    assert set_["schedule"] == nightly
    assert set_["paused"] is False
    when = datetime.fromtimestamp(set_["next_run_at"], ZoneInfo("Europe/Berlin"))
    assert (when.hour, when.minute < 5) == (3, True)  # 03:00 Berlin, delayed by at most 5 min of jitter
    listed = admin.ok("GET", f"/api/v1/datasets/{ds}/sources")["sources"]
    assert [(s["id"], s["schedule"], s["next_run_at"]) for s in listed] == [
        (source["id"], nightly, set_["next_run_at"])
    ]

    paused = admin.ok("POST", f"{base}/pause")["source"]
    assert (paused["paused"], paused["schedule"], paused["next_run_at"]) == (True, nightly, None)
    resumed = admin.ok("POST", f"{base}/resume")["source"]
    assert (resumed["paused"], resumed["schedule"]) == (False, nightly)
    assert resumed["next_run_at"] is not None
    every = admin.ok("PUT", f"{base}/schedule", json={"interval_s": 3600})["source"]
    assert every["schedule"] == {"interval_s": 3600.0}
    cleared = admin.ok("DELETE", f"{base}/schedule")["source"]
    assert (cleared["schedule"], cleared["next_run_at"]) == (None, None)

    got = _records(service, tenant_id, {"source.schedule", "source.pause", "source.resume"})
    assert [(r["action"], r["outcome"], r["target_id"]) for r in got] == [
        ("source.schedule", "denied", source["id"]),
        *[("source.schedule", "failed", source["id"])] * 5,
        ("source.schedule", "failed", "nope"),
        ("source.schedule", "ok", source["id"]),
        ("source.pause", "ok", source["id"]),
        ("source.resume", "ok", source["id"]),
        ("source.schedule", "ok", source["id"]),
        ("source.schedule", "ok", source["id"]),
    ]
    assert got[7]["detail"]["schedule"] == nightly
    assert got[-1]["detail"]["schedule"] is None
    for api in keys.values():
        api.close()


def _records(service: Api, tenant_id: str, actions: set[str]) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    cursor = None
    while True:
        params = {"tenant": tenant_id, **({"cursor": cursor} if cursor else {})}
        page = service.ok("GET", "/api/v1/audit", params=params)
        records += page["records"]
        cursor = page["next_cursor"]
        if cursor is None:
            return [r for r in reversed(records) if r["action"] in actions]


def test_ragd_sources_sets_shows_pauses_and_clears_a_schedule(service: Api, kb_server: LiveServer) -> None:
    _, keys = new_tenant(service, f"sched-cli-{uuid.uuid4().hex[:8]}", "admin", "reader")
    admin = keys["admin"]
    ds = admin.ok("POST", "/api/v1/datasets", 201, json={"name": "cli"})["id"]
    folder = Path(kb_server.app.state.ragd.settings.data_dir).parent / f"sched-cli-{uuid.uuid4().hex[:6]}"
    folder.mkdir()
    (folder / "a.md").write_text("# Memo\nThe cli memo.\n")
    body = {"kind": "folder", "config": {"path": str(folder)}}
    source = service.ok("POST", f"/api/v1/datasets/{ds}/sources", 202, json=body)["source"]["id"]
    runner = CliRunner()

    def ragd(*args: str, key: str = admin.key) -> Result:
        return runner.invoke(cli, ["sources", *args, "--url", kb_server.url, "--key", key])

    done = ragd("schedule", ds, source, "--cron", "0 3 * * 1-5", "--tz", "Europe/Berlin")
    assert done.exit_code == 0, done.output
    assert "cron 0 3 * * 1-5 Europe/Berlin" in done.output
    [listed] = admin.ok("GET", f"/api/v1/datasets/{ds}/sources")["sources"]
    assert listed["schedule"] == {"cron": "0 3 * * 1-5", "timezone": "Europe/Berlin"}
    shown = ragd("list", ds)
    assert shown.exit_code == 0, shown.output
    assert source[:8] in shown.output
    assert "Europe/Berlin" in shown.output
    bad = ragd("schedule", ds, source, "--every", "5")
    assert bad.exit_code == 1
    assert "INVALID_SCHEDULE" in bad.output
    denied = ragd("pause", ds, source, key=keys["reader"].key)
    assert denied.exit_code == 1
    assert "FORBIDDEN" in denied.output
    assert ragd("pause", ds, source).exit_code == 0
    assert admin.ok("GET", f"/api/v1/datasets/{ds}/sources")["sources"][0]["paused"] is True
    assert "paused" in ragd("list", ds).output
    assert ragd("resume", ds, source).exit_code == 0
    assert ragd("schedule", ds, source, "--every", "7200").exit_code == 0
    assert admin.ok("GET", f"/api/v1/datasets/{ds}/sources")["sources"][0]["schedule"] == {
        "interval_s": 7200.0
    }
    assert ragd("schedule", ds, source, "--none").exit_code == 0
    assert admin.ok("GET", f"/api/v1/datasets/{ds}/sources")["sources"][0]["schedule"] is None
    for api in keys.values():
        api.close()
