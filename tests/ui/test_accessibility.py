"""Every screen, at desktop and phone width, in light and dark: landmarks, a name on every control,
nothing wider than the screen, and the navigation reachable with the keyboard alone."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.kb.conftest import SERVICE_KEY, Api, new_tenant
from tests.support.live_server import LiveServer
from tests.ui.conftest import DESKTOP, PHONE, sign_in, wait_until

#: the visible controls with no accessible name (a label, aria-label(ledby), title or text)
UNNAMED = """() => [...document.querySelectorAll(
    'input:not([type=hidden]), select, textarea, button, a[href]')]
  .filter(el => el.getClientRects().length > 0 || (el.type === 'file' && el.labels && el.labels.length))
  .filter(el => {
    const by = el.getAttribute('aria-labelledby');
    const named = (el.labels && [...el.labels].some(l => l.textContent.trim()))
      || (el.getAttribute('aria-label') || '').trim()
      || (by && by.split(' ').some(id => (document.getElementById(id)?.textContent || '').trim()))
      || (el.title || '').trim()
      || ((el.tagName === 'BUTTON' || el.tagName === 'A') && el.textContent.trim());
    return !named;
  })
  .map(el => el.tagName + ' ' + (el.id || el.name || el.className))"""


@pytest.fixture(scope="module")
def dataset(service_api: Api) -> dict[str, Any]:
    tenant_id, _ = new_tenant(service_api, "a11y-co")
    made = service_api.ok("POST", "/api/v1/datasets", 201, json={"name": "a11y", "tenant_id": tenant_id})
    parts = [("files", ("guide.md", b"# Guide\n\nThe ferry leaves at nine.\n", "text/markdown"))]
    sent = service_api.ok("POST", f"/api/v1/datasets/{made['id']}/files", 202, files=parts)
    service_api.wait_job(sent["job"]["id"])
    return made


SCREENS = ("datasets", "dataset", "jobs", "sandbox", "chat", "keys", "audit", "system")


@pytest.mark.parametrize(
    ("viewport", "scheme"), [(DESKTOP, "light"), (PHONE, "dark")], ids=["desktop", "phone"]
)
def test_every_screen_has_landmarks_named_controls_and_fits(
    page: Any, ui_server: LiveServer, dataset: dict[str, Any], viewport: dict[str, int], scheme: str
) -> None:
    page.set_viewport_size(viewport)
    page.emulate_media(color_scheme=scheme)
    sign_in(page, ui_server.url, SERVICE_KEY)
    for screen in SCREENS:
        path = f"datasets/{dataset['id']}" if screen == "dataset" else screen
        page.goto(f"{ui_server.url}/ui/#/{path}")
        page.locator("main h1").first.wait_for()
        page.wait_for_load_state("networkidle")
        assert page.get_by_role("banner").count() == 1, screen
        assert page.get_by_role("main").count() == 1, screen
        assert page.locator("nav[aria-label=Main]").count() == 1, screen  # folded behind Menu on a phone
        assert page.locator("main h1").count() == 1, screen
        assert page.evaluate(UNNAMED) == [], screen
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= viewport["width"], (screen, width)
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        dark = sum(int(c) for c in background[background.index("(") + 1 : -1].split(",")[:3]) < 200
        assert dark is (scheme == "dark"), (screen, background)


def test_the_keyboard_alone_reaches_every_screen(page: Any, ui_server: LiveServer) -> None:
    """A screen opens with focus on its heading; Shift+Tab walks back up through the navigation."""
    sign_in(page, ui_server.url, SERVICE_KEY)
    page.get_by_role("heading", name="Datasets", level=1).wait_for()
    # the screen takes focus once it has rendered, which can be after its heading shows
    wait_until(
        page,
        "!!document.activeElement && document.activeElement.tagName === 'H1'",
        "the Datasets screen never took the focus",
    )
    seen: list[str] = []
    for _ in range(16):
        page.keyboard.press("Shift+Tab")
        seen.append(page.evaluate("document.activeElement.textContent.trim()"))
    names = ("Skip to content", "Datasets", "Jobs", "Sandbox", "Chat", "Keys", "Audit", "System", "Sign out")
    for name in names:
        assert name in seen, seen
    while page.evaluate("document.activeElement.textContent.trim()") != "Sandbox":
        page.keyboard.press("Tab")
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none"  # focus is visible
    page.keyboard.press("Enter")
    page.get_by_label("Query").wait_for()
    assert page.url.endswith("#/sandbox")
    deadline = time.monotonic() + 10
    while page.evaluate("document.activeElement.textContent.trim()") != "Retrieval sandbox":
        assert time.monotonic() < deadline, "the sandbox never took the focus"
        page.wait_for_timeout(50)


def test_the_theme_button_overrides_the_system_choice_and_is_remembered(
    page: Any, ui_server: LiveServer
) -> None:
    def dark() -> bool:
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        return sum(int(c) for c in background[background.index("(") + 1 : -1].split(",")[:3]) < 200

    page.emulate_media(color_scheme="light")
    sign_in(page, ui_server.url, SERVICE_KEY)
    assert not dark()
    page.get_by_role("button", name="Dark mode").click()
    assert dark()
    assert page.get_by_role("button", name="Light mode").get_attribute("aria-pressed") == "true"
    page.reload()
    page.get_by_role("button", name="Light mode").wait_for()
    assert dark()  # remembered (the choice, never the key, is in localStorage)
    page.get_by_role("button", name="Light mode").click()
    assert not dark()
