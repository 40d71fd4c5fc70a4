"""Where a cited source lives, for clients that render citations: a URL and a title per source.

Pure functions.  A web page (its ``source`` is an ``http(s)://`` address, as a crawled page's is)
is cited by that address; anything else by a ragd URL that names the stored chunk::

    ragd://<collection>/<file_id>#chunk=<split_id>       e.g. ragd://handbook/release-2024#chunk=3
    ragd://<collection>/<file_id>#point=<point id>       when the chunk's place in its file is unknown

``file_id`` is percent-encoded (it is whatever the ingesting client chose); the same file's
chunks share everything before ``#``, which is what ``GET /api/v1/documents/<file_id>/chunks``
lists.  The title is the file's name, with the page (1-based, for people) when the format has
pages: ``report.pdf, page 3``.
"""

from __future__ import annotations

from urllib.parse import quote, urlsplit

from ragd.types import Citation

SCHEME = "ragd"
_WEB_SCHEMES = frozenset({"http", "https"})


def source_url(item: Citation, collection: str) -> str:
    """The page's own address for a web page, else the chunk's ``ragd://`` URL."""
    if is_web_address(item.source):
        return item.source
    place = f"chunk={item.split_id}" if item.split_id is not None else f"point={item.chunk_id}"
    return f"{SCHEME}://{collection}/{quote(item.file_id, safe='')}#{place}"


def source_title(item: Citation) -> str:
    return item.name if item.page is None else f"{item.name}, page {item.page + 1}"


def is_web_address(text: str) -> bool:
    try:
        parts = urlsplit(text)
    except ValueError:  # e.g. an unbalanced "[" in the host
        return False
    return parts.scheme.lower() in _WEB_SCHEMES and bool(parts.netloc) and text == text.strip()
