"""The admin screens (#/jobs, #/jobs/:id, #/keys, #/system) in a real browser.

One tenant ("harbour-co") with admin, editor and reader keys and a dataset; files are uploaded
through the API (the subject here is what the screens show of the jobs, live, not the upload
form). Keys are created and revoked through the UI; the new secret is read from its dialog and
used to sign in from a fresh browser context.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kb.conftest import SERVICE_KEY, Api, new_tenant
from tests.support.live_server import LiveServer
from tests.ui.conftest import DESKTOP, PHONE, PageProblems, playwright_sync, shot, sign_in, wait_until

NOTE = "# Harbour notes\n\nBoats moor on the east quay between April and October.\n"
TIDES = "High tide at the harbour mouth comes about forty minutes after high water at Dover.\n"
GARBAGE_PDF = b"%PDF-1.4\nthis is not really a pdf \x00\x01\x02 at all"


@pytest.fixture(scope="module")
def harbour(service_api: Api) -> Iterator[dict[str, Any]]:
    """A tenant with an admin, an editor and a reader key, and an empty dataset."""
    tenant_id, keys = new_tenant(service_api, "harbour-co", "admin", "editor", "reader")
    body = {"name": "harbour", "tenant_id": tenant_id}
    ds = service_api.ok("POST", "/api/v1/datasets", 201, json=body)
    yield {"tenant_id": tenant_id, "keys": keys, "dataset": ds}
    for key in keys.values():
        key.close()


def upload(api: Api, dataset_id: str, *files: tuple[str, bytes]) -> dict[str, Any]:
    parts = [("files", (name, data)) for name, data in files]
    sent = api.ok("POST", f"/api/v1/datasets/{dataset_id}/files", 202, files=parts)
    return sent["job"]  # type: ignore[no-any-return]


def job_row(page: Any, job_id: str) -> Any:
    return page.locator(f'table.jobs-table tr[data-job-id="{job_id}"]')


def no_horizontal_scroll(page: Any) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"] + 1, f"the page scrolls sideways: {width}px"


def nav_links(page: Any) -> list[str]:
    return page.get_by_role("navigation", name="Main").get_by_role("link").all_inner_texts()  # type: ignore[no-any-return]


# ---- jobs -------------------------------------------------------------------------------------


def test_the_jobs_list_follows_a_job_live_until_it_succeeds(
    page: Any, ui_server: LiveServer, service_api: Api, harbour: dict[str, Any], tmp_path: Path
) -> None:
    sign_in(page, ui_server.url, SERVICE_KEY)
    page.goto(f"{ui_server.url}/ui/#/jobs")
    page.get_by_role("heading", name="Jobs").wait_for()
    page.locator(".live-state[data-state=live]").wait_for()
    # the upload happens after the page opened: only the event stream can bring the job in
    job = upload(
        service_api, harbour["dataset"]["id"], ("note.md", NOTE.encode()), ("tides.txt", TIDES.encode())
    )
    row = job_row(page, job["id"])
    row.wait_for()
    page.locator(f'table.jobs-table tr[data-job-id="{job["id"]}"][data-status="succeeded"]').wait_for(
        timeout=60_000
    )
    assert "2 of 2" in row.inner_text()
    assert row.get_by_role("link", name="harbour").is_visible()
    assert row.locator("progress").evaluate("p => [p.value, p.max]") == [2, 2]
    # a finished job offers no Cancel; one without failures no Retry
    assert row.get_by_role("button", name=re.compile("^Cancel")).count() == 0
    assert row.get_by_role("button", name=re.compile("^Retry")).count() == 0
    shot(page, "jobs", tmp_path)
    status = page.get_by_label("Status")
    status.select_option("failed")
    assert "status=failed" in page.url
    assert row.count() == 0
    status.select_option("succeeded")
    assert row.is_visible()
    # the filter is in the address: a reload keeps it
    page.reload()
    page.get_by_role("heading", name="Jobs").wait_for()
    assert page.get_by_label("Status").input_value() == "succeeded"
    job_row(page, job["id"]).wait_for()
    job_row(page, job["id"]).get_by_role("link", name=re.compile("^Ingest")).click()
    page.get_by_role("heading", name=re.compile("^Ingest job")).wait_for()
    items = page.locator("table.items-table tbody tr")
    assert items.count() == 2
    assert sorted(items.locator("td[data-label=Item]").all_inner_texts()) == ["note.md", "tides.txt"]
    assert items.locator(".badge-done").count() == 2


def test_a_partly_failed_job_says_so_in_the_list_filters_page_and_system_counts(
    page: Any, ui_server: LiveServer, harbour: dict[str, Any], tmp_path: Path
) -> None:
    editor = harbour["keys"]["editor"]
    job = upload(editor, harbour["dataset"]["id"], ("broken.pdf", GARBAGE_PDF), ("ok.md", NOTE.encode()))
    finished = editor.wait_job(job["id"])
    assert (finished["status"], finished["done"], finished["failed"]) == ("partial", 1, 1), finished
    code = next(i["error"]["code"] for i in finished["items"] if i["error"])
    assert code == "EXTRACTION_FAILED"

    sign_in(page, ui_server.url, editor.key)
    page.goto(f"{ui_server.url}/ui/#/jobs")
    row = page.locator(f'table.jobs-table tr[data-job-id="{job["id"]}"][data-status="partial"]')
    row.wait_for()
    assert row.locator(".badge-partial").inner_text() == "partly failed"
    assert row.locator(".badge-succeeded").count() == 0
    # the first failed item's code, in the list already (the list's fetch may land after the stream's
    # first event, which carries no errors)
    playwright_sync.expect(row).to_contain_text(code)
    assert row.get_by_role("button", name=re.compile("^Cancel")).count() == 0
    # its one failure is permanent (the stream's errors say so): no Retry in the list either
    playwright_sync.expect(row.get_by_role("button", name=re.compile("^Retry"))).to_have_count(0)
    status = page.get_by_label("Status")
    for choice, shown in (("succeeded", False), ("failed", False), ("partial", True), ("failures", True)):
        status.select_option(choice)
        assert row.is_visible() is shown, choice
    assert "partly failed (" in status.locator("option[value=partial]").inner_text()
    assert "with failures (" in status.locator("option[value=failures]").inner_text()

    row.get_by_role("link", name=re.compile("^Ingest")).click()
    page.get_by_role("heading", name=re.compile("^Ingest job")).wait_for()
    assert page.locator(".job-summary .badge-partial").inner_text() == "partly failed"
    failed = page.locator("table.items-table tbody tr").filter(has_text="broken.pdf")
    assert code in failed.inner_text()
    assert failed.locator(".badge-failed").is_visible()
    page.get_by_label("Only failed items").check()
    assert page.locator("table.items-table tbody tr").count() == 1
    # the corrupt PDF would fail the same way again: no Retry, and the page says why
    assert page.get_by_role("button", name=re.compile("^(Retry|Cancel)")).count() == 0
    note = page.locator(".retry-note")
    assert note.is_visible()
    assert "Nothing to retry" in note.inner_text()
    assert f"1 {code}" in note.inner_text()
    shot(page, "job", tmp_path)

    page.goto(f"{ui_server.url}/ui/#/system")
    counts = page.get_by_role("region", name="Counts").locator(".job-counts")
    partly = counts.locator("li").filter(has_text="partly failed")
    partly.wait_for()
    assert int(partly.inner_text().split()[-1]) >= 1
    partly.get_by_role("link").click()
    page.wait_for_url(re.compile(r"#/jobs\?status=partial$"))
    job_row(page, job["id"]).wait_for()
    assert page.get_by_label("Status").input_value() == "partial"


def test_retry_runs_only_what_can_succeed_and_says_so(
    page: Any, ui_server: LiveServer, harbour: dict[str, Any]
) -> None:
    """A job cancelled before its file ran may run again: Retry queues a new job and says how many.

    Two long jobs fill the worker (two at a time), so the job stays queued while it is cancelled."""
    editor = harbour["keys"]["editor"]
    dataset_id = harbour["dataset"]["id"]
    paragraph = "The harbour master logs every mooring, fuel sale and tide by hand. " * 40
    big = [(f"ledger-{n}.md", f"# Ledger {n}\n\n{paragraph}\n\n".encode() * 9) for n in range(2)]
    blockers = [upload(editor, dataset_id, big[0]), upload(editor, dataset_id, big[1])]
    try:
        job = upload(editor, dataset_id, ("retried.md", TIDES.encode()))
        editor.ok("POST", f"/api/v1/jobs/{job['id']}/cancel")
        ended = editor.wait_job(job["id"])
    finally:
        for blocker in blockers:
            editor.post(f"/api/v1/jobs/{blocker['id']}/cancel")
        for blocker in blockers:
            editor.wait_job(blocker["id"])
    if ended["status"] != "cancelled" or not ended["failed"]:
        pytest.skip("this machine ran the job before the cancel came in: nothing was left to retry")
    assert ended["items"][0]["error"] == {
        "code": "CANCELLED",
        "message": ended["items"][0]["error"]["message"],
        "permanent": False,
    }
    sign_in(page, ui_server.url, editor.key)
    page.goto(f"{ui_server.url}/ui/#/jobs/{job['id']}")
    page.get_by_role("heading", name=re.compile("^Ingest job")).wait_for()
    assert page.locator(".retry-note").is_hidden()
    page.get_by_role("button", name=re.compile("^Retry")).click()
    page.get_by_text(re.compile(r"Retrying 1 file\. Job \w+ queued\.")).wait_for()
    page.wait_for_url(re.compile(r"#/jobs/(?!" + re.escape(job["id"]) + ")[^/]+$"))
    new_id = page.url.rsplit("/", 1)[1]
    page.locator(".job-id").filter(has_text=new_id).wait_for()
    again = editor.wait_job(new_id)
    assert (again["total"], again["status"]) == (1, "succeeded")
    # the page follows the new job live to its end
    page.locator(".job-summary .badge-succeeded").wait_for()


def test_a_reader_sees_jobs_but_no_cancel_or_retry(
    page: Any, ui_server: LiveServer, harbour: dict[str, Any]
) -> None:
    editor, reader = harbour["keys"]["editor"], harbour["keys"]["reader"]
    job = upload(editor, harbour["dataset"]["id"], ("broken-again.pdf", GARBAGE_PDF))
    assert editor.wait_job(job["id"])["failed"] == 1
    sign_in(page, ui_server.url, reader.key)
    page.goto(f"{ui_server.url}/ui/#/jobs/{job['id']}")
    page.get_by_role("heading", name=re.compile("^Ingest job")).wait_for()
    page.locator("table.items-table").filter(has_text="broken-again.pdf").wait_for()
    assert page.get_by_role("button", name=re.compile("^(Retry|Cancel)")).count() == 0
    assert "Keys" not in nav_links(page)


def test_a_running_job_is_cancelled_after_a_confirmation(
    page: Any, ui_server: LiveServer, harbour: dict[str, Any]
) -> None:
    """Two long jobs fill the worker (two at a time), so a third stays queued while it is cancelled."""
    editor = harbour["keys"]["editor"]
    dataset_id = harbour["dataset"]["id"]
    paragraph = "The harbour master logs every mooring, fuel sale and tide by hand. " * 40
    big = [(f"log-{n}.md", f"# Log {n}\n\n{paragraph}\n\n".encode() * 9) for n in range(8)]
    sign_in(page, ui_server.url, editor.key)
    page.goto(f"{ui_server.url}/ui/#/jobs")
    page.locator(".live-state[data-state=live]").wait_for()
    blockers = [upload(editor, dataset_id, *big[:4]), upload(editor, dataset_id, *big[4:])]
    target = upload(editor, dataset_id, ("late.md", NOTE.encode()))
    try:
        row = job_row(page, target["id"])
        cancel = row.get_by_role("button", name=re.compile("^Cancel"))
        cancel.wait_for()
        if editor.ok("GET", f"/api/v1/jobs/{target['id']}")["status"] != "queued":
            pytest.skip(
                "this machine ran the blocking jobs too fast: the job left the queue before the click"
            )
        cancel.click()
        dialog = page.get_by_role("dialog")
        assert "Cancel the ingest job" in dialog.inner_text()
        dialog.get_by_role("button", name="Cancel job").click()
        page.locator(f'table.jobs-table tr[data-job-id="{target["id"]}"][data-status="cancelled"]').wait_for()
        ended = editor.wait_job(target["id"])
        assert ended["status"] == "cancelled", ended
        assert row.get_by_role("button", name=re.compile("^Cancel")).count() == 0
        assert row.get_by_role(
            "button", name=re.compile("^Retry")
        ).is_visible()  # a cancelled job may run again
    finally:
        for blocker in blockers:
            editor.post(f"/api/v1/jobs/{blocker['id']}/cancel")
        for blocker in blockers:
            editor.wait_job(blocker["id"])


def test_the_jobs_list_fits_a_phone(
    page: Any, ui_server: LiveServer, harbour: dict[str, Any], tmp_path: Path
) -> None:
    sign_in(page, ui_server.url, harbour["keys"]["editor"].key)
    page.set_viewport_size(PHONE)
    page.goto(f"{ui_server.url}/ui/#/jobs")
    page.locator("table.jobs-table tbody tr[data-job-id]").first.wait_for()
    no_horizontal_scroll(page)
    shot(page, "jobs-phone", tmp_path)
    page.locator("table.jobs-table tbody tr[data-job-id] a.job-link").first.click()
    page.get_by_role("heading", name=re.compile("job")).wait_for()
    page.locator("table.items-table tbody tr").first.wait_for()
    no_horizontal_scroll(page)


# ---- keys -------------------------------------------------------------------------------------


def test_the_service_key_creates_a_tenant_and_a_key_whose_secret_is_shown_once(
    browser: Any, page: Any, ui_server: LiveServer, tmp_path: Path
) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=ui_server.url)
    sign_in(page, ui_server.url, SERVICE_KEY)
    page.get_by_role("link", name="Keys").click()
    page.get_by_role("heading", name="Keys", exact=True).wait_for()
    page.get_by_label("Tenant name").fill("keys-co")
    page.get_by_role("button", name="Create tenant").click()
    page.get_by_role("heading", name="Keys of keys-co").wait_for()
    assert page.locator("table.tenants-table").filter(has_text="keys-co").is_visible()
    form = page.get_by_role("form", name="New key for keys-co")
    form.get_by_label("Role").fill("editor")
    form.get_by_label("Name").fill("ci robot")
    form.get_by_role("button", name="Create key").click()

    dialog = page.get_by_role("dialog", name=re.compile("New editor key for keys-co"))
    dialog.wait_for()
    assert "you will not see it again" in dialog.inner_text()
    secret = dialog.get_by_label("Secret").input_value()
    assert secret.startswith("rgd_")
    dialog.get_by_role("button", name="Copy").click()
    dialog.locator(".copy-state").filter(has_text=re.compile("Copied|Selected")).wait_for()
    if "Copied" in dialog.locator(".copy-state").inner_text():
        assert page.evaluate("navigator.clipboard.readText()") == secret
    dialog.get_by_role("button", name="Done").click()
    dialog.wait_for(state="detached")
    keys = page.locator("table.keys-table tbody tr")
    keys.filter(has_text="ci robot").wait_for()
    assert secret not in page.content()
    assert secret not in page.url
    stored = page.evaluate("JSON.stringify({...localStorage}) + JSON.stringify({...sessionStorage})")
    assert secret not in stored
    shot(page, "keys", tmp_path)

    # the new key works, from another browser: its tenant and role in the header, no Keys link
    other = browser.new_context(viewport=DESKTOP)
    try:
        editor_page = other.new_page()
        problems = PageProblems(editor_page)
        sign_in(editor_page, ui_server.url, secret)
        assert editor_page.get_by_text("keys-co · editor").is_visible()
        assert "Keys" not in nav_links(editor_page)

        # revoked by the service key: the editor's next step lands on sign-in
        keys.filter(has_text="ci robot").get_by_role("button", name=re.compile("^Revoke")).click()
        confirm = page.get_by_role("dialog")
        assert "Revoke the editor key" in confirm.inner_text()
        confirm.get_by_role("button", name="Revoke").click()
        page.locator("table.keys-table td.empty").wait_for()
        # the next step is a route change (not a click on the Jobs link: a poll of the page the
        # editor is on may already have met the 401 and shown sign-in, which has no such link)
        editor_page.evaluate("location.hash = '#/jobs'")
        editor_page.get_by_label("API key").wait_for()
        assert "#/signin" in editor_page.url
        assert problems.items == [], problems.items
    finally:
        other.close()


def test_a_keys_ui_sessions_are_listed_and_revoked_from_the_keys_screen(
    browser: Any, page: Any, ui_server: LiveServer, service_api: Api, tmp_path: Path
) -> None:
    _, keys = new_tenant(service_api, "sessions-co", "admin", "reader")
    other = browser.new_context(viewport=DESKTOP, user_agent="ReaderBrowser/1.0")
    try:
        reader_page = other.new_page()
        problems = PageProblems(reader_page)
        sign_in(reader_page, ui_server.url, keys["reader"].key)
        sign_in(page, ui_server.url, keys["admin"].key)
        page.goto(f"{ui_server.url}/ui/#/keys")
        page.get_by_role("heading", name="Keys of sessions-co").wait_for()
        sessions = page.locator("table.sessions-table tbody tr")
        theirs = sessions.filter(has_text="ReaderBrowser/1.0")
        theirs.wait_for()
        assert "(reader)" in theirs.inner_text()
        assert sessions.filter(has_text="this session").count() == 1  # the admin's own, marked
        reader_row = page.locator("table.keys-table tbody tr").filter(has_text="reader")
        assert reader_row.locator("td[data-label='UI sessions']").inner_text() == "1"
        shot(page, "keys-sessions", tmp_path)

        theirs.get_by_role("button", name=re.compile("^Revoke")).click()
        confirm = page.get_by_role("dialog")
        assert "signed out at once" in confirm.inner_text()
        confirm.get_by_role("button", name="Revoke").click()
        theirs.wait_for(state="detached")
        reader_row.locator("td[data-label='UI sessions']").filter(has_text=re.compile(r"^0$")).wait_for()
        # the reader's browser is signed out: its next step lands on sign-in
        reader_page.get_by_role("link", name="Jobs").click()
        reader_page.get_by_label("API key").wait_for()
        assert problems.items == [], problems.items
    finally:
        other.close()
        for key in keys.values():
            key.close()


def test_a_tenant_admin_sees_only_its_tenant_and_others_have_no_keys_screen(
    page: Any, ui_server: LiveServer, service_api: Api, harbour: dict[str, Any], tmp_path: Path
) -> None:
    _, elsewhere = new_tenant(service_api, "elsewhere-co", "admin")
    sign_in(page, ui_server.url, harbour["keys"]["admin"].key)
    assert "Keys" in nav_links(page)
    page.get_by_role("link", name="Keys").click()
    page.get_by_role("heading", name="Keys of harbour-co").wait_for()
    page.locator("table.keys-table tbody tr").filter(has_text="reader").wait_for()
    assert page.get_by_role("button", name="Create tenant").count() == 0
    assert "elsewhere-co" not in page.content()
    roles = page.locator("table.keys-table tbody td[data-label=Role]").all_inner_texts()
    assert sorted(roles) == ["admin", "editor", "reader"]
    page.set_viewport_size(PHONE)
    no_horizontal_scroll(page)
    shot(page, "keys-phone", tmp_path)
    page.set_viewport_size(DESKTOP)
    for name in ("editor", "reader"):
        page.context.clear_cookies()
        sign_in(page, ui_server.url, harbour["keys"][name].key)
        assert "Keys" not in nav_links(page), name
        page.goto(f"{ui_server.url}/ui/#/keys")
        page.get_by_text("Managing keys needs an admin key").wait_for()
    elsewhere["admin"].close()


def test_the_key_form_works_from_the_keyboard(page: Any, ui_server: LiveServer, service_api: Api) -> None:
    _, keys = new_tenant(service_api, "keyboard-co", "admin")
    sign_in(page, ui_server.url, keys["admin"].key)
    page.goto(f"{ui_server.url}/ui/#/keys")
    page.get_by_role("heading", name="Keys of keyboard-co").wait_for()
    page.locator("h1").focus()
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.name") == "role":
            break
    else:
        pytest.fail("Tab never reached the Role field")
    page.keyboard.press("Control+a")
    page.keyboard.type("hr")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.name") == "key-name"
    page.keyboard.type("HR portal")
    page.keyboard.press("Enter")
    dialog = page.get_by_role("dialog", name=re.compile("New hr key for keyboard-co"))
    dialog.wait_for()
    secret = dialog.get_by_label("Secret").input_value()
    page.keyboard.press("Escape")  # closes it like Done: the secret goes with it
    dialog.wait_for(state="detached")
    assert secret not in page.content()
    page.locator("table.keys-table tbody tr").filter(has_text="HR portal").wait_for()
    # focus returns to the form's button, not to the top of the page
    wait_until(
        page,
        "!!document.activeElement && document.activeElement.textContent === 'Create key'",
        "the focus returns to Create key",
    )
    keys["admin"].close()


# ---- system -----------------------------------------------------------------------------------


def test_system_shows_readiness_the_model_and_masked_settings(
    page: Any, ui_server: LiveServer, tmp_path: Path
) -> None:
    sign_in(page, ui_server.url, SERVICE_KEY)
    page.get_by_role("link", name="System").click()
    page.get_by_role("heading", name="System").wait_for()
    health = page.get_by_role("region", name="Health")
    health.locator(".badge-ready").wait_for()
    manifest = page.get_by_role("region", name="Index manifest")
    assert "all-MiniLM-L6-v2" in manifest.inner_text()
    assert re.search(r"Dimension\s*384", manifest.inner_text(), re.I)
    caps = page.get_by_role("region", name="Capabilities")
    assert re.search(r"Search modes\s*hybrid, dense", caps.inner_text(), re.I)
    counts = page.get_by_role("region", name="Counts")
    assert counts.locator(".stat-card").filter(has_text="Points").is_visible()

    settings = page.get_by_role("region", name="Settings in effect")
    assert settings.locator("details[open]").count() == 0  # collapsed until asked
    settings.get_by_label("Search settings").fill("api_key")
    row = settings.locator("tr").filter(has_text="server.api_key")
    row.wait_for()
    assert row.locator(".masked").inner_text() == "***"
    assert "match" in settings.locator(".settings-count").inner_text()
    assert settings.locator("tr:visible").filter(has_text="embedding.model").count() == 0
    settings.get_by_label("Search settings").fill("")
    settings.get_by_role("button", name="Expand all").click()
    settings.locator("tr").filter(has_text="embedding.model").first.wait_for()
    assert SERVICE_KEY not in page.content()
    page.evaluate("window.scrollTo(0, 0)")
    shot(page, "system", tmp_path)
    page.emulate_media(color_scheme="dark")
    settings.get_by_label("Search settings").fill("key")
    settings.locator("tr").filter(has_text="server.api_key").wait_for()
    page.evaluate("document.getElementById('settings-title').scrollIntoView(); window.scrollBy(0, -70)")
    shot(page, "system-dark", tmp_path)


def test_a_tenant_key_sees_the_system_but_no_settings(
    page: Any, ui_server: LiveServer, harbour: dict[str, Any], tmp_path: Path
) -> None:
    sign_in(page, ui_server.url, harbour["keys"]["reader"].key)
    page.goto(f"{ui_server.url}/ui/#/system")
    page.get_by_role("region", name="Health").locator(".badge-ready").wait_for()
    assert "harbour-co · reader" in page.get_by_role("region", name="Health").inner_text()
    assert "all-MiniLM-L6-v2" in page.get_by_role("region", name="Index manifest").inner_text()
    assert page.get_by_role("region", name="Settings in effect").count() == 0
    assert page.get_by_text("api_key").count() == 0
    counts = page.get_by_role("region", name="Counts")
    assert counts.locator(".stat-card").filter(has_text="Points").count() == 0
    page.set_viewport_size(PHONE)
    no_horizontal_scroll(page)
    shot(page, "system-phone", tmp_path)
