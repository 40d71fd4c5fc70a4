"""Pure text repairs for two measured faults of kreuzberg 4.10.4's markup readers.

* HTML to Markdown starts with a broken metadata header: ``---``, ``key: value``
  lines, and the closing ``---`` turned into a setext heading (``## title: …``).
  :func:`strip_html_front_matter` removes that block; the title is kept in
  ``Document.meta`` instead.
* The JATS reader drops every entity and character reference (``Kr&#x000fc;ppel``
  comes out as ``Kr ppel``).  :func:`inline_char_refs` replaces numeric references
  with their characters before kreuzberg parses the XML, except ``<``, ``&`` and
  quotes, which XML needs escaped (in text or attributes): those stay lost.
"""

from __future__ import annotations

import re

_FRONT_MATTER = re.compile(r"\A---\n(?:[\w.:-]+:[^\n]*\n|\n)*## [\w.:-]+:[^\n]*(?:\n+|\Z)")
_CHAR_REF = re.compile(r"&#(?:[xX]([0-9a-fA-F]{1,6})|([0-9]{1,7}));")
_KEEP_ESCAPED = frozenset("<&\"'")


def strip_html_front_matter(markdown: str) -> str:
    """``markdown`` without kreuzberg's leading metadata block (unchanged when there is none)."""
    return _FRONT_MATTER.sub("", markdown, count=1)


def inline_char_refs(xml: str) -> str:
    """Numeric character references replaced by their characters (XML specials and controls kept)."""

    def replace(match: re.Match[str]) -> str:
        hex_digits, decimal = match.groups()
        code = int(hex_digits, 16) if hex_digits else int(decimal)
        if code > 0x10FFFF or (code < 0x20 and code not in (0x9, 0xA, 0xD)) or 0xD800 <= code <= 0xDFFF:
            return match.group()
        char = chr(code)
        return match.group() if char in _KEEP_ESCAPED else char

    return _CHAR_REF.sub(replace, xml)
