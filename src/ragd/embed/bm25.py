"""BM25 term weights for Qdrant's sparse vectors, per language.

The weights are Qdrant's own BM25 (``qdrant_edge.Bm25``: tokenisation,
lower-casing, stop words and a Snowball stemmer per language, token ids
hashed with murmur3, document weights ``tf·(k1+1) / (tf + k1·(1-b+b·len/avg))``).
A query term weighs its count in the query, as in classic BM25 (a long query that
repeats a term cares more about it; on CISI's paragraph-long queries this is worth
+0.08 nDCG@10).  ``avg`` is ``avg_len`` (default 100: the mean BM25 length — stop
words removed — of ragd's default chunks; it is part of the index manifest).
IDF is applied inside Qdrant by the ``text-sparse``
vector's ``modifier=IDF`` at query time, so there is never a BM25 over the
whole collection in-process.  The same object runs at index and query time.

Language and script (:mod:`ragd.embed.scripts`): text in Latin, Greek, Cyrillic or Arabic script
is stemmed and stop-worded in a fixed Snowball language, or with ``auto`` in each text's detected
language (English when unsure), exactly as Qdrant does for that language.  Every other script is
routed by the script alone, the same at index and query time, and never an error: Tamil and
Armenian get their Snowball stemmer (Qdrant has no stop words for them); text written without
spaces (Chinese, Japanese, Korean, Thai, Lao, Khmer, Burmese) becomes character unigrams and
bigrams, unstemmed; any other script (Georgian, Hebrew, Devanagari, Ethiopic …) is split into
Unicode words by Qdrant's multilingual tokenizer, unstemmed.  Text with no words (punctuation,
emoji) has an empty vector.  A query's vector is the union of its own tokens and its tokens in the
fixed language (with ``auto``: English), so a short query whose language is misread still matches
passages stemmed the other way, and a Tamil or Chinese word is also found inside a passage that is
mostly English (where the English tokenizer split it).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import qdrant_edge

from ragd.embed.scripts import Script, ngram_text, script_of
from ragd.errors import ConfigurationError, SparseEmbeddingFailed
from ragd.language import SNOWBALL_LANGUAGES, detect_language
from ragd.types import SparseVector

FALLBACK_LANGUAGE = "en"
BM25_VERSION = "qdrant-bm25-k1.2-b0.75-qtf-v2"
DEFAULT_AVG_LEN = 100.0
_COUNTING_K = 1e9  # with b=0 the document weight tf·(k+1)/(tf+k) is the term count


#: Snowball stemmers Qdrant's BM25 has without a stop-word list of its language: stemmed, no stop words.
_STEM_ONLY = {"ta": "Tamil", "hy": "Armenian"}
#: Pseudo-language of scripts Qdrant has no language for: Unicode words (multilingual tokenizer), unstemmed.
PLAIN = "*"
#: Pseudo-language of scripts written without spaces: character unigrams and bigrams (:func:`ngram_text`).
NGRAMS = "*ngrams"
_BY_SCRIPT = {Script.TAMIL: "ta", Script.ARMENIAN: "hy", Script.UNSPACED: NGRAMS, Script.OTHER: PLAIN}


def _config(language_code: str, k: float, b: float, avg_len: float) -> qdrant_edge.Bm25Config:
    """The engine's BM25 configuration for ``language_code`` (ISO 639-1, :data:`PLAIN` or :data:`NGRAMS`)."""
    unstemmed = qdrant_edge.DisabledStemmer()
    if language_code == NGRAMS:  # the text is already split: only cut at the spaces
        words = qdrant_edge.TokenizerType.Whitespace
        return qdrant_edge.Bm25Config(k=k, b=b, avg_len=avg_len, tokenizer=words, stemmer=unstemmed)
    unicode_words = qdrant_edge.TokenizerType.Multilingual  # keeps viramas and vowel signs inside words
    if language_code == PLAIN:
        return qdrant_edge.Bm25Config(k=k, b=b, avg_len=avg_len, tokenizer=unicode_words, stemmer=unstemmed)
    if language_code in _STEM_ONLY:
        stemmer = qdrant_edge.SnowballParams(getattr(qdrant_edge.SnowballLanguage, _STEM_ONLY[language_code]))
        return qdrant_edge.Bm25Config(k=k, b=b, avg_len=avg_len, tokenizer=unicode_words, stemmer=stemmer)
    name = SNOWBALL_LANGUAGES.get(language_code, SNOWBALL_LANGUAGES[FALLBACK_LANGUAGE])
    return qdrant_edge.Bm25Config(k=k, b=b, avg_len=avg_len, language=name)


