"""Citation markers in a model's answer: ``[1]``, ``[1, 2]``, ``[1][2]`` — which point at no source.

Pure functions.  A marker is a bracketed list of numbers; a Markdown link label (``[1](url)``),
a footnote (``[^1]``) and an index glued to a word (``items[0]``) are not markers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_MARKER = re.compile(r"(?<!\w)\[(\d{1,4}(?:\s*,\s*\d{1,4})*)\](?!\()")


def cited_numbers(text: str) -> tuple[int, ...]:
    """Every number cited in ``text``, once each, in order of first mention."""
    seen: dict[int, None] = {}
    for match in _MARKER.finditer(text):
        for part in match.group(1).split(","):
            seen.setdefault(int(part), None)
    return tuple(seen)


def unmatched(cited: Iterable[int], known: Iterable[int]) -> tuple[int, ...]:
    """The cited numbers no source carries, in citation order."""
    have = set(known)
    return tuple(n for n in cited if n not in have)
