"""What a dataset with failed files says in a real browser: its badge (searchable with failures,
or an error when nothing is searchable), and the failed files' rows (not in search, no full bar).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kb.conftest import Api, new_tenant
from tests.support.live_server import LiveServer
from tests.ui.conftest import PHONE, shot, sign_in

GOOD = {
    "quay.md": b"# Quay\n\nBoats moor on the east quay between April and October.\n",
    "fuel.txt": b"Diesel is sold at the fuel pontoon from seven in the morning until dusk.\n",
}
BROKEN = b"%PDF-1.7\n\x00\x01garbage that is not a PDF at all\xff\xfe"


@pytest.fixture(scope="module")
def port(service_api: Api) -> Iterator[dict[str, Any]]:
    """A tenant's admin key, a dataset with two indexed files and a failed one, and one with only
    a failed file (all uploaded through the API)."""
    _, keys = new_tenant(service_api, "port-ui", "admin")
    admin = keys["admin"]
    mixed = admin.ok("POST", "/api/v1/datasets", 201, json={"name": "mixed"})
    parts = [("files", (n, data)) for n, data in [*GOOD.items(), ("broken.pdf", BROKEN)]]
    sent = admin.ok("POST", f"/api/v1/datasets/{mixed['id']}/files", 202, files=parts)
    assert admin.wait_job(sent["job"]["id"])["status"] == "partial"
    broken = admin.ok("POST", "/api/v1/datasets", 201, json={"name": "all broken"})
    parts = [("files", ("broken.pdf", BROKEN))]
    sent = admin.ok("POST", f"/api/v1/datasets/{broken['id']}/files", 202, files=parts)
    assert admin.wait_job(sent["job"]["id"])["status"] == "failed"
    yield {"admin": admin, "mixed": mixed, "broken": broken}
    admin.close()


def file_row(page: Any, name: str) -> Any:
    return page.locator("table.files-table tbody tr").filter(
        has=page.get_by_role("link", name=name, exact=True)
    )


def test_a_dataset_with_some_failed_files_is_searchable_with_failures(
    page: Any, ui_server: LiveServer, port: dict[str, Any], tmp_path: Path
) -> None:
    admin, mixed = port["admin"], port["mixed"]
    assert admin.ok("GET", f"/api/v1/datasets/{mixed['id']}")["status"] == "partial"
    sign_in(page, ui_server.url, admin.key)
    page.goto(f"{ui_server.url}/ui/#/datasets")
    listed = page.locator("tr").filter(has=page.get_by_role("link", name="mixed", exact=True))
    listed.locator(".badge-partial").wait_for()
    assert listed.locator(".badge-partial").inner_text() == "searchable · 1 failed"
    assert listed.locator(".badge-error").count() == 0
    assert "2 indexed" in listed.inner_text()
    nothing = page.locator("tr").filter(has=page.get_by_role("link", name="all broken", exact=True))
    assert nothing.locator(".badge-error").inner_text() == "error"

    listed.get_by_role("link", name="mixed", exact=True).click()
    summary = page.locator(".dataset-summary")
    summary.locator(".badge-partial").wait_for()
    assert summary.locator(".badge-partial").inner_text() == "searchable · 1 failed"
    # the failed file is not in search: no ticked box for it; the indexed ones keep theirs
    broken = file_row(page, "broken.pdf")
    broken.wait_for()
    assert broken.locator("td[data-label=Enabled]").inner_text().strip() == "not in search"
    assert page.get_by_role("checkbox", name="In search: broken.pdf").count() == 0
    for name in GOOD:
        assert page.get_by_role("checkbox", name=f"In search: {name}").is_checked()
    shot(page, "dataset-failures", tmp_path)


def test_an_uploaded_file_that_fails_shows_no_full_progress_bar(
    page: Any, ui_server: LiveServer, port: dict[str, Any], tmp_path: Path
) -> None:
    admin = port["admin"]
    ds = admin.ok("POST", "/api/v1/datasets", 201, json={"name": "uploads here"})
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "quay.md").write_bytes(GOOD["quay.md"])
    (docs / "broken.pdf").write_bytes(BROKEN)
    sign_in(page, ui_server.url, admin.key)
    page.goto(f"{ui_server.url}/ui/#/datasets/{ds['id']}?tab=upload")
    page.get_by_text("Drop files here").wait_for()
    page.locator("input[type=file]").set_input_files([str(p) for p in sorted(docs.iterdir())])
    page.locator(".upload-summary").filter(has_text=re.compile(r"2 of 2 files · 1 failed")).wait_for(
        timeout=60_000
    )
    rows = page.locator(".upload-row")
    failed = rows.filter(has_text="broken.pdf")
    # the summary and the row are drawn from the same poll, one after the other
    failed.locator(".upload-state").filter(has_text=re.compile(r"^failed$")).wait_for(timeout=10_000)
    assert failed.locator(".upload-state").inner_text() == "failed"
    assert failed.locator("progress").count() == 0
    assert failed.locator(".upload-not-indexed").inner_text() == "not indexed"
    indexed = rows.filter(has_text="quay.md")
    assert indexed.locator("progress").evaluate("p => p.value === p.max")
    page.get_by_role("tab", name="Files").click()
    file_row(page, "broken.pdf").get_by_text("not in search").wait_for()
    assert page.locator(".dataset-summary .badge-partial").inner_text() == "searchable · 1 failed"


def test_the_failure_words_fit_a_phone(page: Any, ui_server: LiveServer, port: dict[str, Any]) -> None:
    page.set_viewport_size(PHONE)
    sign_in(page, ui_server.url, port["admin"].key)
    for path, shown in (
        ("datasets", ".badge-partial"),
        (f"datasets/{port['mixed']['id']}", ".not-in-search"),
        ("jobs", ".badge-partial"),
    ):
        page.goto(f"{ui_server.url}/ui/#/{path}")
        page.locator(shown).first.wait_for()
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], (path, width)
