"""POST /api/v1/system/backup on a live service over each catalog: SQLite is backed up (201, a
verified backup), PostgreSQL is refused with 409 CONFLICT and the pg_dump hint, never a 500."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragd.kb.backup_format import verify_backup
from tests.kb.conftest import Api
from tests.support.live_server import LiveServer


@pytest.mark.slow
def test_a_backup_request_is_taken_on_sqlite_and_refused_clearly_on_postgresql(
    kb_server: LiveServer, service: Api
) -> None:
    settings = kb_server.app.state.ragd.settings
    answer = service.post("/api/v1/system/backup", json={"name": "catalog-check"})
    if settings.catalog_url.startswith("sqlite"):
        assert answer.status_code == 201, answer.text
        assert verify_backup(Path(answer.json()["path"])).points == answer.json()["points"]
        return
    assert answer.status_code == 409, answer.text
    body = answer.json()
    assert body["detail"]["code"] == "CONFLICT"
    assert "pg_dump" in str(body)
    assert not (settings.backup_dir / "catalog-check").exists()  # nothing written
