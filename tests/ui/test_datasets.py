"""The datasets screens (#/datasets, #/datasets/:id, the chunk viewer) in a real browser.

One tenant ("acme-ui") with an admin, an editor and a reader key; a dataset uploaded through the
API for the screens that read (files table, toggle, re-index, chunk viewer, phone width), and
datasets and files created through the UI where the UI's own forms and upload are the subject.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kb.conftest import SERVICE_KEY, Api, new_tenant
from tests.support.live_server import LiveServer
from tests.ui.conftest import PHONE, shot, sign_in

HARBOUR = "\n\n".join(
    [
        "# Harbour rules",
        "## Mooring",
        "Boats moor on the east quay between April and October; the harbour master assigns berths.",
        "## Fuel",
        "Diesel is sold at the fuel pontoon from seven in the morning until dusk, cash or card.",
    ]
)
TIDES = "High tide at the harbour mouth comes about forty minutes after high water at Dover."
HOSTILE_FILE = "<img src=x onerror=alert(1)>.md"
HOSTILE_TEXT = "<script>alert(2)</script> **bold**"
HOSTILE_DATASET = "<b onmouseover=alert(3)>x</b>"


@pytest.fixture(scope="module")
def acme(service_api: Api) -> Iterator[dict[str, Any]]:
    """The tenant, its keys, and a dataset with two indexed files (uploaded through the API)."""
    tenant_id, keys = new_tenant(service_api, "acme-ui", "admin", "editor", "reader")
    chunking = {"strategy": "recursive", "size": 200, "overlap": 0}
    body = {
        "name": "harbour",
        "tenant_id": tenant_id,
        "chunking": chunking,
        "description": "rules of the port",
    }
    ds = service_api.ok("POST", "/api/v1/datasets", 201, json=body)
    parts = [
        ("files", ("harbour.md", HARBOUR.encode(), "text/markdown")),
        ("files", ("tides.txt", TIDES.encode(), "text/plain")),
    ]
    sent = service_api.ok("POST", f"/api/v1/datasets/{ds['id']}/files", 202, files=parts)
    assert service_api.wait_job(sent["job"]["id"])["status"] == "succeeded"
    files = {f["name"]: f for f in sent["files"]}
    yield {"tenant_id": tenant_id, "keys": keys, "dataset": ds, "files": files}
    for key in keys.values():
        key.close()


def watch_dialogs(page: Any) -> list[str]:
    """Every JavaScript dialog (alert, confirm) the page opens: none may fire."""
    seen: list[str] = []

    def record(dialog: Any) -> None:
        seen.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", record)
    return seen


def file_row(page: Any, name: str) -> Any:
    return page.locator("table.files-table tbody tr").filter(
        has=page.get_by_role("link", name=name, exact=True)
    )


def no_horizontal_scroll(page: Any) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"the page scrolls sideways: {width}px"


def test_create_edit_and_delete_a_dataset(
    page: Any, ui_server: LiveServer, acme: dict[str, Any], tmp_path: Path
) -> None:
    sign_in(page, ui_server.url, acme["keys"]["admin"].key)
    page.get_by_role("heading", name="Datasets", level=1).wait_for()
    page.get_by_role("link", name="harbour", exact=True).wait_for()
    page.get_by_role("button", name="New dataset").click()
    form = page.locator("dialog.dataset-dialog")
    form.get_by_label("Name").fill("field notes")
    form.get_by_label("Description").fill("notes from the first survey")
    form.get_by_label("Strategy").select_option("recursive")
    form.get_by_label("Size").fill("300")
    form.get_by_label("Overlap").fill("20")
    form.get_by_label("Allowed roles").fill("reader, editor")
    form.get_by_role("button", name="Create").click()
    # a new dataset opens at once, on its Upload tab (it is empty)
    page.get_by_role("heading", name="field notes", level=1).wait_for()
    page.get_by_role("tab", name="Upload", selected=True).wait_for()
    assert page.url.endswith("?tab=upload")
    page.get_by_role("navigation", name="Breadcrumb").get_by_role("link", name="Datasets").click()
    row = page.locator("table.datasets-table tbody tr").filter(
        has=page.get_by_role("link", name="field notes")
    )
    row.wait_for()
    assert "notes from the first survey" in row.inner_text()
    assert "empty" in row.inner_text()
    made = next(
        d
        for d in acme["keys"]["admin"].ok("GET", "/api/v1/datasets")["datasets"]
        if d["name"] == "field notes"
    )
    assert made["chunking"] == {"strategy": "recursive", "size": 300, "overlap": 20}
    assert made["allowed_roles"] == ["editor", "reader"]

    page.get_by_label("Search datasets").fill("survey")
    page.get_by_role("link", name="harbour", exact=True).wait_for(state="detached")
    shot(page, "datasets", tmp_path)
    page.get_by_label("Search datasets").fill("")

    page.get_by_role("button", name="Edit field notes").click()
    shot(page, "dataset-form", tmp_path)
    form.get_by_label("Description").fill("notes from the second survey")
    form.get_by_role("button", name="Save").click()
    row.filter(has_text="notes from the second survey").wait_for()
    again = acme["keys"]["admin"].ok("GET", f"/api/v1/datasets/{made['id']}")
    assert again["description"] == "notes from the second survey"
    assert again["chunking"]["size"] == 300  # untouched fields are not sent

    page.get_by_role("button", name="Delete field notes").click()
    confirm = page.locator("dialog.confirm")
    assert "field notes" in confirm.inner_text()
    confirm.get_by_role("button", name="Delete").click()
    row.wait_for(state="detached")
    assert acme["keys"]["admin"].get(f"/api/v1/datasets/{made['id']}").status_code == 404


def test_chunking_is_locked_once_a_dataset_has_files(
    page: Any, ui_server: LiveServer, acme: dict[str, Any]
) -> None:
    editor = acme["keys"]["editor"]
    sign_in(page, ui_server.url, editor.key)
    page.get_by_role("button", name="Edit harbour").click()
    form = page.locator("dialog.dataset-dialog")
    assert "Fixed now that the dataset has files" in form.inner_text()
    # what the server would refuse is shown but not offered, and says why
    for name in ("Strategy", "Size", "Overlap"):
        control = form.get_by_label(name)
        assert control.is_disabled(), name
        assert control.get_attribute("aria-describedby") == "chunking-locked", name
    assert form.get_by_label("Size").input_value() == "200"
    form.get_by_role("button", name="Save").click()  # the rest still saves
    form.wait_for(state="detached")
    path = f"/api/v1/datasets/{acme['dataset']['id']}"
    assert editor.ok("GET", path)["chunking"]["size"] == 200
    refused = editor.patch(path, json={"chunking": {"strategy": "recursive", "size": 500}})
    assert refused.status_code == 409
    assert refused.json()["detail"]["code"] == "CONFLICT"


def test_a_reader_sees_no_buttons_that_change_anything(
    page: Any, ui_server: LiveServer, acme: dict[str, Any]
) -> None:
    sign_in(page, ui_server.url, acme["keys"]["reader"].key)
    page.get_by_role("link", name="harbour", exact=True).click()
    file_row(page, "harbour.md").wait_for()
    assert page.get_by_role("button", name="New dataset").count() == 0
    assert page.get_by_role("button", name=re.compile("^(Delete|Re-index|Edit)")).count() == 0
    assert page.get_by_role("checkbox").count() == 0
    page.get_by_role("tab", name="Upload").click()
    page.get_by_text("may read this dataset but not add files").wait_for()
    assert page.locator("input[type=file]").count() == 0
    page.goto(f"{ui_server.url}/ui/#/datasets")
    page.get_by_role("link", name="harbour", exact=True).wait_for()
    assert page.get_by_role("button", name=re.compile("New dataset|Delete|Edit")).count() == 0


def test_upload_shows_progress_and_each_file_ends_indexed_or_failed(
    page: Any, ui_server: LiveServer, acme: dict[str, Any], tmp_path: Path
) -> None:
    admin = acme["keys"]["admin"]
    ds = admin.ok("POST", "/api/v1/datasets", 201, json={"name": "uploads"})
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.md").write_text("# Notes\n\nThe lock gates open two hours either side of high water.\n")
    (docs / "plain.txt").write_text("The pilot boat leaves from the north steps at the turn of the tide.\n")
    (docs / "berths.csv").write_text("berth,boat,length\n1,Skylark,9.5\n2,Curlew,11.0\n3,Osprey,7.2\n")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.7\n\x00\x01garbage that is not a PDF at all\xff\xfe")
    sign_in(page, ui_server.url, admin.key)
    page.goto(f"{ui_server.url}/ui/#/datasets/{ds['id']}?tab=upload")
    page.get_by_role("tab", name="Upload", selected=True).wait_for()
    page.get_by_text("Drop files here").wait_for()
    page.locator("input[type=file]").set_input_files([str(p) for p in sorted(docs.iterdir())])
    rows = page.locator(".upload-row")
    assert rows.count() == 4
    assert page.locator(".upload-row progress").count() == 4
    page.locator(".upload-summary").filter(has_text=re.compile(r"Done: 4 of 4 files · 1 failed")).wait_for(
        timeout=60_000
    )
    for name in ("notes.md", "plain.txt", "berths.csv"):
        row = rows.filter(has_text=name)
        assert row.locator(".upload-state").inner_text() == "indexed", row.inner_text()
        assert re.search(r"\b[1-9]\d* chunks?\b", row.inner_text()), row.inner_text()
    broken = rows.filter(has_text="broken.pdf")
    assert broken.locator(".upload-state").inner_text() == "failed"
    code = admin.ok("GET", f"/api/v1/datasets/{ds['id']}/files")
    failed = next(f for f in code["files"] if f["name"] == "broken.pdf")
    assert failed["status"] == "failed"
    assert failed["error"]["code"] in broken.inner_text()
    shot(page, "upload-progress", tmp_path)

    page.get_by_role("tab", name="Files").click()
    assert page.url.endswith("?tab=files")
    for name in ("notes.md", "plain.txt", "berths.csv"):
        row = file_row(page, name)
        row.get_by_text("indexed", exact=True).wait_for()
        chunks = row.locator("td[data-label=Chunks]").inner_text()
        assert int(chunks) > 0, (name, chunks)
    broken_row = file_row(page, "broken.pdf")
    assert "failed" in broken_row.inner_text()
    assert failed["error"]["code"] in broken_row.locator("td[data-label=Error]").inner_text()
    page.get_by_label("Filter files").fill("failed")
    file_row(page, "notes.md").wait_for(state="detached")
    assert file_row(page, "broken.pdf").is_visible()


def test_disable_a_file_and_reindex_it(
    page: Any, ui_server: LiveServer, acme: dict[str, Any], tmp_path: Path
) -> None:
    admin = acme["keys"]["admin"]
    ds, tides = acme["dataset"], acme["files"]["tides.txt"]
    sign_in(page, ui_server.url, admin.key)
    page.goto(f"{ui_server.url}/ui/#/datasets/{ds['id']}")
    toggle = page.get_by_role("checkbox", name="In search: tides.txt")
    assert toggle.is_checked()
    toggle.uncheck()
    page.get_by_text("“tides.txt” is out of search").wait_for()
    assert admin.ok("GET", f"/api/v1/datasets/{ds['id']}/files/{tides['id']}")["enabled"] is False
    page.reload()
    toggle = page.get_by_role("checkbox", name="In search: tides.txt")
    toggle.wait_for()
    assert not toggle.is_checked()
    shot(page, "dataset-files", tmp_path)
    toggle.check()
    page.get_by_text("“tides.txt” is back in search").wait_for()
    assert admin.ok("GET", f"/api/v1/datasets/{ds['id']}/files/{tides['id']}")["enabled"] is True

    before = {j["id"] for j in admin.ok("GET", "/api/v1/jobs")["jobs"]}
    page.get_by_role("button", name="Re-index harbour.md").click()
    page.get_by_text("Re-indexing “harbour.md”").wait_for()
    deadline = time.monotonic() + 30
    while True:
        jobs = [j for j in admin.ok("GET", "/api/v1/jobs")["jobs"] if j["id"] not in before]
        assert [j["kind"] for j in jobs] in ([], ["reindex"]), jobs
        if jobs and jobs[0]["status"] == "succeeded":
            break
        assert time.monotonic() < deadline, jobs
        time.sleep(0.2)
    file_row(page, "harbour.md").get_by_text("indexed", exact=True).wait_for()
    page.get_by_role("button", name="Re-index all").click()
    page.get_by_text("Re-indexing 2 files").wait_for()


def test_the_chunk_viewer_shows_a_files_chunks(
    page: Any, ui_server: LiveServer, acme: dict[str, Any], tmp_path: Path
) -> None:
    ds, harbour = acme["dataset"], acme["files"]["harbour.md"]
    total = acme["keys"]["reader"].ok("GET", f"/api/v1/datasets/{ds['id']}/files/{harbour['id']}/chunks")[
        "total"
    ]
    assert total >= 2
    sign_in(page, ui_server.url, acme["keys"]["reader"].key)
    page.goto(f"{ui_server.url}/ui/#/datasets/{ds['id']}")
    page.get_by_role("link", name="harbour.md").click()
    page.get_by_role("heading", name="harbour.md", level=1).wait_for()
    assert page.locator("article.chunk").count() == total
    page.get_by_text("Diesel is sold at the fuel pontoon", exact=False).wait_for()
    assert "Harbour rules" in page.locator("article.chunk").first.inner_text()
    assert page.get_by_text(f"{total} chunks").is_visible()
    shot(page, "chunks", tmp_path)
    page.goto(f"{ui_server.url}/ui/#/datasets/{ds['id']}/files/{harbour['id']}?split=1")
    marked = page.locator("article.chunk.focused")
    marked.wait_for()
    assert marked.get_attribute("id") == "chunk-1"
    page.get_by_role("link", name="harbour", exact=True).click()
    page.get_by_role("heading", name="harbour", level=1).wait_for()


def test_hostile_names_render_as_text(page: Any, ui_server: LiveServer, acme: dict[str, Any]) -> None:
    dialogs = watch_dialogs(page)
    sign_in(page, ui_server.url, acme["keys"]["admin"].key)
    page.get_by_role("button", name="New dataset").click()
    form = page.locator("dialog.dataset-dialog")
    form.get_by_label("Name").fill(HOSTILE_DATASET)
    form.get_by_role("button", name="Create").click()
    page.get_by_role("heading", name=HOSTILE_DATASET, level=1).wait_for()
    page.get_by_role("navigation", name="Breadcrumb").get_by_role("link", name="Datasets").click()
    link = page.get_by_role("link", name=HOSTILE_DATASET, exact=True)
    link.hover()
    page.get_by_text(HOSTILE_DATASET, exact=True).first.wait_for()
    link.click()
    page.get_by_role("heading", name=HOSTILE_DATASET, level=1).wait_for()
    page.get_by_role("tab", name="Upload").click()
    page.locator("input[type=file]").set_input_files(
        files=[{"name": HOSTILE_FILE, "mimeType": "text/markdown", "buffer": HOSTILE_TEXT.encode()}]
    )
    page.locator(".upload-row .upload-state", has_text="indexed").wait_for(timeout=30_000)
    page.locator(".upload-row").get_by_text(HOSTILE_FILE, exact=True).wait_for()
    page.get_by_role("tab", name="Files").click()
    page.get_by_role("link", name=HOSTILE_FILE, exact=True).click()
    page.get_by_role("heading", name=HOSTILE_FILE, level=1).wait_for()
    page.get_by_text("<script>alert(2)</script>", exact=False).wait_for()
    assert page.locator("img[src=x]").count() == 0
    assert page.locator("main script, main b").count() == 0
    page.wait_for_timeout(300)
    assert dialogs == []


def test_the_screens_work_at_phone_width_and_in_dark_mode(
    page: Any, ui_server: LiveServer, acme: dict[str, Any], tmp_path: Path
) -> None:
    sign_in(page, ui_server.url, acme["keys"]["admin"].key)
    page.set_viewport_size(PHONE)
    page.goto(f"{ui_server.url}/ui/#/datasets")
    link = page.get_by_role("link", name="harbour", exact=True)
    link.wait_for()
    assert link.is_visible()
    no_horizontal_scroll(page)
    assert page.get_by_role("button", name="New dataset").is_visible()
    shot(page, "datasets-phone", tmp_path)
    link.click()
    row = file_row(page, "harbour.md")
    row.wait_for()
    assert row.is_visible()
    assert row.get_by_role("button", name="Re-index harbour.md").is_visible()
    no_horizontal_scroll(page)
    shot(page, "dataset-files-phone", tmp_path)
    page.get_by_role("tab", name="Sources").click()
    page.get_by_label("Kind").wait_for()
    no_horizontal_scroll(page)

    page.set_viewport_size({"width": 1280, "height": 860})
    page.emulate_media(color_scheme="dark")
    page.get_by_role("tab", name="Files").click()
    file_row(page, "tides.txt").wait_for()
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(17, 19, 23)", background
    shot(page, "dataset-files-dark", tmp_path)
    page.get_by_role("tab", name="Upload").focus()
    page.keyboard.press("ArrowRight")
    assert page.get_by_role("tab", name="Sources", selected=True).is_visible()
    assert page.evaluate("document.activeElement.textContent") == "Sources"


def test_the_service_key_picks_a_tenant_and_adds_a_folder_source(
    page: Any, ui_server: LiveServer, acme: dict[str, Any], service_api: Api, tmp_path: Path
) -> None:
    folder = tmp_path / "manuals"
    folder.mkdir()
    (folder / "winch.md").write_text(
        "# Winch\n\nGrease the harbour winch every Monday before the first lift.\n"
    )
    sign_in(page, ui_server.url, SERVICE_KEY)
    page.get_by_role("button", name="New dataset").click()
    form = page.locator("dialog.dataset-dialog")
    form.get_by_label("Name").fill("manuals")
    form.get_by_label("Tenant").select_option(label="acme-ui")
    form.get_by_role("button", name="Create").click()
    page.get_by_role("heading", name="manuals", level=1).wait_for()
    page.get_by_role("navigation", name="Breadcrumb").get_by_role("link", name="Datasets").click()
    row = page.locator("table.datasets-table tbody tr").filter(has=page.get_by_role("link", name="manuals"))
    assert "acme-ui" in row.locator("td[data-label=Tenant]").inner_text()
    made = next(d for d in service_api.ok("GET", "/api/v1/datasets")["datasets"] if d["name"] == "manuals")
    assert made["tenant_id"] == acme["tenant_id"]

    row.get_by_role("link", name="manuals").click()
    page.get_by_role("tab", name="Sources").click()
    page.get_by_label("Kind").select_option("folder")
    page.get_by_label("Folder path").fill(str(folder))
    page.get_by_label("Ignore").fill("*.tmp, drafts/")
    page.get_by_role("button", name="Add source").click()
    sources = page.locator(".sources-panel table.data tbody tr")
    sources.filter(has_text=str(folder)).wait_for()
    assert "ignore *.tmp, drafts/" in sources.first.inner_text()
    page.locator(".source-job").filter(has_text=re.compile(r"succeeded · 1 of 1 items")).wait_for(
        timeout=30_000
    )
    page.get_by_role("button", name=f"Sync {folder} now").click()
    page.locator(".source-job").filter(has_text=re.compile(r"^Sync of .*succeeded")).wait_for(timeout=30_000)
    page.get_by_role("tab", name="Files").click()
    file_row(page, "winch.md").get_by_text("indexed", exact=True).wait_for()
    page.get_by_role("tab", name="Sources").click()
    page.get_by_role("button", name=f"Remove {folder}").click()
    page.locator("dialog.confirm").get_by_role("button", name="Remove").click()
    sources.filter(has_text="No sources").wait_for()
    assert service_api.ok("GET", f"/api/v1/datasets/{made['id']}/files")["files"] == []
