"""The sandbox's "Answers it" button (issue 31 §2), in a real browser against a live ragd: an editor
marks a hit and the query joins the dataset's evaluation set labelled with the hit's file, from the
sandbox; a reader's click is refused with the server's code shown, nothing stored."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from tests.kb.conftest import Api, new_tenant
from tests.support.live_server import LiveServer
from tests.ui.conftest import sign_in

QUERY = "when is the cider press running"
FILES = {
    "orchard.md": "# Orchard\n\nThe cider press runs from late September until the last apples are picked.",
    "forge.md": "# Forge\n\nThe blacksmith heats the iron in the forge and hammers it flat on the anvil.",
}


@pytest.fixture(scope="module")
def marked(service_api: Api) -> Iterator[dict[str, Any]]:
    tenant_id, keys = new_tenant(service_api, "cidery", "editor", "reader")
    ds = service_api.ok("POST", "/api/v1/datasets", 201, json={"name": "farm", "tenant_id": tenant_id})
    parts = [("files", (name, text.encode(), "text/markdown")) for name, text in FILES.items()]
    sent = service_api.ok("POST", f"/api/v1/datasets/{ds['id']}/files", 202, files=parts)
    assert service_api.wait_job(sent["job"]["id"])["status"] == "succeeded"
    yield {"dataset": ds, **keys}
    for api in keys.values():
        api.close()


def _open(page: Any, url: str, dataset_id: str) -> Any:
    page.goto(f"{url}/ui/#/sandbox?q={quote(QUERY)}&ds={dataset_id}&k=2")
    first = page.locator("li.hit[data-rank='1']")
    first.wait_for()
    assert first.get_attribute("data-file") == "orchard.md"
    return first


def test_answers_it_adds_the_query_labelled_with_the_hits_file(
    page: Any, ui_server: LiveServer, marked: dict[str, Any]
) -> None:
    ds, editor = marked["dataset"], marked["editor"]
    sign_in(page, ui_server.url, editor.key)
    first = _open(page, ui_server.url, ds["id"])
    first.get_by_role("button", name="Answers it").click()
    first.get_by_text("Added to the evaluation set").wait_for()
    assert first.get_by_role("button", name="Answers it").is_disabled()
    files = {f["name"]: f["id"] for f in editor.ok("GET", f"/api/v1/datasets/{ds['id']}/files")["files"]}
    stored = editor.ok("GET", f"/api/v1/datasets/{ds['id']}/evalset")["queries"]
    assert [(q["query"], q["files"], q["source"]) for q in stored] == [
        (QUERY, [files["orchard.md"]], "sandbox")
    ]


def test_a_readers_click_shows_the_refusal_and_stores_nothing(
    page: Any, ui_server: LiveServer, marked: dict[str, Any]
) -> None:
    ds, reader = marked["dataset"], marked["reader"]
    before = reader.ok("GET", f"/api/v1/datasets/{ds['id']}/evalset")["total"]
    sign_in(page, ui_server.url, reader.key)
    first = _open(page, ui_server.url, ds["id"])
    first.get_by_role("button", name="Answers it").click()
    first.locator(".answers-note .error").filter(has_text="FORBIDDEN").wait_for()
    assert first.get_by_role("button", name="Answers it").is_enabled()
    assert reader.ok("GET", f"/api/v1/datasets/{ds['id']}/evalset")["total"] == before


def test_the_evaluation_tab_runs_the_set_beside_the_current_settings(
    page: Any, ui_server: LiveServer, marked: dict[str, Any]
) -> None:
    ds, editor = marked["dataset"], marked["editor"]
    path = f"/api/v1/datasets/{ds['id']}/evalset"
    for q in editor.ok("GET", path)["queries"]:
        editor.ok("DELETE", f"{path}/{q['id']}")
    labels = [
        {"query": QUERY, "files": ["orchard.md"]},
        {"query": "who hammers iron on the anvil", "files": ["forge"]},
    ]
    editor.ok("POST", path, 201, json={"queries": labels})
    sign_in(page, ui_server.url, editor.key)
    page.goto(f"{ui_server.url}/ui/#/datasets/{ds['id']}?tab=evaluation")
    page.get_by_text("2 labelled queries").wait_for()
    page.get_by_label("Mode").select_option("sparse")
    page.get_by_label("Results (k)").fill("5")
    page.get_by_role("button", name="Run against current settings").click()
    page.locator(".eval-status").filter(has_text="2 of 2 queries").wait_for()
    expected = editor.ok(
        "POST", f"/api/v1/datasets/{ds['id']}/eval", json={"mode": "sparse", "k": 5, "baseline": {}}
    )
    row = page.locator("table.eval-metrics tr[data-metric='ndcg_at_10'] td.num")
    assert row.all_inner_texts() == [
        f"{expected['baseline']['ndcg_at_10']:.3f}",
        f"{expected['report']['ndcg_at_10']:.3f}",
    ]
    assert page.locator("tr.eval-query").count() == 2
    assert page.locator("table.eval-metrics").get_by_text("recall@5").is_visible()
    page.get_by_role("button", name=f"Delete the labelled query {QUERY}").click()
    page.get_by_text("1 labelled query").wait_for()
    assert [q["query"] for q in editor.ok("GET", path)["queries"]] == [labels[1]["query"]]
