"""The first hour's rough edges in the web UI (issue 35): chunks' Markdown shown formatted, rates
with units and an ETA that moves, short error messages with their details on demand."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kb.conftest import SERVICE_KEY, Api, new_tenant
from tests.support.live_server import LiveServer
from tests.ui.conftest import PHONE, shot, sign_in

NOTE = """# Tide tables

The **harbour master** posts the *tide tables* at `07:00`, see [the almanac](https://example.org/tides).
A [bad link](javascript:alert(1)) stays text, and so does <img src=x onerror=alert(1)>.

- spring tides
- neap tides
  1. first quarter
  2. last quarter

| berth | depth |
|---|---|
| north | 4.5 m |
| south | 3.1 m |

```
gate open 2h either side of high water
```
"""


@pytest.fixture(scope="module")
def harbour(service_api: Api) -> Iterator[dict[str, Any]]:
    tenant_id, keys = new_tenant(service_api, "polish", "editor")
    body = {"name": "tides", "tenant_id": tenant_id, "chunking": {"strategy": "recursive", "size": 4000}}
    ds = service_api.ok("POST", "/api/v1/datasets", 201, json=body)
    sent = service_api.ok(
        "POST",
        f"/api/v1/datasets/{ds['id']}/files",
        202,
        files=[("files", ("tides.md", NOTE.encode(), "text/markdown"))],
    )
    service_api.wait_job(sent["job"]["id"])
    files = service_api.ok("GET", f"/api/v1/datasets/{ds['id']}/files")["files"]
    yield {"dataset": ds, "file": files[0], "editor": keys["editor"]}
    keys["editor"].close()


def test_the_chunk_viewer_shows_markdown_formatted_and_the_raw_text_a_click_away(
    page: Any, ui_server: LiveServer, harbour: dict[str, Any], tmp_path: Path
) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    sign_in(page, ui_server.url, SERVICE_KEY)
    page.goto(f"{ui_server.url}/ui/#/datasets/{harbour['dataset']['id']}/files/{harbour['file']['id']}")
    chunk = page.locator("article.chunk").first
    chunk.wait_for()
    md = chunk.locator(".chunk-md")
    assert md.locator("h3").inner_text() == "Tide tables"  # a chunk's "#" sits below the page's h1
    assert md.locator("strong").inner_text() == "harbour master"
    assert md.locator("em").first.inner_text() == "tide tables"
    assert md.locator("code").first.inner_text() == "07:00"
    assert md.locator("ul > li").count() == 2
    assert md.locator("ul ol > li").all_inner_texts() == ["first quarter", "last quarter"]
    assert md.locator("table td").all_inner_texts() == ["north", "4.5 m", "south", "3.1 m"]
    assert "gate open 2h" in md.locator("pre code").inner_text()
    links = md.locator("a")
    assert links.count() == 1  # only the https link is a link
    assert links.first.get_attribute("href") == "https://example.org/tides"
    assert links.first.get_attribute("rel") == "noopener noreferrer nofollow"
    assert "bad link (javascript:alert(1))" in md.inner_text()
    assert "<img src=x onerror=alert(1)>" in md.inner_text()  # raw HTML stays text
    assert page.locator("main img").count() == 0
    assert chunk.locator("pre.chunk-text").count() == 0
    shot(page, "chunks-markdown", tmp_path)

    raw = page.get_by_role("button", name="Raw text")
    raw.click()
    assert raw.get_attribute("aria-pressed") == "true"
    assert md.count() == 0
    assert "The **harbour master** posts" in chunk.locator("pre.chunk-text").inner_text()
    raw.click()
    assert md.is_visible()
    page.set_viewport_size(PHONE)  # a chunk's table scrolls inside its card, not the page sideways
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    page.wait_for_timeout(200)
    assert dialogs == []


def test_rates_have_units_and_the_eta_moves_while_nothing_finishes(page: Any, ui_server: LiveServer) -> None:
    """The words the upload and job screens use: files/s and MB/s, an ETA that a stall lengthens."""
    sign_in(page, ui_server.url, SERVICE_KEY)
    out = page.evaluate(
        """async () => {
        const { jobSummary } = await import("/ui/static/js/datasets/jobs.js");
        const { movingRate, fmtRate, fmtEta } = await import("/ui/static/js/datasets/rate.js");
        const job = { kind: "ingest", status: "running", total: 10, done: 3, failed: 0, chunks: 40 };
        job.rate_per_s = 3.3;
        job.eta_s = 0.3;
        const sync = { ...job, kind: "sync", rate_per_s: 12, eta_s: 75 };
        let now = 0;
        const files = movingRate(8, () => now);
        files.add(0);
        now = 5;
        files.add(5);
        const early = [files.rate(), files.eta(10)];
        now = 11; // six seconds and no file finished
        const stalled = [files.rate(), files.eta(10)];
        return {
          summary: jobSummary(job),
          sync: jobSummary(sync),
          bytes: fmtRate(3.5 * 1024 * 1024, "bytes"),
          early, stalled, soon: fmtEta(0.3), later: fmtEta(6.2),
        };
      }"""
    )
    assert "3.3 files/s" in out["summary"]
    assert " /s" not in out["summary"]
    assert "almost done" in out["summary"]
    assert "ms left" not in out["summary"]
    assert "12 items/s" in out["sync"]
    assert "about 75 s left" in out["sync"]
    assert out["bytes"] == "3.5 MB/s"
    assert out["early"] == [1, 5]
    rate, eta = out["stalled"]
    assert rate == pytest.approx(5 / 11)
    assert eta == pytest.approx(11)  # longer than the 5 s said before the stall, not frozen
    assert (out["soon"], out["later"]) == ("almost done", "about 7 s left")


def test_an_unsupported_file_says_so_briefly_with_the_formats_on_demand(
    page: Any, ui_server: LiveServer, harbour: dict[str, Any], tmp_path: Path
) -> None:
    sign_in(page, ui_server.url, harbour["editor"].key)
    page.set_viewport_size(PHONE)
    page.goto(f"{ui_server.url}/ui/#/datasets/{harbour['dataset']['id']}?tab=upload")
    page.get_by_text("Drop files here").wait_for()
    page.locator("input[type=file]").set_input_files(
        files=[
            {"name": "blob.xyz", "mimeType": "application/octet-stream", "buffer": bytes(range(256)) * 4},
            {
                "name": "moorings.md",
                "mimeType": "text/markdown",
                "buffer": b"# Moorings\n\nBuoy 7 is free.\n",
            },
        ]
    )
    page.locator(".upload-summary").filter(has_text=re.compile(r"Done: 2 of 2 files · 1 failed")).wait_for(
        timeout=60_000
    )
    failed = page.locator(".upload-row").filter(has_text="blob.xyz")
    detail = failed.locator(".upload-detail")
    assert detail.inner_text().startswith("UNSUPPORTED_TYPE: 'blob.xyz' is not a file type ragd can read")
    formats = detail.get_by_text(re.compile("^supported: .*EPUB"))
    assert "EPUB" not in detail.inner_text()  # ~23 formats: behind "More", not in every row
    assert not formats.is_visible()
    shot(page, "upload-unsupported", tmp_path)
    failed.get_by_text("More", exact=True).click()
    assert formats.is_visible()

    # the job's page: the message once, its one hint on demand (not the UI's second hint as well)
    jobs = harbour["editor"].ok("GET", "/api/v1/jobs")["jobs"]
    job = next(j for j in jobs if j["dataset_id"] == harbour["dataset"]["id"] and j["total"] == 2)
    page.goto(f"{ui_server.url}/ui/#/jobs/{job['id']}")
    item = page.locator(".item-error").filter(has_text="UNSUPPORTED_TYPE")
    item.wait_for()
    text = item.inner_text()
    assert "ragd cannot read this kind of file" not in text
    assert "EPUB" not in text
    assert text.count("not a file type ragd can read") == 1
    item.get_by_text("More", exact=True).click()
    assert item.inner_text().count("EPUB") == 1
