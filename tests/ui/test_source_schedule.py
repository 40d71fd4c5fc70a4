"""The Sources tab shows a source's schedule, next and last run, and lets an admin set a schedule,
pause and resume it and clear it (issue 32 §3), in a real browser against a live ragd."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.kb.conftest import Api, new_tenant
from tests.support.live_server import LiveServer
from tests.ui.conftest import sign_in


def test_an_admin_schedules_pauses_resumes_and_clears_a_source(
    page: Any, ui_server: LiveServer, service_api: Api
) -> None:
    folder = Path(ui_server.app.state.ragd.settings.data_dir).parent / "scheduled"
    folder.mkdir()
    (folder / "memo.md").write_text("# Memo\n\nThe ferry leaves at noon.\n")
    tenant_id, keys = new_tenant(service_api, "schedules-ui", "admin")
    admin = keys["admin"]
    service_api.ok(
        "POST", f"/api/v1/tenants/{tenant_id}/grants", 201, json={"kind": "folder", "target": str(folder)}
    )
    ds = admin.ok("POST", "/api/v1/datasets", 201, json={"name": "scheduled"})
    base = f"/api/v1/datasets/{ds['id']}/sources"
    added = admin.ok("POST", base, 202, json={"kind": "folder", "config": {"path": str(folder)}})
    admin.wait_job(added["job"]["id"])

    sign_in(page, ui_server.url, admin.key)
    page.goto(f"{ui_server.url}/ui/#/datasets/{ds['id']}")
    page.get_by_role("tab", name="Sources").click()
    row = page.locator(".sources-panel table.data tbody tr").filter(has_text=str(folder))
    row.get_by_text("by hand").wait_for()
    assert page.get_by_role("button", name=f"Pause {folder}").count() == 0

    page.get_by_role("button", name=f"Schedule {folder}").click()
    form = page.locator("form.schedule-form")
    form.get_by_label("Runs").select_option("cron")
    form.get_by_label("Cron").fill("every night")
    form.get_by_role("button", name="Save schedule").click()
    form.get_by_text("INVALID_SCHEDULE").or_(form.get_by_text("5 fields")).first.wait_for()
    form.get_by_label("Cron").fill("0 3 * * *")
    form.get_by_label("Time zone").fill("Europe/Berlin")
    form.get_by_role("button", name="Save schedule").click()
    row.get_by_text("cron 0 3 * * * (Europe/Berlin)").wait_for()
    assert "next " in row.inner_text()
    [listed] = admin.ok("GET", base)["sources"]
    assert listed["schedule"] == {"cron": "0 3 * * *", "timezone": "Europe/Berlin"}

    page.get_by_role("button", name=f"Pause {folder}").click()
    row.get_by_text("paused", exact=True).wait_for()
    assert admin.ok("GET", base)["sources"][0]["paused"] is True
    page.get_by_role("button", name=f"Resume {folder}").click()
    page.get_by_role("button", name=f"Pause {folder}").wait_for()
    assert admin.ok("GET", base)["sources"][0]["paused"] is False

    page.get_by_role("button", name=f"Schedule {folder}").click()
    form.get_by_role("button", name="No schedule").click()
    row.get_by_text("by hand").wait_for()
    assert admin.ok("GET", base)["sources"][0]["schedule"] is None
    admin.close()
