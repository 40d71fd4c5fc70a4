"""A conservative token estimate for when the embedding model's tokenizer is not local.

Remote embedders (OpenAI, TEI) give us no tokenizer, yet the chunkers still
size chunks in tokens.  This counter over-estimates ordinary text on purpose
(by about half for English): every run of up to four ASCII letters is one
token, every other non-space character (digit, punctuation, accented or CJK
letter) is one token, and a Hangul syllable is three (models that decompose
it see its jamo).  Subword tokenizers rarely produce more, though a long
rare word can (e.g. a 45-letter chemical name); remote embedders truncate
such outliers themselves.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[A-Za-z]{1,4}|[^\sA-Za-z]")
_HANGUL_SYLLABLE = re.compile(r"[\uac00-\ud7a3]")
HANGUL_TOKENS = 3


class ApproxTokenCounter:
    """Regex token estimate; tokens never span white space."""

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        spans = [match.span() for match in _TOKEN.finditer(text)]
        if not _HANGUL_SYLLABLE.search(text):
            return spans
        out: list[tuple[int, int]] = []
        for span in spans:
            out.extend([span] * (HANGUL_TOKENS if _HANGUL_SYLLABLE.match(text, span[0]) else 1))
        return out

    def count(self, text: str) -> int:
        hangul = len(_HANGUL_SYLLABLE.findall(text))
        return sum(1 for _ in _TOKEN.finditer(text)) + (HANGUL_TOKENS - 1) * hangul
