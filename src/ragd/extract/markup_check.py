"""Is extracted text readable, or is it a file's markup that no reader understood?

A file sniffed as text that is really RTF, an HTML page, a MIME message with its
attachments, or a PDF's object stream "extracts" as its raw source.  Indexed, the
markup drowns the words in both the dense and the sparse index, and the user is
never told.  :func:`check_readable` measures how much of the text is markup and
refuses the document (:class:`ExtractionUnusable`, ``EXTRACTION_UNUSABLE``) when
``MAX_MARKUP_SHARE`` or more of its non-blank characters are markup.

What counts as markup (every match's non-blank characters are counted once):

* RTF: control words (``\\pard``, ``\\f0``, ``\\cellx3000``), control symbols
  (``\\'e9``, ``\\*``) and braces;
* XML and HTML: tags, comments, CDATA, processing instructions, DOCTYPEs and
  entity references;
* base64: runs of 60 or more base64 characters mixing upper case, lower case and
  digits (a MIME attachment, an inline image), and hex dumps of 64 or more digits
  (RTF pictures);
* PDF and PostScript: object headers (``12 0 obj``), dictionary delimiters and
  names (``<< /Type /Page >>``), and operators after their numeric operands
  (``0 0 612 792 re``, ``BT /F1 12 Tf``).

Documents whose text is *meant* to hold markup (source code, data files,
Markdown, CSV, notebooks: :func:`ragd.extract.mime.markup_expected`) are not
checked.  Measured on ../shared/documents and the format fixtures, real documents
stay under 0.10; raw RTF, HTML and PDF sources measure 0.70 and more (tests/extract).
"""

from __future__ import annotations

import re

from ragd.errors import ExtractionUnusable

#: A document is refused when at least this share of its non-blank characters is markup.
MAX_MARKUP_SHARE = 0.5
#: Texts with fewer non-blank characters than this are too short to judge.
MIN_CHARS = 40
_WINDOW = 16 * 1024
_WINDOWS = 16

_MARKUP = re.compile(
    "|".join(
        (
            r"\\[a-zA-Z]{1,32}-?\d{0,10} ?",  # RTF control word
            r"\\'[0-9a-fA-F]{2}|\\[^a-zA-Z0-9\s]",  # RTF hex escape, control symbol
            r"[{}]",  # RTF groups (and JSON/code braces, which are not checked)
            r"<!--.*?-->|<!\[CDATA\[|\]\]>|<\?[^>]{0,500}\?>|<![A-Za-z][^>]{0,500}>",  # XML/HTML specials
            r"</?[A-Za-z][\w:.-]{0,64}(?:\s[^<>]{0,2000})?/?>",  # XML/HTML tag
            r"&(?:[a-zA-Z]{2,10}|#\d{1,7}|#x[0-9a-fA-F]{1,6});",  # entity reference
            r"\b\d+ \d+ (?:obj|R)\b|\bendobj\b|\bendstream\b|\bxref\b|\btrailer\b|<<|>>",  # PDF objects
            r"(?<![\w/])/[A-Z][A-Za-z0-9]{1,40}",  # PDF/PostScript name
            r"(?:-?\d*\.?\d+\s+){1,6}(?:re|cm|Td|TD|Tm|Tf|Tc|Tw|rg|RG|m|l|c|w|g|G|k|K|d)\b",  # operators
            r"\b(?:BT|ET|Tj|TJ|q|Q|f\*?|S|B\*?|n|W)\b(?=\s)",  # bare PDF operators (counted with text runs)
        )
    ),
    re.S,
)


# base64: 60+ characters of its alphabet with upper case, lower case and a digit (encoded bytes
# always mix them; a run of letters is a long word, DNA or a hash-free identifier, not base64).
_BASE64 = re.compile(
    r"(?=[A-Za-z0-9+/]{0,200}[0-9])(?=[A-Za-z0-9+/]{0,200}[a-z])(?=[A-Za-z0-9+/]{0,200}[A-Z])"
    r"[A-Za-z0-9+/]{60,}={0,2}"
)

# Hex dumps (RTF pictures, PostScript images): 64+ hex digits mixing digits and letters.
_HEX = re.compile(r"(?=[0-9a-fA-F]{0,200}[0-9])(?=[0-9a-fA-F]{0,200}[a-fA-F])[0-9a-fA-F]{64,}")


def markup_share(text: str) -> float:
    """The share (0 to 1) of ``text``'s non-blank characters that are markup; 0.0 for blank text.

    Long texts are judged on evenly spread windows (at most ``_WINDOWS`` × 16 KiB), so the cost is
    bounded whatever the document's size.
    """
    sample = _sample(text)
    total = _non_blank(sample)
    if total == 0:
        return 0.0
    marked = sum(_non_blank(match.group()) for match in _MARKUP.finditer(sample))
    marked += sum(len(match.group()) for pattern in (_BASE64, _HEX) for match in pattern.finditer(sample))
    return min(1.0, marked / total)


def check_readable(text: str, source: str) -> None:
    """Raise :class:`ExtractionUnusable` when ``text`` is mostly markup (see the module docstring)."""
    sample = _sample(text)
    if _non_blank(sample) < MIN_CHARS:
        return
    share = markup_share(sample)
    if share >= MAX_MARKUP_SHARE:
        raise ExtractionUnusable(
            f"{source!r} was not understood: {share:.0%} of its extracted text is markup "
            "(RTF, XML/HTML tags, base64 or PDF operators), so nothing was indexed",
            hint="save it as PDF, DOCX or plain text, or give it the extension of its real format",
        )


def _sample(text: str) -> str:
    if len(text) <= _WINDOW * _WINDOWS:
        return text
    step = (len(text) - _WINDOW) // (_WINDOWS - 1)
    return "\n".join(text[i * step : i * step + _WINDOW] for i in range(_WINDOWS))


def _non_blank(text: str) -> int:
    return len(text) - sum(text.count(ch) for ch in " \t\n\r\f\v")
