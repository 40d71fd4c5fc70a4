"""The page view in a real browser: a sandbox hit, a chunk in the chunk viewer and a chat citation
open the page their passage came from, as the server draws it with the passage marked.

One live ragd (with a scripted LLM upstream for the chat) holds a PDF drawn by PDFium
(:func:`tests.support.page_pdfs.text_pdf`): three pages of three shapes (Letter, Letter landscape,
A5), each with a topic of its own, so the shown image's aspect says which page the browser got.
What is asserted is what the browser has: the image's natural size, its pixels read back through a
canvas (the marked passage is coloured, the page's text is black on white), the route it asked for
(``/pages/N``, ``?chunk=`` one of that page's chunks or none), the dialog's focus and keyboard
behaviour, its error state, and its fit at phone width.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pytest

from tests.kb.conftest import SERVICE_KEY, Api, new_tenant
from tests.support.live_server import LiveServer
from tests.support.page_pdfs import text_pdf
from tests.support.scripted_http import Reply, ScriptedServer, chunk_event
from tests.ui.conftest import PHONE, chat_live_server, shot, sign_in, wait_until

CHAT = "/v1/chat/completions"
FILE = "handbook.pdf"
# (width, height) in points, then the page's lines
PAGES: list[tuple[tuple[float, float], list[str]]] = [
    (
        (612, 792),
        [
            "Skerryvore lighthouse handbook",
            "The lighthouse stands on a reef twelve miles out to sea and was finished in 1844.",
            "Supplies arrive by boat once a fortnight when the swell allows a landing at the jetty.",
        ],
    ),
    (
        (792, 612),
        [
            "The clockwork lens",
            "The keeper winds the clockwork lens mechanism every four hours through the night",
            "and writes each winding in the lamp book beside the weather and the time.",
            "The weights fall eleven metres down the tower in four hours; a bell rings when they",
            "reach the floor, so a keeper who dozes off is woken before the light stops turning.",
            "The lens floats on a bath of mercury and turns once every thirty seconds, which",
            "gives Skerryvore its signature of two white flashes every half minute.",
            "Brass and glass are polished each morning after the lamp is put out at sunrise.",
        ],
    ),
    (
        (420, 595),
        [
            "Fog signals",
            "A compressed air horn is sounded",
            "whenever visibility falls below two miles,",
            "two blasts every ninety seconds.",
            "The engine room holds two oil engines:",
            "one runs while the other stands ready.",
            "The air receivers are drained weekly",
            "and the log notes every hour of sound.",
        ],
    ),
]
NOTICE = "notice.pdf"
NOTICE_PAGES: list[tuple[tuple[float, float], list[str]]] = [
    ((612, 792), ["Harbour office", "The harbour office closes at noon on Saturdays."])
]
LENS_QUESTION = "How often does the keeper wind the clockwork lens?"
FOG_QUESTION = "When is the compressed air fog horn sounded?"
# the shown image: its natural size, its page, its alt text and how many of its pixels are coloured
SHOWN = """(() => {
  const img = document.querySelector("dialog.page-view img.page-image");
  const canvas = document.createElement("canvas");
  canvas.width = img.naturalWidth;
  canvas.height = img.naturalHeight;
  const g = canvas.getContext("2d");
  g.drawImage(img, 0, 0);
  const d = g.getImageData(0, 0, canvas.width, canvas.height).data;
  let coloured = 0;
  for (let i = 0; i < d.length; i += 4) {
    if (Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 48) coloured++;
  }
  const size = { width: img.naturalWidth, height: img.naturalHeight };
  return { page: Number(img.dataset.page), ...size, alt: img.alt, coloured };
})()"""
LOADED = """(() => {
  const img = document.querySelector("dialog.page-view img.page-image");
  const busy = document.querySelector("dialog.page-view [aria-busy]");
  return !!img && img.complete && img.naturalWidth > 0 && !busy;
})()"""
# the image's size in CSS pixels and the frame's room and scroll width
FITS = """(() => {
  const frame = document.querySelector("dialog.page-view .page-frame");
  const img = frame.querySelector("img");
  return [img.width, img.height, frame.clientWidth, frame.clientHeight, frame.scrollWidth];
})()"""
MARKED_PIXELS = 400  # a highlighted line of text at the server's DPI: thousands; black text: ~0


def streamed(text: str) -> Reply:
    events: list[dict[str, Any] | str] = [chunk_event({"role": "assistant", "content": text})]
    return Reply.sse([*events, chunk_event({}, "stop"), "[DONE]"])


@pytest.fixture(scope="module")
def upstream() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        yield server


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, model_cache: Path, upstream: ScriptedServer
) -> Iterator[LiveServer]:
    with chat_live_server(tmp_path_factory.mktemp("page-view") / "data", model_cache, upstream.url) as live:
        yield live


@pytest.fixture(scope="module")
def corpus(server: LiveServer) -> Iterator[dict[str, Any]]:
    """A dataset holding the handbook (its chunks with their pages) and a notice (deleted by a test)."""
    service = Api(server.url, SERVICE_KEY)
    tenant_id, _ = new_tenant(service, "lights")
    chunking = {"strategy": "recursive", "size": 120, "overlap": 0}
    ds = service.ok(
        "POST", "/api/v1/datasets", 201, json={"name": "lights", "tenant_id": tenant_id, "chunking": chunking}
    )
    parts = [
        ("files", (FILE, text_pdf(PAGES)[0], "application/pdf")),
        ("files", (NOTICE, text_pdf(NOTICE_PAGES)[0], "application/pdf")),
    ]
    sent = service.ok("POST", f"/api/v1/datasets/{ds['id']}/files", 202, files=parts)
    assert service.wait_job(sent["job"]["id"])["status"] == "succeeded"
    files = service.ok("GET", f"/api/v1/datasets/{ds['id']}/files")["files"]
    file_id = next(f["id"] for f in files if f["name"] == FILE)
    notice_id = next(f["id"] for f in files if f["name"] == NOTICE)
    chunks = service.ok("GET", f"/api/v1/datasets/{ds['id']}/files/{file_id}/chunks")["chunks"]
    assert {c["page"] for c in chunks} == {0, 1, 2}, chunks  # one page or more a chunk, none shared
    assert all(c.get("page_image") for c in chunks), chunks
    yield {"dataset": ds, "file_id": file_id, "notice_id": notice_id, "chunks": chunks}
    service.close()


class PageRequests:
    """The page routes the browser asked for: (n, chunk or None), in order."""

    def __init__(self, page: Any) -> None:
        self.asked: list[tuple[int, str | None]] = []
        page.on("request", self._request)

    def _request(self, request: Any) -> None:
        url = urlsplit(request.url)
        if "/pages/" in url.path:
            assert request.headers.get("x-ragd-ui") == "1"  # the session cookie counts only with it
            chunk = parse_qs(url.query).get("chunk")
            self.asked.append((int(url.path.rsplit("/", 1)[1]), chunk[0] if chunk else None))

    def last_was(self, n: int, marking: set[str] | None = None) -> None:
        """The last page asked for was ``n``, with ``?chunk=`` one of ``marking`` (the ids of the
        chunks on that page), or none when ``marking`` is None."""
        assert self.asked, "no page was asked for"
        asked, chunk = self.asked[-1]
        assert asked == n, self.asked
        assert chunk in marking if marking is not None else chunk is None, (self.asked, marking)


def on_page(corpus: dict[str, Any], n: int) -> set[str]:
    """The ids of the handbook's chunks on page ``n`` (1-based)."""
    return {c["id"] for c in corpus["chunks"] if c["page"] == n - 1}


