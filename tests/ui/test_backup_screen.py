"""The System screen's Backups section in a real browser: the service key sees the backup folder,
the schedule and the newest backup's outcome (GET /api/v1/system's ``backups``); a tenant admin
sees no such section."""

from __future__ import annotations

from typing import Any

from tests.kb.conftest import SERVICE_KEY, Api, new_tenant
from tests.support.live_server import LiveServer
from tests.ui.conftest import playwright_sync, sign_in


def test_the_service_key_sees_the_newest_backup_and_a_tenant_admin_no_backups(
    page: Any, ui_server: LiveServer, service_api: Api
) -> None:
    made = service_api.ok("POST", "/api/v1/system/backup", 201, json={"name": "ui-check"})
    info = service_api.ok("GET", "/api/v1/system")["backups"]
    assert (info["last"]["name"], info["last"]["outcome"], info["interval_s"]) == ("ui-check", "ok", 0.0)
    assert info["dir"] == str(made["path"]).rsplit("/", 1)[0]

    sign_in(page, ui_server.url, SERVICE_KEY)
    page.goto(f"{ui_server.url}/ui/#/system")
    section = page.get_by_role("region", name="Backups")
    playwright_sync.expect(section).to_contain_text("ui-check")
    playwright_sync.expect(section.locator(".badge-ok")).to_have_count(1)
    playwright_sync.expect(section).to_contain_text("none (ragd backup")

    _, keys = new_tenant(service_api, "backup-ui-co", "admin")
    admin = keys["admin"]
    try:
        assert "backups" not in admin.ok("GET", "/api/v1/system")  # the tenant's own view
    finally:
        admin.close()
    page.context.clear_cookies()
    sign_in(page, ui_server.url, admin.key)
    page.goto(f"{ui_server.url}/ui/#/system")
    page.get_by_role("region", name="Counts").wait_for()
    assert page.get_by_role("region", name="Backups").count() == 0
