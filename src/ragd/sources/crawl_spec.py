"""What a website crawl covers and how politely it runs; checked when it is built."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ragd.errors import InvalidRequest
from ragd.sources.urls import Scope, parse_start_url


@dataclass(frozen=True, slots=True)
class CrawlSpec:
    """One website source.  Raises :class:`InvalidRequest` for a start URL that is not http(s)
    or a limit out of range."""

    start_url: str  # http(s) only
    max_depth: int = 2  # links followed from the start page; 0 = only the start page
    max_pages: int = 200  # pages yielded plus failures
    path_prefix: str | None = None  # only URLs whose path starts with this; None: the start URL's directory
    delay_s: float = 0.5  # minimum time between two request starts (robots.txt Crawl-delay may raise it)
    user_agent: str = "ragd-crawler"
    timeout_s: float = 20.0
    max_page_bytes: int = 10_000_000
    #: may connect to loopback, private and link-local addresses (the service key's sources, or
    #: crawl.allow_private); else every connection is checked (ragd.sources.guarded_http)
    allow_private: bool = False
    #: load each HTML page in headless Chromium and read the DOM its scripts leave (ragd.sources.render)
    render: bool = False
    render_timeout_s: float = 30.0  # a rendered page that has not settled by then is RENDER_TIMEOUT

    def __post_init__(self) -> None:
        parse_start_url(self.start_url)
        if self.path_prefix is not None and not self.path_prefix.startswith("/"):
            raise InvalidRequest(f"path_prefix {self.path_prefix!r} must start with '/'")
        _check(self.max_depth >= 0, "max_depth must be >= 0")
        _check(self.max_pages >= 1, "max_pages must be >= 1")
        _check(math.isfinite(self.delay_s) and self.delay_s >= 0, "delay_s must be >= 0")
        _check(math.isfinite(self.timeout_s) and self.timeout_s > 0, "timeout_s must be > 0")
        _check(self.max_page_bytes >= 1, "max_page_bytes must be >= 1")
        _check(
            math.isfinite(self.render_timeout_s) and self.render_timeout_s > 0, "render_timeout_s must be > 0"
        )
        agent = self.user_agent
        _check(bool(agent.strip()) and agent.isprintable(), "user_agent must be printable text")

    @property
    def canonical_start(self) -> str:
        return parse_start_url(self.start_url)

    @property
    def scope(self) -> Scope:
        return Scope.of(self.canonical_start, self.path_prefix)


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise InvalidRequest(message)
