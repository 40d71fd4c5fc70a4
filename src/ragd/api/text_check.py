"""Text no store can hold, refused where a request's text is decoded: JSON bodies as they stream in.

A JSON string may spell a lone UTF-16 surrogate (``"\\ud800"``): ``json.loads`` takes it, and then
every encoder downstream fails on it — UTF-8, SQLite, PostgreSQL, the tokenizers — as a 500.  A
NUL (``"\\u0000"``) is no better: no file path and no PostgreSQL text can hold it.  So a request's
JSON must be I-JSON (RFC 7493 §2.1: UTF-8, no lone surrogates) without NUL; :class:`JsonTextCheck`
checks that on the raw bytes as they arrive (the body gate feeds it), before anything parses them,
in one pass that keeps at most a dozen characters between two pieces.  A paired escape
(``"\\ud83d\\ude00"``, 😀) and an escaped backslash (``"\\\\ud800"``, the six characters) are fine.

URLs are checked by :func:`nul_in_url`: their percent-escapes are decoded with replacement
characters (no surrogate survives), but ``%00`` becomes a NUL.  Multipart text is checked where
it is decoded (:mod:`ragd.api.multipart`).
"""

from __future__ import annotations

import codecs
import re

from ragd.errors import InvalidText

#: an escape of a JSON string: a surrogate pair, one ``\\uXXXX``, or a one-character escape
_ESCAPE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u([0-9a-fA-F]{4})|\\.", re.DOTALL
)
#: the longest escape (a surrogate pair): an escape starting this close to a piece's end may go on
_LONGEST = 12


class JsonTextCheck:
    """Feed the pieces of a JSON body to :meth:`feed`; it raises :class:`InvalidText` on the first
    byte that is not UTF-8, or escape that spells a lone surrogate or a NUL."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self._carry = ""

    def feed(self, data: bytes, *, final: bool = False) -> None:
        try:
            text = self._carry + self._decoder.decode(data, final)
        except UnicodeDecodeError as exc:
            raise InvalidText("the request body is not UTF-8 text") from exc
        cut = len(text) if final else len(text) - _LONGEST
        resume = 0
        for match in _ESCAPE.finditer(text):
            if match.start() >= cut:
                break  # may be cut short: look at it again with the next piece
            resume = match.end()
            if match.group(1) is not None:
                _check(int(match.group(1), 16))
        self._carry = "" if final else text[max(resume, cut, 0) :]


def _check(code: int) -> None:
    if 0xD800 <= code <= 0xDFFF:
        raise InvalidText(
            f"a string in the request holds a lone UTF-16 surrogate (\\u{code:04x}), which is not text",
            hint="send text as UTF-8; a character outside the BMP is a surrogate pair (\\ud83d\\ude00)",
        )
    if code == 0:
        raise InvalidText("a string in the request holds a NUL character (\\u0000)")


def nul_in_url(path: str, query: bytes) -> bool:
    """Whether the decoded ``path`` or the raw query string holds a NUL."""
    return "\x00" in path or b"%00" in query or b"\x00" in query
