"""The whole journey of a new user, in one browser session, with real files of ../shared/documents.

Sign in, create a dataset, upload three files (a Word file, a PDF, slides), watch them reach
``indexed``, find a known answer in the sandbox, disable the file it came from and see its hits go,
enable it again and see them back, then delete the dataset. Everything through the UI; the API is
only read, to check that the UI told the truth.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from tests.conftest import shared_path
from tests.kb.conftest import SERVICE_KEY, Api, new_tenant
from tests.support.live_server import LiveServer
from tests.ui.conftest import shot, sign_in

FILES = ("unstructured_handbook-1p.docx", "docling_2305.03393v1-pg9.pdf", "docling_powerpoint_sample.pptx")
QUESTION = (
    "Which act removed the bankruptcy judge from the responsibilities for day-to-day administration of cases?"
)
ANSWER = "Bankruptcy Reform Act of 1978"


def hits(page: Any) -> Any:
    return page.locator("main li.hit")


def enabled(api: Api, dataset_id: str, name: str, want: bool) -> None:
    """Wait until the API says the file is (not) in search: the toggle's PATCH has landed."""
    deadline = time.monotonic() + 20
    while True:
        files = api.ok("GET", f"/api/v1/datasets/{dataset_id}/files")["files"]
        if {f["name"]: f["enabled"] for f in files}[name] is want:
            return
        assert time.monotonic() < deadline, f"{name} never became enabled={want}"
        time.sleep(0.1)


def search(page: Any, query: str) -> None:
    page.get_by_label("Query").fill(query)
    page.get_by_role("button", name="Search", exact=True).click()
    page.get_by_text(re.compile(r"^(\d+ hits? in|No hits)")).first.wait_for()


def test_a_new_user_goes_from_sign_in_to_an_answer_and_back(
    page: Any, ui_server: LiveServer, service_api: Api, tmp_path: Path
) -> None:
    documents = [shared_path("documents", name) for name in FILES]
    tenant_id, keys = new_tenant(service_api, "journey-co", "admin")
    admin = keys["admin"]

    # sign in with the tenant's admin key, as a user given one would
    sign_in(page, ui_server.url, admin.key)
    page.get_by_role("heading", name="Datasets", level=1).wait_for()

    # create a dataset
    page.get_by_role("button", name="New dataset").click()
    form = page.get_by_role("dialog")
    form.get_by_label("Name").fill("court handbook")
    form.get_by_label("Description").fill("the bankruptcy handbook and friends")
    form.get_by_role("button", name="Create").click()  # opens the new dataset on its Upload tab
    page.get_by_role("heading", name="court handbook", level=1).wait_for()

    # upload three real files and watch them reach "indexed"
    page.get_by_role("tab", name="Upload", selected=True).wait_for()
    page.locator("input[type=file]").set_input_files([str(p) for p in documents])
    page.locator(".upload-summary").filter(has_text=re.compile(r"Done: 3 of 3 files")).wait_for(
        timeout=120_000
    )
    shot(page, "journey-upload", tmp_path)
    page.get_by_role("tab", name="Files").click()
    table = page.locator("main table")
    for name in FILES:
        table.locator("tr", has=page.get_by_role("link", name=name, exact=True)).get_by_text(
            "indexed", exact=True
        ).wait_for(timeout=60_000)
    (dataset,) = admin.ok("GET", "/api/v1/datasets")["datasets"]
    assert dataset["files_by_status"] == {"indexed": 3}

    # find the known answer in the sandbox
    page.get_by_role("link", name="Sandbox").click()
    page.get_by_role("heading", name=re.compile("sandbox", re.I), level=1).wait_for()
    search(page, QUESTION)
    top = hits(page).first
    assert ANSWER in top.inner_text()
    assert FILES[0] in top.inner_text()
    shot(page, "journey-answer", tmp_path)

    # disable the file: its hits go
    page.get_by_role("link", name="Datasets").click()
    page.get_by_role("link", name="court handbook", exact=True).click()
    toggle = page.get_by_role("checkbox", name=f"In search: {FILES[0]}")
    toggle.uncheck()
    enabled(admin, dataset["id"], FILES[0], want=False)
    page.get_by_role("link", name="Sandbox").click()
    search(page, QUESTION)
    shown = page.locator("main").inner_text()
    assert ANSWER not in shown
    assert all(FILES[0] not in hits(page).nth(i).inner_text() for i in range(hits(page).count()))

    # enable it again: the answer is back on top
    page.get_by_role("link", name="Datasets").click()
    page.get_by_role("link", name="court handbook", exact=True).click()
    page.get_by_role("checkbox", name=f"In search: {FILES[0]}").check()
    enabled(admin, dataset["id"], FILES[0], want=True)
    page.get_by_role("link", name="Sandbox").click()
    search(page, QUESTION)
    assert ANSWER in hits(page).first.inner_text()

    # delete the dataset
    page.get_by_role("link", name="Datasets").click()
    page.get_by_role("button", name="Delete court handbook").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    page.get_by_role("link", name="court handbook", exact=True).wait_for(state="detached")
    assert admin.ok("GET", "/api/v1/datasets")["datasets"] == []
    assert all(hit["dataset_id"] != dataset["id"] for hit in service_api.search(ANSWER, k=20))
    admin.close()
    assert tenant_id


def test_a_tenant_key_sees_only_its_tenant(page: Any, ui_server: LiveServer, service_api: Api) -> None:
    mine_id, mine = new_tenant(service_api, "mine-co", "editor")
    theirs_id, _ = new_tenant(service_api, "theirs-co")
    service_api.ok("POST", "/api/v1/datasets", 201, json={"name": "ours", "tenant_id": mine_id})
    service_api.ok("POST", "/api/v1/datasets", 201, json={"name": "their secrets", "tenant_id": theirs_id})
    sign_in(page, ui_server.url, mine["editor"].key)
    page.get_by_role("link", name="ours", exact=True).wait_for()
    assert page.get_by_role("link", name="their secrets").count() == 0
    assert page.get_by_role("link", name="Keys").count() == 0  # an editor manages no keys
    page.get_by_role("link", name="Jobs").click()
    page.get_by_role("link", name="Sandbox").click()
    page.get_by_label("Query").wait_for()
    assert "their secrets" not in page.locator("main").inner_text()
    page.goto(f"{ui_server.url}/ui/#/system")
    page.get_by_role("heading", name="System", level=1).wait_for()
    assert SERVICE_KEY not in page.content()
    mine["editor"].close()
