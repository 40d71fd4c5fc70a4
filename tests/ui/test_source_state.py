"""The Sources tab shows a disabled source, its reason, and an Enable button instead of Sync
(issue 30 §1.1: a source whose grant was revoked no longer syncs), in a real browser."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.kb.conftest import Api, new_tenant
from tests.support.live_server import LiveServer
from tests.ui.conftest import sign_in


def test_a_disabled_source_shows_its_reason_and_enables_once_granted_again(
    page: Any, ui_server: LiveServer, service_api: Api
) -> None:
    folder = Path(ui_server.app.state.ragd.settings.data_dir).parent / "granted"  # in its folder roots
    folder.mkdir()
    (folder / "memo.md").write_text("# Memo\n\nThe quay closes at dusk.\n")
    tenant_id, keys = new_tenant(service_api, "grants-ui", "admin")
    admin = keys["admin"]
    grants = f"/api/v1/tenants/{tenant_id}/grants"
    grant = service_api.ok("POST", grants, 201, json={"kind": "folder", "target": str(folder)})
    ds = admin.ok("POST", "/api/v1/datasets", 201, json={"name": "granted"})
    added = admin.ok(
        "POST",
        f"/api/v1/datasets/{ds['id']}/sources",
        202,
        json={"kind": "folder", "config": {"path": str(folder)}},
    )
    admin.wait_job(added["job"]["id"])
    service_api.ok("DELETE", f"{grants}/{grant['id']}")

    sign_in(page, ui_server.url, admin.key)
    page.goto(f"{ui_server.url}/ui/#/datasets/{ds['id']}")
    page.get_by_role("tab", name="Sources").click()
    row = page.locator(".sources-panel table.data tbody tr").filter(has_text=str(folder))
    row.get_by_text("disabled", exact=True).wait_for()
    assert "no live grant" in row.inner_text()
    assert page.get_by_role("button", name=f"Sync {folder} now").count() == 0
    page.get_by_role("button", name=f"Enable {folder}").click()
    page.locator(".toast").filter(has_text="SOURCE_NOT_GRANTED").or_(
        page.locator(".toast").filter(has_text="no grant")
    ).first.wait_for()

    service_api.ok("POST", grants, 201, json={"kind": "folder", "target": str(folder)})
    page.reload()
    page.get_by_role("tab", name="Sources").click()
    row.get_by_text("live", exact=True).wait_for()
    page.get_by_role("button", name=f"Sync {folder} now").wait_for()
    admin.close()
