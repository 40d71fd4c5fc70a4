"""URLs of a crawl: one canonical spelling per page, and the part of a site a crawl may visit.

:func:`canonical_url` resolves a link against its page and spells it one way, so the
same page is fetched once and keeps one key across crawls: lower-case scheme and
host, no default port (``:80``/``:443``), no fragment, no user info, ``.``/``..``
segments removed, an empty path becomes ``/``, characters a URL may not hold are
percent-encoded.  The query string is kept (``?page=2`` is another page).  Links to
anything but http(s) (``mailto:``, ``javascript:``, ``tel:``…) give None.

A :class:`Scope` is one site (scheme, host and port) and a path prefix.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, urljoin, urlsplit, urlunsplit

from ragd.errors import InvalidRequest

_SCHEMES = frozenset({"http", "https"})
_DEFAULT_PORTS = {"http": 80, "https": 443}
# RFC 3986 pchar plus "/" (and "?" in a query); "%" is kept so existing escapes stay as they are.
_PATH_SAFE = "/%:@!$&'()*+,;=-._~"
_QUERY_SAFE = _PATH_SAFE + "?"


def canonical_url(href: str, base: str | None = None) -> str | None:
    """``href`` (resolved against ``base``) in its canonical spelling, or None when it is no web page."""
    href = href.strip()
    if not href:
        return None
    try:
        parts = urlsplit(urljoin(base, href) if base else href)
        port = parts.port
    except ValueError:  # a malformed IPv6 host or a port out of range
        return None
    scheme = parts.scheme.lower()
    host = parts.hostname
    if scheme not in _SCHEMES or not host:
        return None
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        netloc = f"{netloc}:{port}"
    path = _without_dot_segments(parts.path or "/")
    query = quote(parts.query, safe=_QUERY_SAFE)
    return urlunsplit((scheme, netloc, quote(path, safe=_PATH_SAFE), query, ""))


def parse_start_url(url: str) -> str:
    """The canonical start URL, or :class:`InvalidRequest` naming what is wrong with it."""
    try:
        parts = urlsplit(url.strip())
    except ValueError as exc:
        raise InvalidRequest(f"start URL {url!r} is not a valid URL: {exc}") from exc
    if parts.scheme.lower() not in _SCHEMES:
        raise InvalidRequest(
            f"start URL {url!r} is not a web address", hint="only http:// and https:// URLs can be crawled"
        )
    if parts.username is not None or parts.password is not None:
        raise InvalidRequest("the start URL must not hold credentials (user:password@host)")
    canonical = canonical_url(url)
    if canonical is None:
        raise InvalidRequest(f"start URL {url!r} has no valid host or port")
    return canonical


def directory_of(url: str) -> str:
    """The path of ``url`` up to and including its last ``/``: ``/docs/`` for ``/docs/intro.html``."""
    path = urlsplit(url).path or "/"
    return path[: path.rfind("/") + 1]


@dataclass(frozen=True, slots=True)
class Scope:
    """The pages a crawl may visit: one origin, paths starting with ``prefix``."""

    origin: str  # scheme://host[:port] in canonical form
    prefix: str

    @classmethod
    def of(cls, start_url: str, prefix: str | None) -> Scope:
        parts = urlsplit(start_url)
        return cls(f"{parts.scheme}://{parts.netloc}", prefix or directory_of(start_url))

    def same_site(self, url: str) -> bool:
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.netloc}" == self.origin

    def contains(self, url: str) -> bool:
        return self.same_site(url) and (urlsplit(url).path or "/").startswith(self.prefix)


def _without_dot_segments(path: str) -> str:
    if "/." not in path and not path.startswith("."):
        return path
    return urlsplit(urljoin("http://x/", path if path.startswith("/") else "/" + path)).path
