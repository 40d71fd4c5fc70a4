"""One fetched web page to what the crawl yields: its text as a Document, and its links.

Only HTML (``text/html``, XHTML) and plain text are read; :func:`is_readable` says
which answers those are (an answer without a Content-Type counts as HTML when its
body starts with ``<``).  :func:`parse_page` is CPU work (lxml, trafilatura): run it
in a thread.  :func:`page_item` builds the :class:`SourceItem` (its fingerprint the SHA-256 of
the extracted text) around :func:`page_document`; both raise :class:`EmptyDocument`
for a page with no text.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ragd.errors import EmptyDocument
from ragd.sources.base import ItemMetadata, SourceItem
from ragd.sources.html_links import PageLinks, page_links
from ragd.sources.html_text import PageText, decode_markup, main_text, parse_html
from ragd.sources.page_meta import page_metadata
from ragd.sources.polite_fetch import Fetched
from ragd.types import Document

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset({"text/plain"})
PLAIN_TEXT = "text"
_NO_LINKS = PageLinks((), None)


@dataclass(frozen=True, slots=True)
class ParsedPage:
    text: PageText
    links: PageLinks
    mime_type: str
    size: int  # bytes of the body as fetched
    #: its meta tags and date (:mod:`ragd.sources.page_meta`)
    metadata: ItemMetadata | None = None


def is_readable(fetched: Fetched) -> bool:
    """True for the content types a crawl indexes; every other answer is skipped silently."""
    if not fetched.content_type:
        return fetched.body.lstrip()[:1] == b"<"
    return fetched.content_type in HTML_TYPES or fetched.content_type in TEXT_TYPES


def parse_page(fetched: Fetched) -> ParsedPage:
    """The page's text and links (CPU-bound: call it in a thread)."""
    markup = decode_markup(fetched.body, fetched.charset)
    if fetched.content_type in TEXT_TYPES:
        text = PageText(markup.replace("\r\n", "\n").replace("\r", "\n").strip(), None, PLAIN_TEXT)
        meta = page_metadata(None, fetched.last_modified)
        return ParsedPage(text, _NO_LINKS, "text/plain", len(fetched.body), meta)
    tree = parse_html(markup)
    if tree is None:
        empty = PageText("", None, PLAIN_TEXT)
        return ParsedPage(empty, _NO_LINKS, "text/html", len(fetched.body), page_metadata(None, None))
    links = page_links(tree, fetched.url)  # before main_text, whose fallback prunes the tree
    meta = page_metadata(tree, fetched.last_modified)  # before main_text too
    return ParsedPage(main_text(tree, fetched.url), links, "text/html", len(fetched.body), meta)


def page_document(key: str, page: ParsedPage) -> Document:
    """The Document of a page kept under ``key``; EmptyDocument when the page holds no text."""
    text = page.text.text
    if not text.strip():
        raise EmptyDocument(f"{key} holds no text once navigation and markup are removed")
    title = page.text.title
    return Document(
        text=text,
        extractor=page.text.extractor,
        mime_type=page.mime_type,
        meta={"url": key, **({"title": title} if title else {})},
    )


def page_item(key: str, page: ParsedPage) -> SourceItem:
    """The item for a page kept under ``key``, its Document attached; EmptyDocument as above."""
    document = page_document(key, page)
    return SourceItem(
        key=key,
        fingerprint=hashlib.sha256(document.text.encode("utf-8")).hexdigest(),
        name=page.text.title or key,
        size=page.size,
        document=document,
        metadata=page.metadata,
    )
