"""The dataset's Migrations tab (issue 31 §1), in a real browser against a live ragd: an admin starts
a chunking migration from the form with auto switch off and sees its job's progress; the complete
migration waits for a manual switch, both versions' evaluation side by side, and a second start is
refused with its code; Switch serves the new chunking, Rollback the old one again, and the dataset
answers searches throughout. At desktop and phone width, every control named and nothing wider
than the screen."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragd.api.app import create_app
from ragd.settings import MigrationSettings
from tests.kb.conftest import SERVICE_KEY, Api, kb_settings, new_tenant
from tests.support.live_server import LiveServer
from tests.ui.conftest import PHONE, shot, sign_in
from tests.ui.test_accessibility import UNNAMED

FILES = {
    "orchard.md": "# Orchard\n\nThe cider press runs from late September until the last apples are "
    "picked. Pickers start at dawn and the crates are stacked by the barn door before noon.",
    "forge.md": "# Forge\n\nThe blacksmith heats the iron in the forge and hammers it flat on the anvil. "
    "Horseshoes are fitted on Thursdays, and the bellows are mended every spring.",
    "mill.md": "# Mill\n\nThe water mill grinds rye on Mondays and wheat for the rest of the week. "
    "Flour is sold by the sack at the gate, and the wheel stops when the river runs low.",
}
QUERIES = {"when is the cider press running": "orchard.md", "who hammers iron on the anvil": "forge.md"}


@pytest.fixture(scope="module")
def ui_server(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[LiveServer]:
    """Its own server: a settle of 2 s keeps a migration building long enough to be seen doing so."""
    data_dir = tmp_path_factory.mktemp("ui-migrations") / "data"
    settings = kb_settings(data_dir, model_cache, None, migrations=MigrationSettings(settle_s=2.0))
    with LiveServer(create_app(settings)) as live:
        live.wait_ready()
        yield live


@pytest.fixture(scope="module")
def farm(ui_server: LiveServer) -> Iterator[dict[str, Any]]:
    service = Api(ui_server.url, SERVICE_KEY)
    _, keys = new_tenant(service, "farmers", "admin")
    admin = keys["admin"]
    ds = admin.ok("POST", "/api/v1/datasets", 201, json={"name": "farm"})
    parts = [("files", (name, text.encode(), "text/markdown")) for name, text in FILES.items()]
    sent = admin.ok("POST", f"/api/v1/datasets/{ds['id']}/files", 202, files=parts)
    assert admin.wait_job(sent["job"]["id"])["status"] == "succeeded"
    ids = {f["name"]: f["id"] for f in admin.ok("GET", f"/api/v1/datasets/{ds['id']}/files")["files"]}
    labels = [{"query": q, "files": [ids[name]]} for q, name in QUERIES.items()]
    admin.ok("POST", f"/api/v1/datasets/{ds['id']}/evalset", 201, json={"queries": labels})
    yield {"dataset": ds, "admin": admin}
    for api in (admin, service):
        api.close()


def _answers(admin: Api, dataset_id: str) -> None:
    for query, name in QUERIES.items():
        assert admin.search(query, dataset_id, k=3)[0]["name"] == name, query


@pytest.mark.slow
def test_an_admin_starts_a_chunking_migration_switches_it_and_rolls_it_back(
    page: Any, ui_server: LiveServer, farm: dict[str, Any], tmp_path: Path
) -> None:
    ds, admin = farm["dataset"], farm["admin"]
    base = f"/api/v1/datasets/{ds['id']}"
    before = admin.ok("GET", base)["chunking"]
    sign_in(page, ui_server.url, admin.key)
    page.goto(f"{ui_server.url}/ui/#/datasets/{ds['id']}?tab=migrations")
    page.get_by_text("No migrations yet").wait_for()
    assert page.evaluate(UNNAMED) == []

    page.get_by_label("Chunking strategy").select_option("token")
    page.get_by_label("Chunk size").fill("24")
    page.get_by_label("Overlap").fill("0")
    page.get_by_label("Switch by itself when complete and not worse").uncheck()
    page.get_by_role("button", name="Start migration").click()

    card = page.locator("article.migration").first
    card.locator(".migration-progress small").filter(has_text="of 3 files").wait_for()
    assert card.locator(".migration-state").inner_text() == "building"
    started = admin.ok("GET", f"{base}/migrations")["migrations"][0]
    assert started["target"]["chunking"] == {"strategy": "token", "size": 24, "overlap": 0}
    assert started["auto_switch"] is False
    title = f"Migration {started['id'][:8]}"
    _answers(admin, ds["id"])

    page.locator(f"article.migration[data-id='{started['id']}'][data-state='ready']").wait_for(
        timeout=120_000
    )
    card.get_by_text("waits for a switch").wait_for()
    ready = admin.ok("GET", f"{base}/migrations/{started['id']}")
    cells = card.locator("table.migration-eval tr[data-metric='ndcg_at_10'] td.num")
    assert cells.all_inner_texts() == [
        f"{ready['reports']['old']['ndcg_at_10']:.3f}",
        f"{ready['reports']['new']['ndcg_at_10']:.3f}",
    ]
    assert card.get_by_role("button", name=f"Roll back {title}").count() == 0
    assert page.evaluate(UNNAMED) == []
    page.get_by_role("button", name="Start migration").click()  # a ready one is still in flight
    page.locator(".migration-form-status.error").filter(has_text="MIGRATION_RUNNING").wait_for()
    assert len(admin.ok("GET", f"{base}/migrations")["migrations"]) == 1
    card.scroll_into_view_if_needed()
    shot(page, "dataset-migrations", tmp_path)

    card.get_by_role("button", name=f"Switch {title}").click()
    page.locator("article.migration[data-state='switched']").wait_for()
    assert admin.ok("GET", base)["chunking"]["size"] == 24
    page.locator(".dataset-summary").get_by_text("token · 24").wait_for()  # the summary follows
    _answers(admin, ds["id"])

    card.get_by_role("button", name=f"Roll back {title}").click()
    page.locator("article.migration[data-state='rolled_back']").wait_for()
    assert admin.ok("GET", f"{base}/migrations/{started['id']}")["state"] == "rolled_back"
    assert admin.ok("GET", base)["chunking"] == before
    assert card.get_by_role("button").count() == 0  # nothing left to do with it
    _answers(admin, ds["id"])

    page.set_viewport_size(PHONE)
    card.scroll_into_view_if_needed()
    assert page.evaluate(UNNAMED) == []
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    shot(page, "dataset-migrations-phone", tmp_path)
