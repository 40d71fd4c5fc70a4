"""A site's robots.txt, read once per crawl with :mod:`urllib.robotparser`.

What the answer to ``GET /robots.txt`` means (as RFC 9309 reads it):

* 2xx: the rules in the body apply to our user agent;
* 401/403: nothing may be crawled;
* any other 4xx (404: there is no robots.txt): everything may be crawled;
* a redirect is followed (up to five hops, within the site);
* 5xx or a network error: the site is unavailable right now, so the crawl stops
  with :class:`PageFetchFailed` rather than guess (guessing "nothing allowed" would
  make every page look deleted).
"""

from __future__ import annotations

import logging
import urllib.robotparser
from dataclasses import dataclass

from ragd.errors import PageFetchFailed
from ragd.observe.logging import sanitize
from ragd.sources.polite_fetch import Fetched, PoliteFetcher
from ragd.sources.urls import Scope, canonical_url

logger = logging.getLogger(__name__)

_MAX_REDIRECTS = 5


@dataclass(frozen=True, slots=True)
class RobotsPolicy:
    """Which URLs our user agent may fetch, and the crawl delay the site asks of it."""

    parser: urllib.robotparser.RobotFileParser
    user_agent: str

    def allows(self, url: str) -> bool:
        return self.parser.can_fetch(self.user_agent, url)

    @property
    def crawl_delay(self) -> float | None:
        delay = self.parser.crawl_delay(self.user_agent)
        return float(delay) if delay is not None else None


async def read_robots(fetcher: PoliteFetcher, scope: Scope, user_agent: str) -> RobotsPolicy:
    """The site's robots policy (see the module docstring for how each answer reads)."""
    url = f"{scope.origin}/robots.txt"
    response = await _follow(fetcher, url, scope)
    parser = urllib.robotparser.RobotFileParser(url)
    status = response.status if response is not None else 404
    if response is not None and 200 <= status < 300:
        parser.parse(response.body.decode("utf-8", errors="replace").splitlines())
    elif status in (401, 403):
        parser.parse(["User-agent: *", "Disallow: /"])
    elif 300 <= status < 500:
        parser.parse([])  # no rules: everything allowed
    else:
        raise PageFetchFailed(f"HTTP {status} for {sanitize(url)}", hint="the site is unavailable")
    policy = RobotsPolicy(parser, user_agent)
    delay = policy.crawl_delay
    logger.debug("robots.txt of %s: HTTP %s, crawl delay %s", sanitize(scope.origin), status, delay)
    return policy


async def _follow(fetcher: PoliteFetcher, url: str, scope: Scope) -> Fetched | None:
    """The answer after same-site redirects; None when a redirect leaves the site."""
    for _ in range(_MAX_REDIRECTS + 1):
        response = await fetcher.get(url)
        target = canonical_url(response.location, url) if response.location else None
        if target is None:
            return response
        if not scope.same_site(target):
            return None
        url = target
    return response
