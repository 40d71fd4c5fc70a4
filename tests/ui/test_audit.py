"""The audit trail screen (#/audit) in a real browser: an action done through the API shows up in
its table, the filters narrow it, a tenant admin sees its own tenant's records and an editor has
no Audit entry in the navigation."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from tests.kb.conftest import SERVICE_KEY, Api, new_tenant
from tests.support.live_server import LiveServer
from tests.ui.conftest import PHONE, shot, sign_in, wait_until


def audit_rows(page: Any) -> Any:
    return page.locator("table.audit-table tbody tr")


def test_the_screen_lists_a_record_an_action_created_and_filters(
    page: Any, ui_server: LiveServer, service_api: Api, tmp_path: Path
) -> None:
    tenant_id, keys = new_tenant(service_api, f"audit-ui-{uuid.uuid4().hex[:6]}", "admin")
    name = f"ledger-{uuid.uuid4().hex[:6]}"
    made = keys["admin"].ok("POST", "/api/v1/datasets", 201, json={"name": name})
    sign_in(page, ui_server.url, SERVICE_KEY)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Audit").click()
    page.get_by_role("heading", name="Audit trail", level=1).wait_for()
    row = audit_rows(page).filter(has_text=made["id"])
    row.wait_for()
    assert "dataset.create" in row.inner_text()
    assert "ok" in row.inner_text()
    shot(page, "audit", tmp_path)

    page.get_by_label("Action").fill("key")
    page.get_by_label("Tenant id").fill(tenant_id)
    page.get_by_role("button", name="Apply filters").click()
    wait_until(
        page,
        "[...document.querySelectorAll('table.audit-table tbody tr')]"
        ".every(tr => tr.textContent.includes('key.create'))",
        "the filtered audit table shows only key.create rows",
    )
    assert audit_rows(page).count() == 1  # the one admin key new_tenant made
    for api in keys.values():
        api.close()


def test_pages_follow_the_cursor(page: Any, ui_server: LiveServer, service_api: Api) -> None:
    tenant_id, keys = new_tenant(service_api, f"audit-pages-{uuid.uuid4().hex[:6]}", "admin")
    try:
        for i in range(55):  # more than a page (50)
            keys["admin"].ok("POST", "/api/v1/datasets", 201, json={"name": f"p{i}"})
        sign_in(page, ui_server.url, SERVICE_KEY)
        page.goto(f"{ui_server.url}/ui/#/audit")
        page.get_by_label("Tenant id").fill(tenant_id)
        page.get_by_role("button", name="Apply filters").click()
        page.get_by_text("50 records, the newest.").wait_for()
        page.get_by_role("button", name="Older").click()
        page.get_by_text("page 2").wait_for()
        # 55 datasets, the tenant and its key: 57 records, 7 on the second page (the caption can
        # show before the table's rows are replaced: wait for the rows themselves)
        wait_until(
            page,
            "document.querySelectorAll('table.audit-table tbody tr').length === 7",
            "the audit table shows 7 rows",
        )
        assert page.get_by_role("button", name="Older").is_disabled()
        page.get_by_role("button", name="Newer").click()
        page.get_by_text("50 records, the newest.").wait_for()
    finally:
        for api in keys.values():
            api.close()


def test_a_tenant_admin_sees_its_tenant_and_an_editor_has_no_audit(
    page: Any, browser: Any, ui_server: LiveServer, service_api: Api
) -> None:
    ours_id, ours = new_tenant(service_api, f"audit-ours-{uuid.uuid4().hex[:6]}", "admin", "editor")
    _, theirs = new_tenant(service_api, f"audit-theirs-{uuid.uuid4().hex[:6]}", "admin")
    mine = ours["admin"].ok("POST", "/api/v1/datasets", 201, json={"name": "ours"})
    other = theirs["admin"].ok("POST", "/api/v1/datasets", 201, json={"name": "theirs"})
    page.set_viewport_size(PHONE)
    sign_in(page, ui_server.url, ours["admin"].key)
    page.goto(f"{ui_server.url}/ui/#/audit")
    audit_rows(page).filter(has_text=mine["id"]).wait_for()
    assert audit_rows(page).filter(has_text=other["id"]).count() == 0
    assert page.get_by_label("Tenant id").count() == 0  # only the service key picks a tenant
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]

    editor = browser.new_context()
    try:
        editor_page = editor.new_page()
        sign_in(editor_page, ui_server.url, ours["editor"].key)
        nav = editor_page.get_by_role("navigation", name="Main")
        assert "Audit" not in nav.get_by_role("link").all_inner_texts()
    finally:
        editor.close()
    for api in [*ours.values(), *theirs.values()]:
        api.close()
    assert ours_id
