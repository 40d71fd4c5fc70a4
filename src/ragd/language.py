"""Language identification for text and queries (ISO 639-1 codes).

Used twice with the same function: to pick BM25 stemming and stop words per
text, and to decide how much to trust an English-only dense model for a query
(language-aware fusion).  The identifier (py3langid, a model shipped inside
the package) loads lazily once and is restricted to the languages we have
stemmers for, which makes short texts far less ambiguous.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import Any

#: ISO 639-1 code -> Snowball/stop-word language name (Qdrant's BM25 names).
SNOWBALL_LANGUAGES: dict[str, str] = {
    "ar": "arabic",
    "da": "danish",
    "de": "german",
    "el": "greek",
    "en": "english",
    "es": "spanish",
    "fi": "finnish",
    "fr": "french",
    "hu": "hungarian",
    "hy": "armenian",
    "it": "italian",
    "nl": "dutch",
    "no": "norwegian",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sv": "swedish",
    "ta": "tamil",
    "tr": "turkish",
}

#: Below this probability the text is too short or mixed to call.
MIN_CONFIDENCE = 0.6

_lock = threading.Lock()


@lru_cache(maxsize=1)
def _identifier() -> Any:
    from py3langid import langid

    ident = langid.LanguageIdentifier.from_modelpath(langid.MODEL_DIR / langid.MODEL_FILE, norm_probs=True)
    ident.set_languages(sorted(SNOWBALL_LANGUAGES))
    return ident


def load_identifier() -> None:
    """Load the identifier now (about a second of CPU) instead of on the first text it sees."""
    _identifier()


def detect_language(text: str, *, default: str | None = None) -> str | None:
    """The ISO 639-1 code of ``text``'s language, or ``default`` when unsure."""
    sample = text[:2000]
    if sum(ch.isalpha() for ch in sample) < 3:
        return default
    return _classify(sample) or default


@lru_cache(maxsize=256)
def _classify(sample: str) -> str | None:
    """The confident language of ``sample``.  Cached: a hybrid query is classified twice
    back to back (BM25's stemmer, then fusion's weights), ~0.2 ms each in a search."""
    with _lock:  # the identifier keeps per-call scratch state
        code, prob = _identifier().classify(sample)
    return str(code) if prob >= MIN_CONFIDENCE else None
