"""The System screen's Limits table in a real browser: each tenant's use against its limits for the
service key, only its own tenant for a tenant admin, nothing for a reader."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kb.conftest import SERVICE_KEY, Api, new_tenant
from tests.support.live_server import LiveServer
from tests.ui.conftest import PHONE, shot, sign_in

NOTE = b"# Quay\n\nBoats moor on the east quay between April and October.\n"


@pytest.fixture(scope="module")
def tenants(service_api: Api) -> Iterator[dict[str, Any]]:
    quay_id, quay = new_tenant(service_api, "quay-co", "admin", "editor", "reader")
    dock_id, dock = new_tenant(service_api, "dock-co", "admin")
    ds = quay["editor"].ok("POST", "/api/v1/datasets", 201, json={"name": "quay"})
    sent = quay["editor"].ok(
        "POST", f"/api/v1/datasets/{ds['id']}/files", 202, files=[("files", ("quay.md", NOTE))]
    )
    quay["editor"].wait_job(sent["job"]["id"])
    service_api.ok(
        "PUT", f"/api/v1/tenants/{quay_id}/limits", json={"max_chunks": 40, "search_per_minute": 90}
    )
    yield {"quay": (quay_id, quay), "dock": (dock_id, dock)}
    for keys in (quay, dock):
        for api in keys.values():
            api.close()


def _limits(page: Any, url: str) -> Any:
    page.goto(f"{url}/ui/#/system")
    page.get_by_role("region", name="Health").locator(".badge-ready").wait_for()
    return page.get_by_role("region", name="Limits")


def test_the_service_key_sees_every_tenants_use_against_its_limits(
    page: Any, ui_server: LiveServer, tenants: dict[str, Any], tmp_path: Path
) -> None:
    sign_in(page, ui_server.url, SERVICE_KEY)
    region = _limits(page, ui_server.url)
    quay = region.locator("tr").filter(has_text="quay-co")
    quay.wait_for()
    chunks = quay.locator("td[data-label=Chunks]")
    assert "of 40" in chunks.inner_text()
    assert chunks.locator("meter").evaluate("m => m.max") == 40
    assert "search 90/min" in quay.locator("td[data-label='Requests per key']").inner_text()
    dock = region.locator("tr").filter(has_text="dock-co")
    assert "no limit" in dock.locator("td[data-label=Chunks]").inner_text()
    assert dock.locator("meter").count() == 0
    shot(page, "system-limits", tmp_path)


def test_a_tenant_admin_sees_only_its_tenant_and_a_reader_no_limits(
    page: Any, ui_server: LiveServer, tenants: dict[str, Any], tmp_path: Path
) -> None:
    _, quay = tenants["quay"]
    sign_in(page, ui_server.url, quay["admin"].key)
    region = _limits(page, ui_server.url)
    region.locator("tr").filter(has_text="quay-co").wait_for()
    assert region.locator("tbody tr").count() == 1
    assert "dock-co" not in region.inner_text()
    page.set_viewport_size(PHONE)
    shot(page, "system-limits-phone", tmp_path)
    page.context.clear_cookies()
    sign_in(page, ui_server.url, quay["reader"].key)
    page.goto(f"{ui_server.url}/ui/#/system")
    page.get_by_role("region", name="Health").locator(".badge-ready").wait_for()
    assert page.get_by_role("region", name="Limits").count() == 0
