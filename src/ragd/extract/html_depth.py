"""Deeply nested HTML, flattened before kreuzberg reads it.

kreuzberg 4.10.4's HTML reader silently drops the text of elements nested about
63 levels deep (measured: a ``<p>`` inside 61 ``<div>``s under ``<body>`` vanishes,
60 are read).  Generated pages and hostile uploads nest that deep.
:func:`limit_depth` rewrites such a document so that no element is nested more
than ``MAX_DEPTH`` deep: tags past that depth are left out (a block-level one
becomes a ``<br>``, so its text stays on its own line), and every character of
text is kept.  A document within the limit is returned unchanged, byte for byte.

EPUB chapters are XHTML that kreuzberg reads the same way: :func:`limit_epub_depth`
rewrites the deep ones inside the package (``<br/>`` for XML) and leaves the rest of
the zip as it was.

It works on the document's bytes read as Latin-1 (a lossless byte-to-character
mapping), so the file's own encoding passes through untouched.  Tags are found by
a linear regular-expression scan; ``<script>``, ``<style>`` and ``<textarea>``
bodies and comments are opaque.  End tags that HTML lets a page omit (``<p>``,
``<li>``, ``<td>`` …) are closed when a sibling of the same name opens right after.
"""

from __future__ import annotations

import io
import re
import zipfile

MAX_DEPTH = 48

_TOKEN = re.compile(
    rb"<(script|style|textarea)\b[^>]*>.*?</\1\s*>|<!--.*?-->|<(/?)([A-Za-z][\w:.-]*)([^>]*)>",
    re.S | re.I,
)
_VOID = frozenset(
    b"area base br col embed hr img input link meta param source track wbr basefont frame keygen".split()
)
_OPTIONAL_END = frozenset(b"p li dt dd tr td th option optgroup thead tbody tfoot colgroup rb rt rp".split())
_BLOCK = frozenset(
    b"address article aside blockquote dd details div dl dt fieldset figcaption figure footer form "
    b"h1 h2 h3 h4 h5 h6 header hr li main nav ol p pre section table tr td th ul".split()
)


#: members of an EPUB read as (X)HTML chapters
_CHAPTER_SUFFIXES = (".xhtml", ".html", ".htm")


def limit_epub_depth(package: bytes, max_depth: int = MAX_DEPTH) -> bytes:
    """``package`` (an EPUB) with every chapter nested no deeper than ``max_depth``.

    Unchanged, byte for byte, when no chapter is that deep or the zip cannot be read (its reader
    reports it).  The zip bomb check (:mod:`ragd.extract.packages`) has run before."""
    try:
        with zipfile.ZipFile(io.BytesIO(package)) as source:
            members = [(info, source.read(info)) for info in source.infolist()]
    except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError):
        return package
    rewritten = [
        (info, limit_depth(body, max_depth, line_break=b"<br/>") if _is_chapter(info.filename) else body)
        for info, body in members
    ]
    if all(new is old for (_, new), (_, old) in zip(rewritten, members, strict=True)):
        return package
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for info, body in rewritten:  # same names, order and compression (``mimetype`` stays first, stored)
            target.writestr(info, body, compress_type=info.compress_type)
    return out.getvalue()


def _is_chapter(name: str) -> bool:
    return name.lower().endswith(_CHAPTER_SUFFIXES)


def limit_depth(html: bytes, max_depth: int = MAX_DEPTH, *, line_break: bytes = b"<br>") -> bytes:
    """``html`` with no element nested deeper than ``max_depth`` (the same object when none is).

    A block element past the limit becomes ``line_break``."""
    if _deepest(html) <= max_depth:
        return html
    out: list[bytes] = []
    stack: list[tuple[bytes, bool]] = []  # (tag name, kept)
    kept_depth = 0
    position = 0
    for match in _TOKEN.finditer(html):
        out.append(html[position : match.start()])
        position = match.end()
        closing, raw_name, attributes = match.group(2), match.group(3), match.group(4)
        if raw_name is None:  # a script/style/textarea body or a comment: kept where its parent is
            if kept_depth < max_depth:
                out.append(match.group())
            continue
        name = raw_name.lower()
        if closing:
            popped = _pop(stack, name)
            kept_depth -= sum(kept for _, kept in popped)
            if popped and popped[0][1]:
                out.append(match.group())
            continue
        if name in _VOID or attributes.rstrip().endswith(b"/"):
            out.append(match.group() if kept_depth < max_depth or name == b"br" else b"")
            continue
        if name in _OPTIONAL_END and stack and stack[-1][0] == name:  # an omitted end tag
            kept_depth -= stack.pop()[1]
        keep = kept_depth < max_depth
        stack.append((name, keep))
        kept_depth += keep
        out.append(match.group() if keep else (line_break if name in _BLOCK else b""))
    out.append(html[position:])
    return b"".join(out)


def _pop(stack: list[tuple[bytes, bool]], name: bytes) -> list[tuple[bytes, bool]]:
    """Pop up to and including the innermost open ``name`` (nothing when it is not open)."""
    for index in range(len(stack) - 1, -1, -1):
        if stack[index][0] == name:
            popped = stack[index:]
            del stack[index:]
            return popped
    return []


def _deepest(html: bytes) -> int:
    """The deepest element nesting in ``html``, by the same scan."""
    stack: list[tuple[bytes, bool]] = []
    deepest = 0
    for match in _TOKEN.finditer(html):
        closing, raw_name, attributes = match.group(2), match.group(3), match.group(4)
        if raw_name is None:
            continue
        name = raw_name.lower()
        if closing:
            _pop(stack, name)
        elif name not in _VOID and not attributes.rstrip().endswith(b"/"):
            if name in _OPTIONAL_END and stack and stack[-1][0] == name:
                stack.pop()
            stack.append((name, True))
            deepest = max(deepest, len(stack))
    return deepest
