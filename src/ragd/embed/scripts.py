"""Writing systems for BM25: which script a text is written in, and n-grams of scripts without spaces.

Pure functions, no engine.  :func:`script_of` routes a text to its tokenisation:

- ``DETECTED``: Latin, Greek, Cyrillic, Arabic — the scripts of the languages Qdrant has stop words
  and stemmers for; the language is then detected per text;
- ``TAMIL``, ``ARMENIAN``: the two Snowball stemmers Qdrant has without a stop-word list;
- ``UNSPACED``: Han, kana, Hangul, Thai, Lao, Khmer, Myanmar, Tai Tham — words are not (or not
  reliably) separated by spaces;
- ``OTHER``: every other script (Georgian, Hebrew, Devanagari, Bengali, Telugu, Ethiopic,
  Sinhala …): plain Unicode words, unstemmed.

The script is the one most of the first 2,000 letters are written in (ties go to ``DETECTED``), except
that a text a third of whose letters are unspaced is ``UNSPACED``: mixed Chinese/English text must
still be found by its Chinese words.  The route depends on the script alone, never on a guessed
language, so a query and a passage in the same script are always tokenised alike.

:func:`ngram_text` rewrites unspaced text as whitespace-separated tokens: each run of an unspaced
script becomes its character clusters (a letter with its combining marks) and every pair of
adjacent clusters (the bigrams of Lucene's CJK analyzer, plus the single clusters, so a word of one
character is found too): any piece of a query matches the passage that contains it, with no
dictionary and no context-dependent segmentation; words of other scripts inside the text stay whole.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from enum import Enum


class Script(Enum):
    DETECTED = "detected"
    TAMIL = "tamil"
    ARMENIAN = "armenian"
    UNSPACED = "unspaced"
    OTHER = "other"


SAMPLE_CHARS = 2000
_DETECTED_RANGES = (
    "A-Za-z\u00aa\u00b5\u00ba\u00c0-\u02af\u1e00-\u1eff\u2c60-\u2c7f\ua720-\ua7ff\uab30-\uab6f"
    "\ufb00-\ufb06\uff21-\uff3a\uff41-\uff5a"  # Latin
    "\u0370-\u03ff\u1f00-\u1fff"  # Greek
    "\u0400-\u052f\u1c80-\u1c8f\u2de0-\u2dff\ua640-\ua69f"  # Cyrillic
    "\u0600-\u06ff\u0750-\u077f\u0870-\u08ff\ufb50-\ufdff\ufe70-\ufeff"  # Arabic
)
_UNSPACED_RANGES = (
    "\u1100-\u11ff\u2e80-\u2fdf\u3005-\u3007\u3021-\u3029\u3031-\u3035\u3040-\u30ff\u3130-\u318f"
    "\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uffdc"
    "\U00020000-\U0003134f"  # Han, kana, Hangul
    "\u0e00-\u0e7f\u0e80-\u0eff\u1000-\u109f\ua9e0-\ua9ff\uaa60-\uaa7f\u1780-\u17ff\u19e0-\u19ff"
    "\u1a20-\u1aaf"  # Thai, Lao, Myanmar, Khmer, Tai Tham
)
# Counting by deletion (``len(s) - len(pattern.sub("", s))``) runs in C: ~20 µs for an English chunk.
_NON_LETTERS = re.compile("[\\W\\d_]+")  # what is left is letters (and numerals such as Ⅻ)
_NON_ROUTED = re.compile(f"[\\W\\d_{_DETECTED_RANGES}]+")  # what is left: letters of the other scripts
_RUNS = {
    Script.UNSPACED: re.compile(f"[{_UNSPACED_RANGES}]+"),
    Script.TAMIL: re.compile("[\u0b80-\u0bff\U00011fc0-\U00011fff]+"),
    Script.ARMENIAN: re.compile("[\u0530-\u058f\ufb13-\ufb17]+"),
}
_UNSPACED = re.compile(f"[{_UNSPACED_RANGES}]")
#: Signs that stack the next consonant under the previous one (Khmer coeng, Myanmar and Tai Tham
#: invisible viramas): the consonant belongs to the same cluster.
_STACKERS = frozenset("\u17d2\u1039\u1a60")
_JOINERS = frozenset("\u200c\u200d")  # ZWNJ, ZWJ: inside a word


def script_of(text: str) -> Script:
    """The script ``text`` is mostly written in (see the module docstring)."""
    sample = text[:SAMPLE_CHARS]
    routed = _NON_ROUTED.sub("", sample)
    if not routed:  # no letters, or only Latin, Greek, Cyrillic and Arabic ones
        return Script.DETECTED
    letters = len(_NON_LETTERS.sub("", sample))
    counts = {script: len(routed) - len(pattern.sub("", routed)) for script, pattern in _RUNS.items()}
    if counts[Script.UNSPACED] * 3 > letters:
        return Script.UNSPACED
    by_script = {
        Script.DETECTED: letters - len(routed),
        Script.TAMIL: counts[Script.TAMIL],
        Script.ARMENIAN: counts[Script.ARMENIAN],
        Script.OTHER: len(routed) - sum(counts.values()),
    }
    return max(by_script, key=lambda script: by_script[script])  # the first of equals: DETECTED


def ngram_text(text: str) -> str:
    """``text`` as space-separated tokens: unspaced runs as clusters and cluster pairs, other words whole.

    NFKC first (full-width Latin and half-width kana become their usual forms); punctuation,
    symbols and spaces separate tokens; combining marks stay with the letter before them.
    """
    tokens: list[str] = []
    word: list[str] = []  # the current word of a spaced script
    clusters: list[str] = []  # the current run of an unspaced script
    for ch in unicodedata.normalize("NFKC", text):
        category = unicodedata.category(ch)
        if category[0] == "M" or ch in _JOINERS:
            if clusters:
                clusters[-1] += ch
            elif word:
                word.append(ch)
        elif _UNSPACED.match(ch):
            _flush_word(word, tokens)
            if clusters and clusters[-1][-1] in _STACKERS:
                clusters[-1] += ch
            else:
                clusters.append(ch)
        elif category[0] in "LN":
            _flush_run(clusters, tokens)
            word.append(ch)
        else:
            _flush_word(word, tokens)
            _flush_run(clusters, tokens)
    _flush_word(word, tokens)
    _flush_run(clusters, tokens)
    return " ".join(tokens)


def _flush_word(word: list[str], tokens: list[str]) -> None:
    if word:
        tokens.append("".join(word))
        word.clear()


def _flush_run(clusters: list[str], tokens: list[str]) -> None:
    tokens.extend(clusters)
    tokens.extend(a + b for a, b in itertools.pairwise(clusters))
    clusters.clear()