@lru_cache(maxsize=64)
def _model(language_code: str, avg_len: float) -> qdrant_edge.Bm25:
    return qdrant_edge.Bm25(_config(language_code, k=1.2, b=0.75, avg_len=avg_len))


@lru_cache(maxsize=32)
def _counter(language_code: str) -> qdrant_edge.Bm25:
    """The same tokens as :func:`_model`, weighted by their raw count."""
    return qdrant_edge.Bm25(_config(language_code, k=_COUNTING_K, b=0.0, avg_len=1.0))


def _engine_text(text: str, language_code: str) -> str:
    return ngram_text(text) if language_code == NGRAMS else text


def term_counts(text: str, language_code: str) -> dict[int, float]:
    """How often each of ``text``'s tokens occurs, tokenised as ``language_code``."""
    vec = _counter(language_code).embed_document(_engine_text(text, language_code))
    return {int(i): float(round(v)) for i, v in zip(vec.indices, vec.values, strict=True)}


def _to_record(vec: qdrant_edge.SparseVector) -> SparseVector:
    return SparseVector(indices=tuple(vec.indices), values=tuple(vec.values))


class Bm25SparseEmbedder:
    """Implements :class:`ragd.embed.base.SparseEmbedder`."""

    def __init__(self, language: str = "auto", avg_len: float = DEFAULT_AVG_LEN) -> None:
        self._language = self._parse_language(language)
        self._avg_len = float(avg_len)
        self.name = f"{BM25_VERSION}-avg{avg_len:g}-{language}"

    @staticmethod
    def _parse_language(language: str) -> str | None:
        if language == "auto":
            return None
        by_name = {name: code for code, name in SNOWBALL_LANGUAGES.items()}
        code = by_name.get(language.lower(), language.lower())
        if code not in SNOWBALL_LANGUAGES:
            valid = ", ".join(["auto", *sorted(by_name)])
            raise ConfigurationError(f"unknown BM25 language {language!r}; valid values: {valid}")
        return code

    def _language_of(self, text: str, script: Script) -> str:
        if script is not Script.DETECTED:
            return _BY_SCRIPT[script]
        return self._language or detect_language(text, default=FALLBACK_LANGUAGE) or FALLBACK_LANGUAGE

    def embed_documents(self, texts: Sequence[str]) -> list[SparseVector]:
        try:
            return [self._embed_document(t) for t in texts]
        except Exception as exc:  # the engine raises plain ValueError/RuntimeError
            raise SparseEmbeddingFailed(f"BM25 document weighting failed: {exc}") from exc

    def _embed_document(self, text: str) -> SparseVector:
        language = self._language_of(text, script_of(text))
        return _to_record(_model(language, self._avg_len).embed_document(_engine_text(text, language)))

    def embed_query(self, text: str) -> SparseVector:
        try:
            language = self._language_of(text, script_of(text))
            counts = term_counts(text, language)
            # also as a passage in another language or script holds these words (fixed language, or English)
            usual = self._language or FALLBACK_LANGUAGE
            if language != usual:
                for index, count in term_counts(text, usual).items():
                    counts[index] = max(count, counts.get(index, 0.0))
        except Exception as exc:
            raise SparseEmbeddingFailed(f"BM25 query weighting failed: {exc}") from exc
        ordered = sorted(counts.items())
        return SparseVector(indices=tuple(i for i, _ in ordered), values=tuple(v for _, v in ordered))
