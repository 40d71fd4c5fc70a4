"""The links a crawler follows from a page, read from the raw markup (trafilatura drops navigation).

Links are ``<a href>`` and ``<area href>``, resolved against ``<base href>`` when the
page has one, canonicalised (:func:`ragd.sources.urls.canonical_url`) and
de-duplicated in document order; ``mailto:``, ``javascript:`` and other non-web
links are dropped.  ``<link rel="canonical">`` is returned on its own: the page's
preferred URL.
"""

from __future__ import annotations

from dataclasses import dataclass

import lxml.html

from ragd.sources.urls import canonical_url


@dataclass(frozen=True, slots=True)
class PageLinks:
    links: tuple[str, ...]  # canonical URLs, first occurrence first
    canonical: str | None  # the page's <link rel="canonical">, canonicalised


def page_links(tree: lxml.html.HtmlElement, url: str) -> PageLinks:
    base = _base_url(tree, url)
    seen: dict[str, None] = {}
    for href in tree.xpath("//a/@href | //area/@href"):
        link = canonical_url(str(href), base)
        if link is not None:
            seen.setdefault(link, None)
    return PageLinks(tuple(seen), _canonical(tree, base))


def _base_url(tree: lxml.html.HtmlElement, url: str) -> str:
    hrefs = tree.xpath("//base/@href")
    return (canonical_url(str(hrefs[0]), url) or url) if hrefs else url


def _canonical(tree: lxml.html.HtmlElement, base: str) -> str | None:
    for element in tree.xpath("//link[@rel and @href]"):
        if "canonical" in str(element.get("rel", "")).lower().split():
            return canonical_url(str(element.get("href", "")), base)
    return None