def shown(page: Any) -> dict[str, Any]:
    wait_until(page, LOADED, "the page's image is shown")
    out: dict[str, Any] = page.evaluate(SHOWN)
    return out


def assert_page(seen: dict[str, Any], n: int) -> None:
    """The image is page ``n`` (1-based): its aspect is that page's."""
    width, height = PAGES[n - 1][0]
    assert seen["page"] == n
    assert abs(seen["width"] / seen["height"] - width / height) < 0.01, (seen, width, height)
    assert seen["width"] >= width  # at least 72 DPI: readable, not a thumbnail


def focused_label(page: Any) -> str | None:
    label: str | None = page.evaluate(
        "document.activeElement && document.activeElement.getAttribute('aria-label')"
    )
    return label


def within_phone(locator: Any, what: str) -> None:
    box = locator.bounding_box()
    assert box["x"] >= 0, (what, box)
    assert box["x"] + box["width"] <= PHONE["width"], (what, box)


def percent(text: str) -> int:
    assert text.endswith("%"), text
    return int(text[:-1])


def sandbox(page: Any, server: LiveServer, query: str) -> Any:
    page.goto(f"{server.url}/ui/#/sandbox?q={quote(query)}&k=3")
    first = page.locator("li.hit[data-rank='1']")
    first.wait_for()
    assert first.get_attribute("data-file") == FILE
    return first


