"""A web page's main text, without the navigation, header and footer every page repeats.

:func:`parse_html` parses the markup once with lxml; :func:`main_text` asks
trafilatura for the main content as Markdown (headings, lists and tables kept,
comments and links dropped) and the title from the page's metadata (``og:title``,
``<title>``, a lone ``<h1>``).  When trafilatura finds no main content (a page of
nothing but links, a very short page) the visible text of ``<body>`` is used
instead, one line per block element.  Both are CPU work: run them in a thread.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import lxml.html
import trafilatura
from lxml import etree

HTML = "trafilatura"
BODY_TEXT = "lxml"

_XML_DECLARATION = re.compile(r"\A\s*<\?xml[^>]*\?>")
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)""", re.IGNORECASE)
_INVISIBLE = ("script", "style", "noscript", "template", "head")
_BLOCKS = (
    *("p", "div", "section", "article", "main", "aside", "header", "footer", "nav"),
    *("h1", "h2", "h3", "h4", "h5", "h6", "li", "dt", "dd", "tr", "br", "pre", "blockquote"),
    *("table", "ul", "ol", "dl", "form", "figure", "figcaption", "hr", "td", "th"),
)


@dataclass(frozen=True, slots=True)
class PageText:
    text: str
    title: str | None
    extractor: str


def decode_markup(body: bytes, charset: str | None) -> str:
    """Bytes of a page as text: the HTTP charset, else a ``<meta charset>``, else UTF-8 or cp1252."""
    declared = charset or _meta_charset(body[:4096])
    if declared:
        try:
            return body.decode(declared, errors="replace")
        except LookupError:  # an unknown charset name
            pass
    try:
        return body.decode("utf-8-sig")
    except UnicodeDecodeError:
        return body.decode("cp1252", errors="replace")


def parse_html(markup: str) -> lxml.html.HtmlElement | None:
    """The document tree, or None for a page with no markup at all."""
    try:
        return lxml.html.document_fromstring(_XML_DECLARATION.sub("", markup, count=1))
    except (etree.ParserError, ValueError):
        return None


def main_text(tree: lxml.html.HtmlElement, url: str) -> PageText:
    """The page's main content and title; falls back to the body's visible text (mutates ``tree``)."""
    title = _title(tree, url)
    text = trafilatura.extract(
        tree,
        url=url,
        output_format="markdown",
        include_comments=False,
        # precision over recall: on short pages the default heuristics keep the site's header and nav
        favor_precision=True,
        include_links=False,
        include_tables=True,
        with_metadata=False,
    )
    if text and text.strip():
        return PageText(text.strip(), title, HTML)
    return PageText(visible_text(tree), title, BODY_TEXT)


def visible_text(tree: lxml.html.HtmlElement) -> str:
    """The text a reader sees in ``<body>``, one line per block element (mutates ``tree``)."""
    for element in tree.xpath("|".join(f"//{tag}" for tag in _INVISIBLE)):
        element.drop_tree()
    for element in tree.iter(*_BLOCKS):
        element.tail = "\n" + (element.tail or "")
    body = tree.find("body")
    text = (body if body is not None else tree).text_content()
    lines = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def _title(tree: lxml.html.HtmlElement, url: str) -> str | None:
    metadata = trafilatura.extract_metadata(tree, default_url=url, extensive=False)
    title = metadata.title if metadata is not None else None
    if not title:
        title = tree.findtext(".//title")
    title = " ".join(title.split()) if title else ""
    return title or None


def _meta_charset(head: bytes) -> str | None:
    match = _META_CHARSET.search(head)
    return match.group(1).decode("ascii") if match else None
