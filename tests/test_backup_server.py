"""``ragd backup`` while ``ragd serve`` holds the index goes through ``POST /api/v1/system/backup``
(service key only, into RAGD_BACKUP__DIR), and ``ragd restore`` of that backup into a fresh data dir
gives the same search output.  A real server process on loopback, the real CLI."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from ragd.cli.app import app
from ragd.kb.backup_format import verify_backup
from tests.test_cli_server import KEY, data_dir, notes, serve

__all__ = ["data_dir"]  # the fixture, shared with the CLI-through-a-server tests


@pytest.mark.slow
def test_backup_through_a_running_server_restores_to_the_same_search(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli = CliRunner()
    notes(tmp_path)
    monkeypatch.chdir(tmp_path)
    proc, server = serve(tmp_path)
    auth = {"Authorization": f"Bearer {KEY}"}
    try:
        assert cli.invoke(app, ["ingest", "notes", "-c", "kb"]).exit_code == 1  # the empty file fails
        found = cli.invoke(app, ["search", "where is the review?", "-c", "kb", "--json"])
        assert found.exit_code == 0, found.output

        outside = cli.invoke(app, ["backup", str(tmp_path / "elsewhere")])
        assert outside.exit_code == 2
        assert "INVALID_REQUEST" in outside.output
        assert not (tmp_path / "elsewhere").exists()

        done = cli.invoke(app, ["backup", str(data_dir / "backups" / "first")])
        assert done.exit_code == 0, done.output
        assert f"using the server at {server}" in done.stderr
        assert "the server backed up 2 points" in done.stdout

        bad = httpx.post(f"{server}/api/v1/system/backup", json={"name": "../x"}, headers=auth)
        assert bad.status_code == 400
        again = httpx.post(f"{server}/api/v1/system/backup", json={"name": "first"}, headers=auth)
        assert again.status_code == 409  # an existing backup is never written over
        tenant = httpx.post(f"{server}/api/v1/tenants", json={"name": "t"}, headers=auth).json()
        made = httpx.post(
            f"{server}/api/v1/tenants/{tenant['id']}/keys", json={"role": "admin"}, headers=auth
        )
        tenant_auth = {"Authorization": f"Bearer {made.json()['secret']}"}
        denied = httpx.post(f"{server}/api/v1/system/backup", json={"name": "t"}, headers=tenant_auth)
        assert denied.status_code == 403
        trail = httpx.get(f"{server}/api/v1/audit", params={"action": "system.backup"}, headers=auth).json()
        outcomes = [(r["outcome"], r["target_id"], r["detail"].get("code")) for r in trail["records"]]
        assert outcomes == [
            ("denied", "t", "FORBIDDEN"),
            ("failed", "first", "CONFLICT"),
            ("ok", "first", None),
        ]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)

    info = verify_backup(data_dir / "backups" / "first")
    assert info.points == 2
    restored = tmp_path / "restored"
    result = cli.invoke(app, ["restore", str(data_dir / "backups" / "first"), "--data-dir", str(restored)])
    assert result.exit_code == 0, result.output
    assert "restored 2 points" in result.stdout
    monkeypatch.setenv("RAGD_DATA_DIR", str(restored))
    again_found = cli.invoke(app, ["search", "where is the review?", "-c", "kb", "--json"])
    assert again_found.exit_code == 0, again_found.output
    assert json.loads(again_found.stdout) == json.loads(found.stdout)
    refused = cli.invoke(app, ["restore", str(data_dir / "backups" / "first"), "--data-dir", str(restored)])
    assert refused.exit_code == 2
    assert "CONFLICT" in refused.output  # only into an empty data dir
