"""A small website on loopback for crawl tests: a dict of pages the test can change between crawls.

    with LoopbackSite({"/": Page.html("Home", "<p>hi</p>", links=["/a"])}) as site:
        ... crawl site.url("/") ...
        site.pages["/a"] = Page.html("A", "<p>changed</p>")
        assert site.paths() == ["/robots.txt", "/", "/a"]

Pages are keyed by path plus query (``/list?page=2``); anything else is a 404.  Every
request is recorded with its path, the time ``clock()`` gave when it arrived, and the
User-Agent.  Each answer closes its connection, so closing the server leaves no
thread or socket behind.  ``latency_s`` delays every answer, and ``max_in_flight``
reports the most requests the server was answering at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

HTML = "text/html; charset=utf-8"


@dataclass(frozen=True, slots=True)
class Page:
    body: bytes
    status: int = 200
    content_type: str | None = HTML
    headers: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def html(cls, title: str, main: str, *, links: Iterable[str] = (), chrome: bool = True) -> Page:
        """An HTML page: ``main`` inside <article>, ``links`` in the <nav>, and (with ``chrome``)
        the same header, nav and footer text every page of the site repeats."""
        anchors = " ".join(f'<a href="{href}">link to {href}</a>' for href in links)
        nav = f"<nav>{NAV_TEXT} {anchors}</nav>" if chrome else f"<div>{anchors}</div>"
        footer = f"<footer><p>{FOOTER_TEXT}</p></footer>" if chrome else ""
        body = (
            f"<!DOCTYPE html><html><head><title>{title}</title></head><body>"
            f"<header><p>Example Site header banner</p></header>{nav}"
            f"<main><article><h1>{title}</h1>{main}</article></main>{footer}</body></html>"
        )
        return cls(body.encode())

    @classmethod
    def text(cls, body: str, content_type: str = "text/plain; charset=utf-8", status: int = 200) -> Page:
        return cls(body.encode(), status, content_type)

    @classmethod
    def redirect(cls, location: str, status: int = 301) -> Page:
        return cls(b"", status, None, {"Location": location})


NAV_TEXT = "Navigation menu: Home, Products, Pricing, Contact the sales team"
FOOTER_TEXT = "Copyright 2031 Example Corporation. All rights reserved. Imprint and privacy policy."


@dataclass(frozen=True, slots=True)
class Request:
    path: str  # with the query string
    at: float  # clock() when the request arrived
    user_agent: str | None


class LoopbackSite:
    def __init__(
        self,
        pages: Mapping[str, Page] | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        latency_s: float = 0.0,
    ) -> None:
        self.pages: dict[str, Page] = dict(pages or {})
        self.clock = clock
        self.latency_s = latency_s
        self.requests: list[Request] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.site = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01})

    @property
    def origin(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def url(self, path: str) -> str:
        return self.origin + path

    def paths(self) -> list[str]:
        return [r.path for r in self.requests]

    def page_paths(self) -> list[str]:
        """Requested paths other than /robots.txt."""
        return [p for p in self.paths() if p != "/robots.txt"]

    def __enter__(self) -> LoopbackSite:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._httpd.shutdown()
        self._thread.join()
        self._httpd.server_close()  # joins the handler threads

    def _answer(self, path: str, user_agent: str | None) -> Page:
        with self._lock:
            self.requests.append(Request(path, self.clock(), user_agent))
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            page = self.pages.get(path)
        if self.latency_s:
            time.sleep(self.latency_s)
        with self._lock:
            self._in_flight -= 1
        return page or Page(b"no such page", 404, "text/plain")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        site: LoopbackSite = self.server.site  # type: ignore[attr-defined]
        page = site._answer(self.path, self.headers.get("User-Agent"))
        self.send_response(page.status)
        if page.content_type:
            self.send_header("Content-Type", page.content_type)
        for name, value in page.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(page.body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(page.body)

    def log_message(self, format: str, *args: Any) -> None:
        pass
