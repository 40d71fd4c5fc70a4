"""``ragd audit``: the trail straight from the catalog, as a table or JSON lines; the CLI's own
tenant and key commands are recorded (actor ``service``, client ``cli``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragd.cli.app import app


def test_cli_actions_are_recorded_and_read_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGD_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("COLUMNS", "200")
    runner = CliRunner()
    assert runner.invoke(app, ["tenants", "create", "acme"]).exit_code == 0
    key = runner.invoke(app, ["keys", "create", "--tenant", "acme", "--role", "admin", "--name", "ops"])
    assert key.exit_code == 0, key.output
    secret = key.output.strip().splitlines()[-1]

    table = runner.invoke(app, ["audit"])
    assert table.exit_code == 0, table.output
    assert "tenant.create" in table.output
    assert "key.create" in table.output

    lines = runner.invoke(app, ["audit", "--jsonl"])
    assert lines.exit_code == 0, lines.output
    records = [json.loads(line) for line in lines.output.splitlines()]
    assert [r["action"] for r in records] == ["tenant.create", "key.create"]  # oldest first
    assert {(r["actor"], r["client"], r["outcome"]) for r in records} == {("service", "cli", "ok")}
    assert records[1]["tenant_id"] == records[0]["target_id"]
    assert secret not in lines.output

    only_keys = runner.invoke(app, ["audit", "--jsonl", "--action", "key"])
    assert [json.loads(line)["action"] for line in only_keys.output.splitlines()] == ["key.create"]
    resumed = runner.invoke(app, ["audit", "--jsonl", "--after", str(records[0]["seq"])])
    assert [json.loads(line)["seq"] for line in resumed.output.splitlines()] == [records[1]["seq"]]
    future = runner.invoke(app, ["audit", "--jsonl", "--since", "2999-01-01T00:00"])
    assert future.output == ""

    bad = runner.invoke(app, ["audit", "--since", "last tuesday"])
    assert bad.exit_code == 2
    assert "INVALID_REQUEST" in bad.output
