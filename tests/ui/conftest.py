"""The web UI in a real browser: Playwright for Python driving Debian's Chromium, launched by path.

Playwright's own browser download is not reachable, so the installed Chromium is used
(``RAGD_TEST_CHROMIUM``, else ``chromium`` on PATH, else /usr/bin/chromium); ``.ci/run`` installs
it with apt-get. Without it these tests skip with that message.

One live ragd (real uvicorn, embedded Qdrant, the real model, a SQLite catalog, its job worker)
per module, with a service key. Every page records console errors, failed requests to ragd
(5xx) and uncaught exceptions; a test fails if any appeared (a CSP violation is a console error).

Screenshots: :func:`shot` writes them under ``RAGD_UI_SCREENSHOTS`` (docs/ui to refresh the
README's pictures) or the test's tmp dir, and checks each is a real PNG.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragd.api.app import create_app
from tests.kb.conftest import SERVICE_KEY, Api, chat_kb_settings, kb_settings
from tests.support.live_server import LiveServer

playwright_sync = pytest.importorskip("playwright.sync_api", reason="playwright is a dev dependency")

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
DESKTOP = {"width": 1280, "height": 860}
PHONE = {"width": 390, "height": 844}


def chromium_path() -> str | None:
    given = os.environ.get("RAGD_TEST_CHROMIUM")
    if given:
        return given
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    path = chromium_path()
    if path is None:
        pytest.skip("no Chromium: apt-get install chromium (or set RAGD_TEST_CHROMIUM to its path)")
    with playwright_sync.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def ui_server(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[LiveServer]:
    data_dir = tmp_path_factory.mktemp("ui") / "data"
    with LiveServer(create_app(kb_settings(data_dir, model_cache, None))) as live:
        live.wait_ready()
        yield live


@contextlib.contextmanager
def chat_live_server(data_dir: Path, model_cache: Path, upstream_url: str) -> Iterator[LiveServer]:
    """A live server whose chat proxy answers through the scripted upstream at ``upstream_url``."""
    with LiveServer(create_app(chat_kb_settings(data_dir, model_cache, upstream_url))) as live:
        live.wait_ready()
        yield live


@pytest.fixture(scope="module")
def service_api(ui_server: LiveServer) -> Iterator[Api]:
    api = Api(ui_server.url, SERVICE_KEY)
    yield api
    api.close()


class PageProblems:
    """What went wrong in a page: console errors, uncaught exceptions, 5xx answers."""

    def __init__(self, page: Any) -> None:
        self.items: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda exc: self.items.append(f"uncaught: {exc}"))
        page.on("response", self._response)

    def _console(self, message: Any) -> None:
        if message.type == "error" and not _expected(message.text):
            self.items.append(f"console: {message.text}")

    def _response(self, response: Any) -> None:
        if response.status >= 500:
            self.items.append(f"{response.status} {response.request.method} {response.url}")


def _expected(text: str) -> bool:
    # the browser logs every non-2xx fetch; a 401/404/409 the test provokes is not a defect
    return "Failed to load resource: the server responded with a status of 4" in text


@pytest.fixture
def context(browser: Any) -> Iterator[Any]:
    ctx = browser.new_context(viewport=DESKTOP, color_scheme="light", accept_downloads=False)
    ctx.set_default_timeout(20_000)
    yield ctx
    ctx.close()


@pytest.fixture
def page(context: Any) -> Iterator[Any]:
    opened = context.new_page()
    problems = PageProblems(opened)
    opened.problems = problems
    yield opened
    assert problems.items == [], problems.items


def sign_in(page: Any, url: str, key: str) -> None:
    """Open the UI and sign in with ``key`` as a user would (the key typed into the form)."""
    page.goto(f"{url}/")
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("button", name="Sign out").wait_for()  # the navigation may be folded (phone)


def wait_until(page: Any, expression: str, what: str, timeout_s: float = 10.0) -> None:
    """Poll a JavaScript expression from the test until it is truthy.

    Not ``page.wait_for_function``: its in-page polling evaluates the expression as a string,
    which the UI's CSP refuses once the first check is false (a load-dependent failure).
    """
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(expression):
        assert time.monotonic() < deadline, f"{what} (after {timeout_s:g} s)"
        page.wait_for_timeout(50)


def shot(page: Any, name: str, tmp_path: Path) -> Path:
    """A screenshot of the page, checked to be a PNG (docs/ui/<name>.png with RAGD_UI_SCREENSHOTS)."""
    where = Path(os.environ.get("RAGD_UI_SCREENSHOTS") or tmp_path)
    where.mkdir(parents=True, exist_ok=True)
    path = where / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return path
