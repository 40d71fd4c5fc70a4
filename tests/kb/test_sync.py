"""Sources converge: a watched folder and a crawled site, edited between syncs, end with the index
holding exactly their current content (no stale chunk, no missing file, no duplicate)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kb.conftest import Api, new_tenant
from tests.sources.site import LoopbackSite, Page
from tests.support.live_server import LiveServer


@pytest.fixture(scope="module")
def admin(service: Api, kb_server: LiveServer) -> Iterator[Api]:
    tenant_id, keys = new_tenant(service, "syncers", "admin")
    root = Path(kb_server.app.state.ragd.settings.data_dir).parent  # where its folders are made
    grant = {"kind": "folder", "target": str(root)}
    service.ok("POST", f"/api/v1/tenants/{tenant_id}/grants", 201, json=grant)
    yield keys["admin"]
    keys["admin"].close()


def eventually(check: Callable[[], Any], timeout_s: float = 60.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"did not converge: {what} (last: {last!r})")


def files_of(api: Api, dataset_id: str) -> dict[str, dict[str, Any]]:
    return {f["item_key"]: f for f in api.ok("GET", f"/api/v1/datasets/{dataset_id}/files")["files"]}


def markers_found(api: Api, dataset_id: str, markers: list[str]) -> set[str]:
    hits = api.search(" ".join(markers), dataset_id, k=50)
    return {m for m in markers for h in hits if m in h["content"]}


def converged(api: Api, dataset_id: str, expected: dict[str, str], every: list[str]) -> bool:
    """Files are exactly ``expected`` (key -> marker), all indexed, and search finds exactly their markers."""
    files = files_of(api, dataset_id)
    if set(files) != set(expected) or any(f["status"] != "indexed" for f in files.values()):
        return False
    return markers_found(api, dataset_id, every) == set(expected.values())


def note(marker: str) -> str:
    return f"# Note\nThe {marker} procedure is documented here in full detail.\n"


@pytest.mark.slow_on_postgres  # > 5 s on PostgreSQL; the SQLite case stays in the fast tier
def test_watched_folder_converges_on_create_modify_rename_delete(
    admin: Api, kb_server: LiveServer, tmp_path_factory: pytest.TempPathFactory
) -> None:
    data_dir = Path(kb_server.app.state.ragd.settings.data_dir)
    root = data_dir.parent / f"watched-{os.getpid()}-{time.monotonic_ns()}"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text(note("amberwolf"))
    (root / "sub" / "b.md").write_text(note("bluefinch"))
    (root / ".hidden").mkdir()
    (root / ".hidden" / "secret.md").write_text(note("hiddenmoth"))
    ds = admin.ok("POST", "/api/v1/datasets", 201, json={"name": "watched"})
    made = admin.ok(
        "POST",
        f"/api/v1/datasets/{ds['id']}/sources",
        202,
        json={"kind": "folder", "config": {"path": str(root)}},
    )
    first = admin.wait_job(made["job"]["id"])
    assert (first["status"], first["done"], first["failed"]) == ("succeeded", 2, 0)
    every = ["amberwolf", "bluefinch", "hiddenmoth", "crimsonowl", "dustyhare"]
    eventually(
        lambda: converged(admin, ds["id"], {"a.md": "amberwolf", "sub/b.md": "bluefinch"}, every),
        what="initial",
    )

    (root / "a.md").write_text(note("crimsonowl"))  # modify
    eventually(
        lambda: converged(admin, ds["id"], {"a.md": "crimsonowl", "sub/b.md": "bluefinch"}, every),
        what="modify",
    )
    (root / "sub" / "b.md").rename(root / "c.md")  # rename
    eventually(
        lambda: converged(admin, ds["id"], {"a.md": "crimsonowl", "c.md": "bluefinch"}, every), what="rename"
    )
    (root / "d.md").write_text(note("dustyhare"))  # create
    (root / "a.md").unlink()  # delete
    eventually(
        lambda: converged(admin, ds["id"], {"c.md": "bluefinch", "d.md": "dustyhare"}, every),
        what="create+delete",
    )
    for _ in range(10):  # a burst of edits
        (root / "d.md").write_text(note("dustyhare") + f"edit {time.monotonic_ns()}\n")
    eventually(
        lambda: converged(admin, ds["id"], {"c.md": "bluefinch", "d.md": "dustyhare"}, every), what="burst"
    )
    files = files_of(admin, ds["id"])
    assert sum(f["chunks"] for f in files.values()) == len(files)  # one chunk each: nothing duplicated
    sources = admin.ok("GET", f"/api/v1/datasets/{ds['id']}/sources")["sources"]
    assert sources[0]["last_error"] is None


def test_crawled_site_converges_on_recrawl(admin: Api) -> None:
    pages = {
        "/docs/": Page.html(
            "Docs home", "<p>Welcome to the kestrelhawk documentation.</p>", links=["/docs/a", "/docs/b"]
        ),
        "/docs/a": Page.html("Page A", "<p>The marmotpeak setting controls retries.</p>", links=["/docs/"]),
        "/docs/b": Page.html("Page B", "<p>The sablefox flag enables audit logs.</p>"),
        "/blog/x": Page.html("Blog", "<p>outsideprefix should never be indexed.</p>"),
    }
    every = ["kestrelhawk", "marmotpeak", "sablefox", "outsideprefix", "willowcrane", "ravenquill"]
    with LoopbackSite(pages) as site:
        ds = admin.ok("POST", "/api/v1/datasets", 201, json={"name": "site"})
        config = {"url": site.url("/docs/"), "max_depth": 2, "delay_s": 0}
        made = admin.ok(
            "POST", f"/api/v1/datasets/{ds['id']}/sources", 202, json={"kind": "web", "config": config}
        )
        first = admin.wait_job(made["job"]["id"])
        assert (first["status"], first["done"]) == ("succeeded", 3)
        expected = {
            site.url("/docs/"): "kestrelhawk",
            site.url("/docs/a"): "marmotpeak",
            site.url("/docs/b"): "sablefox",
        }
        assert converged(admin, ds["id"], expected, every)
        hits = admin.search("Navigation menu Products Pricing Contact the sales team", ds["id"], k=10)
        assert not any("Navigation menu" in h["content"] for h in hits)  # boilerplate removed

        site.pages["/docs/a"] = Page.html("Page A", "<p>The willowcrane setting controls retries.</p>")
        del site.pages["/docs/b"]
        site.pages["/docs/"] = Page.html(
            "Docs home", "<p>Welcome to the kestrelhawk docs.</p>", links=["/docs/a", "/docs/c"]
        )
        site.pages["/docs/c"] = Page.html("Page C", "<p>The ravenquill option is new.</p>")
        source_id = made["source"]["id"]
        again = admin.ok("POST", f"/api/v1/datasets/{ds['id']}/sources/{source_id}/sync", 202)["job"]
        second = admin.wait_job(again["id"])
        assert second["status"] == "succeeded", second
        stages = sorted(i["stage"] for i in second["items"])
        assert stages == ["deleted", "done", "done", "done"]  # b gone; home, a changed; c new
        expected = {
            site.url("/docs/"): "kestrelhawk",
            site.url("/docs/a"): "willowcrane",
            site.url("/docs/c"): "ravenquill",
        }
        assert converged(admin, ds["id"], expected, every)

        third = admin.wait_job(
            admin.ok("POST", f"/api/v1/datasets/{ds['id']}/sources/{source_id}/sync", 202)["job"]["id"]
        )
        assert sorted(i["stage"] for i in third["items"]) == ["unchanged"] * 3

        # /docs/a answers 503 and the home page now reaches /docs/c only through it: c is unknown
        # this time, not gone, so nothing is removed
        site.pages["/docs/"] = Page.html(
            "Docs home", "<p>Welcome to the kestrelhawk docs.</p>", links=["/docs/a"]
        )
        site.pages["/docs/a"] = Page(b"maintenance", 503, "text/plain")
        fourth = admin.wait_job(
            admin.ok("POST", f"/api/v1/datasets/{ds['id']}/sources/{source_id}/sync", 202)["job"]["id"]
        )
        assert fourth["status"] == "partial", fourth  # one page failed, the other is unchanged
        assert sorted((i["stage"], (i["error"] or {}).get("code")) for i in fourth["items"]) == [
            ("failed", "FETCH_FAILED"),
            ("unchanged", None),
        ]
        assert set(files_of(admin, ds["id"])) == set(expected)
        assert markers_found(admin, ds["id"], every) == set(expected.values())

        # /docs/a is back and no page links to /docs/c any more: now it goes
        site.pages["/docs/a"] = Page.html("Page A", "<p>The willowcrane setting controls retries.</p>")
        fifth = admin.wait_job(
            admin.ok("POST", f"/api/v1/datasets/{ds['id']}/sources/{source_id}/sync", 202)["job"]["id"]
        )
        assert sorted(i["stage"] for i in fifth["items"]) == [
            "deleted",
            "done",
            "unchanged",
        ]  # a: failed last time
        del expected[site.url("/docs/c")]
        assert converged(admin, ds["id"], expected, every)

        removed = admin.ok("DELETE", f"/api/v1/datasets/{ds['id']}/sources/{source_id}")
        assert removed["files_deleted"] == 2
        assert files_of(admin, ds["id"]) == {}
        assert markers_found(admin, ds["id"], every) == set()


def test_folder_sources_are_confined_for_tenant_keys(admin: Api, tmp_path: Path) -> None:
    ds = admin.ok("POST", "/api/v1/datasets", 201, json={"name": "confined"})
    r = admin.post(
        f"/api/v1/datasets/{ds['id']}/sources", json={"kind": "folder", "config": {"path": "/etc"}}
    )
    assert r.status_code == 403
    assert r.json()["detail"]["code"] == "SOURCE_NOT_GRANTED"
    r = admin.post(f"/api/v1/datasets/{ds['id']}/sources", json={"kind": "ftp", "config": {}})
    assert r.status_code == 422
    r = admin.post(
        f"/api/v1/datasets/{ds['id']}/sources", json={"kind": "web", "config": {"url": "file:///etc/passwd"}}
    )
    assert r.status_code == 400
