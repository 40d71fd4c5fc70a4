"""Citation markers in a model's answer: ``[1]``, ``[1, 2]``, ``[1][2]``; where, and which point at nothing.

Pure functions.  A marker is a bracketed list of numbers; a Markdown link label (``[1](url)``),
a footnote (``[^1]``) and an index glued to a word (``items[0]``) are not markers.  A citation's
span is the smallest text that cites that one source: all of ``[1]``, but only the ``2`` of
``[1, 2]`` (so no two spans overlap).  Offsets count code points, as Python's ``str`` does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ragd.answer.records import CitedSpan

_MARKER = re.compile(r"(?<!\w)\[(\d{1,4}(?:\s*,\s*\d{1,4})*)\](?!\()")
_NUMBER = re.compile(r"\d+")


def cited_numbers(text: str) -> tuple[int, ...]:
    """Every number cited in ``text``, once each, in order of first mention."""
    seen: dict[int, None] = {}
    for match in _MARKER.finditer(text):
        for part in match.group(1).split(","):
            seen.setdefault(int(part), None)
    return tuple(seen)


def cited_spans(text: str) -> tuple[CitedSpan, ...]:
    """Every citation of a number in ``text``, in text order (a number cited twice has two)."""
    spans: list[CitedSpan] = []
    for match in _MARKER.finditer(text):
        numbers = list(_NUMBER.finditer(match.group(1)))
        if len(numbers) == 1:
            spans.append(CitedSpan(int(numbers[0].group()), match.start(), match.end()))
            continue
        offset = match.start(1)
        spans += [CitedSpan(int(n.group()), offset + n.start(), offset + n.end()) for n in numbers]
    return tuple(spans)


def unmatched(cited: Iterable[int], known: Iterable[int]) -> tuple[int, ...]:
    """The cited numbers no source carries, in citation order."""
    have = set(known)
    return tuple(n for n in cited if n not in have)
