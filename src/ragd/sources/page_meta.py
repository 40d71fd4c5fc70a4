"""What a web page says about itself, as source metadata (docs/knowledge-bases.md, "Metadata from
sources"):

    <meta name="keywords" content="a, b">                  tags ``a``, ``b``
    <meta name="description">, <meta name="author">        string fields ``description``, ``author``
    <meta property="article:published_time">, then          date field ``published`` (canonical UTC)
    <meta name="date">, then the ``Last-Modified`` header

Dates are parsed strictly: an ISO-8601 date or date-time in a meta tag, an RFC 9110 date in the
header; anything else is dropped (never an error).  The other rules (lengths, counts) are the
sync's, which drops what breaks them.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from email.utils import parsedate_to_datetime

import lxml.html

from ragd.sources.base import ItemMetadata

_ISO = re.compile(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?)?")
_PUBLISHED = ("article:published_time", "date")
#: keywords read from one page at most (the metadata rules keep 32 tags per file)
MAX_KEYWORDS = 64


def page_metadata(tree: lxml.html.HtmlElement | None, last_modified: str | None) -> ItemMetadata:
    """The page's metadata from its ``<meta>`` tags (``tree``: None for a text page) and header."""
    metas: dict[str, str] = {}
    if tree is not None:
        for element in tree.iter("meta"):
            name = (element.get("name") or element.get("property") or "").strip().lower()
            content = element.get("content")
            if name and content is not None and name not in metas:
                metas[name] = content.strip()
    keywords = [k.strip() for k in metas.get("keywords", "").split(",")]
    strings = {name: metas[name] for name in ("description", "author") if metas.get(name)}
    published = next((d for d in (iso_date(metas.get(n, "")) for n in _PUBLISHED) if d), None)
    published = published or http_date(last_modified or "")
    return ItemMetadata(
        tags=tuple(dict.fromkeys(k for k in keywords if k))[:MAX_KEYWORDS],
        strings=strings,
        dates={"published": published} if published else {},
    )


def iso_date(text: str) -> str | None:
    """An ISO-8601 date or date-time as canonical UTC (``2024-05-01T00:00:00Z``); None otherwise."""
    text = text.strip()
    if not _ISO.fullmatch(text):
        return None
    try:
        if len(text) == 10:
            parsed = datetime.combine(date.fromisoformat(text), datetime.min.time(), UTC)
        else:
            parsed = datetime.fromisoformat(text.replace(" ", "T", 1))
    except ValueError:
        return None
    return _canonical(parsed)


def http_date(text: str) -> str | None:
    """An HTTP date (``Wed, 01 May 2024 10:00:00 GMT``) as canonical UTC; None otherwise."""
    if not text.strip():
        return None
    try:
        parsed = parsedate_to_datetime(text.strip())
    except (TypeError, ValueError, IndexError):
        return None
    return _canonical(parsed)


def _canonical(parsed: datetime) -> str:
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    utc = parsed.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S") + (f".{utc.microsecond:06d}" if utc.microsecond else "") + "Z"