def test_a_sandbox_hit_opens_its_page_with_the_passage_marked(
    page: Any, server: LiveServer, corpus: dict[str, Any], tmp_path: Path
) -> None:
    asked = PageRequests(page)
    sign_in(page, server.url, SERVICE_KEY)
    first = sandbox(page, server, LENS_QUESTION)
    opener = first.get_by_role("button", name=f"Page 2 of {FILE}")
    opener.click()
    dialog = page.get_by_role("dialog", name=FILE)
    dialog.wait_for()
    seen = shown(page)
    assert_page(seen, 2)
    assert seen["alt"] == f"Page 2 of {FILE}, the passage marked"
    assert seen["coloured"] >= MARKED_PIXELS, seen
    asked.last_was(2, on_page(corpus, 2))  # ?chunk= marks the hit's passage
    assert "Page 2" in dialog.locator(".page-view-where").inner_text()
    assert "the passage is marked" in dialog.locator(".page-view-where").inner_text()
    shot(page, "page-view", tmp_path)

    dialog.get_by_role("button", name="Next page").click()  # the same route, nothing marked
    wait_until(
        page, "document.querySelector('dialog.page-view img.page-image')?.dataset.page === '3'", "page 3"
    )
    seen = shown(page)
    assert_page(seen, 3)
    assert seen["coloured"] < MARKED_PIXELS / 10, seen
    asked.last_was(3)
    dialog.get_by_role("button", name="Previous page").click()  # back on the hit's page: marked again
    wait_until(
        page, "document.querySelector('dialog.page-view img.page-image')?.dataset.page === '2'", "page 2"
    )
    assert shown(page)["coloured"] >= MARKED_PIXELS
    asked.last_was(2, on_page(corpus, 2))

    page.keyboard.press("Escape")
    dialog.wait_for(state="detached")
    assert focused_label(page) == f"Page 2 of {FILE}"  # the focus is back on what opened it


def test_a_chunk_in_the_chunk_viewer_opens_its_page(
    page: Any, server: LiveServer, corpus: dict[str, Any]
) -> None:
    asked = PageRequests(page)
    fog = next(c for c in corpus["chunks"] if c["page"] == 2)
    sign_in(page, server.url, SERVICE_KEY)
    viewer = f"#/datasets/{corpus['dataset']['id']}/files/{corpus['file_id']}?split={fog['split_id']}"
    page.goto(f"{server.url}/ui/{viewer}")
    page.locator(".chunk.focused").get_by_role("button", name=f"Page 3 of {FILE}").click()
    dialog = page.get_by_role("dialog", name=FILE)
    seen = shown(page)
    assert_page(seen, 3)
    assert seen["coloured"] >= MARKED_PIXELS, seen
    asked.last_was(3, on_page(corpus, 3))
    assert dialog.locator(".page-view-where").inner_text() == "Page 3 of 3 · the passage is marked"
    assert dialog.get_by_role("button", name="Previous page").is_enabled()
    assert dialog.get_by_role("button", name="Next page").is_disabled()  # the last page (X-Page-Count)

    dialog.get_by_role("button", name="Close").click()
    dialog.wait_for(state="detached")
    assert focused_label(page) == f"Page 3 of {FILE}"


