"""POST /api/v1/system/backup on a live service over each catalog (SQLite: its backup API;
PostgreSQL: pg_dump), restored with ``restore_into`` into a fresh data dir (and a fresh empty
database), served again: the same tenants, keys, datasets, counts and search hits."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import cast

import pytest

from ragd.api.app import create_app
from ragd.bootstrap.backups import restore_into
from ragd.kb.backup_format import CATALOG_PARTS, verify_backup
from tests.kb.conftest import SERVICE_KEY, Api, kb_settings, new_tenant
from tests.support.live_server import LiveServer
from tests.support.postgres import PostgresServer

DOC = b"# Lighthouses\n\nA lighthouse keeper trims the lamp wick at dusk.\n\nFog horns sound every minute.\n"
QUERIES = ["who trims the lamp wick", "when do fog horns sound", "lighthouse keeper at dusk"]


def served(api: Api, tenant_id: str, admin: Api) -> dict[str, object]:
    """What a client sees: tenants, the tenant's keys, its datasets with their counts, search hits."""
    return {
        "tenants": api.ok("GET", "/api/v1/tenants"),
        "keys": api.ok("GET", f"/api/v1/tenants/{tenant_id}/keys"),
        "datasets": admin.ok("GET", "/api/v1/datasets"),
        "hits": [[{**h, "score": round(h["score"], 4)} for h in admin.search(q)] for q in QUERIES],
    }


@pytest.mark.slow
def test_a_backup_of_a_live_service_restores_to_the_same_service_on_either_catalog(
    kb_server: LiveServer,
    service: Api,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    model_cache: Path,
) -> None:
    tenant_id, keys = new_tenant(service, "harbour", "admin")
    admin = keys["admin"]
    try:
        check_round_trip(kb_server, service, admin, tenant_id, request, tmp_path, model_cache)
    finally:
        admin.close()


def check_round_trip(
    kb_server: LiveServer,
    service: Api,
    admin: Api,
    tenant_id: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    model_cache: Path,
) -> None:
    settings = kb_server.app.state.ragd.settings
    kind = "sqlite" if settings.catalog_url.startswith("sqlite") else "postgresql"
    ds = admin.ok("POST", "/api/v1/datasets", 201, json={"name": "lights"})
    sent = admin.ok("POST", f"/api/v1/datasets/{ds['id']}/files", 202, files=[("files", ("l.md", DOC))])
    assert admin.wait_job(sent["job"]["id"])["status"] == "succeeded"
    before = served(service, tenant_id, admin)
    assert all(cast(list[list[object]], before["hits"]))

    answer = service.post("/api/v1/system/backup", json={"name": "catalog-check"})
    assert answer.status_code == 201, answer.text
    path = Path(answer.json()["path"])
    info = verify_backup(path)
    assert info.points == answer.json()["points"] > 0
    assert info.catalog == kind
    assert json.loads((path / "backup.json").read_text())["catalog"] == kind
    assert (path / CATALOG_PARTS[kind]).is_file()

    target_url = None
    pg: PostgresServer | None = None
    if kind == "postgresql":
        pg = request.getfixturevalue("postgres_server")
        target_url = pg.create_database()
    try:
        target = kb_settings(tmp_path / "restored", model_cache, target_url)
        report = asyncio.run(restore_into(target, path))
        assert (report.points, report.files_to_reindex) == (info.points, ())
        with LiveServer(create_app(target)) as again:
            again.wait_ready()
            other = Api(again.url, SERVICE_KEY)
            same_admin = Api(again.url, admin.key)
            try:
                assert served(other, tenant_id, same_admin) == before
            finally:
                other.close()
                same_admin.close()
    finally:
        if pg is not None and target_url is not None:
            pg.drop_database(target_url)