def test_a_page_that_cannot_be_shown_says_why(page: Any, server: LiveServer, corpus: dict[str, Any]) -> None:
    """The file is deleted after its chunks were listed: the server's NOT_FOUND takes the page's place."""
    sign_in(page, server.url, SERVICE_KEY)
    dataset_id, notice_id = corpus["dataset"]["id"], corpus["notice_id"]
    page.goto(f"{server.url}/ui/#/datasets/{dataset_id}/files/{notice_id}")
    opener = page.get_by_role("button", name=f"Page 1 of {NOTICE}")
    opener.wait_for()
    service = Api(server.url, SERVICE_KEY)
    service.ok("DELETE", f"/api/v1/datasets/{dataset_id}/files/{notice_id}")
    service.close()
    opener.click()
    dialog = page.get_by_role("dialog", name=NOTICE)
    alert = dialog.get_by_role("alert")
    alert.wait_for()
    assert alert.inner_text().startswith("NOT_FOUND: "), alert.inner_text()
    assert dialog.locator("img").count() == 0
    assert dialog.get_by_role("button", name="Zoom in").is_disabled()
    page.keyboard.press("Escape")
    dialog.wait_for(state="detached")
    assert focused_label(page) == f"Page 1 of {NOTICE}"


def test_a_chat_citation_opens_the_page_of_its_source(
    page: Any, server: LiveServer, upstream: ScriptedServer, corpus: dict[str, Any]
) -> None:
    upstream.expect("POST", CHAT, streamed("Every four hours, through the night [1]."))
    asked = PageRequests(page)
    sign_in(page, server.url, SERVICE_KEY)
    page.goto(f"{server.url}/ui/#/chat")
    message = page.get_by_role("textbox", name="Message")
    message.fill(LENS_QUESTION)
    message.press("Enter")
    log = page.get_by_role("log", name="Conversation")
    log.get_by_role("button", name=f"Source 1: {FILE}").click()
    opener = log.locator(".source-panel").get_by_role("button", name=f"Page 2 of {FILE}")
    opener.click()
    seen = shown(page)
    assert_page(seen, 2)
    assert seen["coloured"] >= MARKED_PIXELS, seen
    asked.last_was(2, on_page(corpus, 2))
    page.keyboard.press("Escape")
    page.get_by_role("dialog").wait_for(state="detached")
    assert focused_label(page) == f"Page 2 of {FILE}"
    upstream.verify()


def test_at_phone_width_the_page_fits_and_zooms_within_the_dialog(
    page: Any, server: LiveServer, corpus: dict[str, Any], tmp_path: Path
) -> None:
    page.set_viewport_size(PHONE)
    sign_in(page, server.url, SERVICE_KEY)
    first = sandbox(page, server, FOG_QUESTION)
    first.get_by_role("button", name=f"Page 3 of {FILE}").click()
    dialog = page.get_by_role("dialog", name=FILE)
    assert_page(shown(page), 3)
    within_phone(dialog, "the dialog")
    frame = dialog.locator(".page-frame")
    width, height, room_w, room_h, scroll_w = page.evaluate(FITS)
    assert width <= room_w  # the whole page, no scrolling
    assert height <= room_h
    assert scroll_w <= room_w
    for name in ("Close", "Previous page", "Next page", "Zoom in", "Zoom out", "Fit"):
        within_phone(dialog.get_by_role("button", name=name, exact=True), name)
    shot(page, "page-view-phone", tmp_path)

    zoom = dialog.locator(".page-view-zoom")
    fit_percent = percent(zoom.inner_text())
    dialog.get_by_role("button", name="Zoom in").click()
    dialog.get_by_role("button", name="Zoom in").click()
    zoomed = page.evaluate(FITS)
    assert zoomed[0] > width * 1.9  # twice as wide: it scrolls in the frame
    assert zoomed[4] > zoomed[2]
    assert page.evaluate("document.scrollingElement.scrollWidth") <= PHONE["width"]  # not the page
    assert abs(percent(zoom.inner_text()) - 2 * fit_percent) <= 1
    frame.focus()
    page.keyboard.press("-")
    assert abs(percent(zoom.inner_text()) - 1.5 * fit_percent) <= 1
    dialog.get_by_role("button", name="Fit").click()
    assert page.evaluate(FITS)[0] == width
    dialog.get_by_role("button", name="Close").click()
    dialog.wait_for(state="detached")
