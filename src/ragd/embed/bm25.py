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

Language: a fixed Snowball language, or ``auto`` to detect each text's
language.  Every language and script gets a vector: the languages Qdrant has stop
words for are stemmed and stop-worded; Tamil and Armenian are stemmed; text written
without spaces (Chinese, Japanese, Korean, Thai, Lao, Khmer, Burmese) is split by
Qdrant's multilingual (Unicode) tokenizer, unstemmed; any other script passes
through the fallback language's tokenizer, whose stemmer leaves it alone.  A
query's vector is the union of its tokens under the detected language and the
fallback language, so a short query whose language is misread still matches
documents stemmed the other way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

import qdrant_edge

from ragd.errors import ConfigurationError, SparseEmbeddingFailed
from ragd.language import SNOWBALL_LANGUAGES, detect_language
from ragd.types import SparseVector

FALLBACK_LANGUAGE = "en"
BM25_VERSION = "qdrant-bm25-k1.2-b0.75-qtf-v2"
DEFAULT_AVG_LEN = 100.0
_COUNTING_K = 1e9  # with b=0 the document weight tf·(k+1)/(tf+k) is the term count


#: Snowball stemmers Qdrant's BM25 has without a stop-word list of its language: stemmed, no stop words.
_STEM_ONLY = {"ta": "Tamil", "hy": "Armenian"}
#: The pseudo-language of text in scripts written without spaces (CJK, Thai …) and of any language
#: the engine cannot read: plain Unicode tokenisation (Qdrant's multilingual tokenizer), no stemming.
PLAIN = "*"
_UNSPACED = re.compile(
    "[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\u0e00-\u0e7f\u0e80-\u0eff\u1000-\u109f"
    "\u1780-\u17ff\uf900-\ufaff]"
)


def _config(language_code: str, k: float, b: float, avg_len: float) -> qdrant_edge.Bm25Config:
    """The engine's BM25 configuration for ``language_code`` (an ISO 639-1 code, or :data:`PLAIN`)."""
    if language_code == PLAIN:
        plain = qdrant_edge.TokenizerType.Multilingual
        return qdrant_edge.Bm25Config(
            k=k, b=b, avg_len=avg_len, tokenizer=plain, stemmer=qdrant_edge.DisabledStemmer()
        )
    if language_code in _STEM_ONLY:
        stemmer = qdrant_edge.SnowballParams(getattr(qdrant_edge.SnowballLanguage, _STEM_ONLY[language_code]))
        return qdrant_edge.Bm25Config(k=k, b=b, avg_len=avg_len, stemmer=stemmer)
    name = SNOWBALL_LANGUAGES.get(language_code, SNOWBALL_LANGUAGES[FALLBACK_LANGUAGE])
    return qdrant_edge.Bm25Config(k=k, b=b, avg_len=avg_len, language=name)


@lru_cache(maxsize=64)
def _model(language_code: str, avg_len: float) -> qdrant_edge.Bm25:
    return qdrant_edge.Bm25(_config(language_code, k=1.2, b=0.75, avg_len=avg_len))


@lru_cache(maxsize=32)
def _counter(language_code: str) -> qdrant_edge.Bm25:
    """The same tokens as :func:`_model`, weighted by their raw count."""
    return qdrant_edge.Bm25(_config(language_code, k=_COUNTING_K, b=0.0, avg_len=1.0))


def unspaced(text: str) -> bool:
    """Whether ``text`` is mostly written without spaces between words (CJK, Thai, Khmer …)."""
    sample = text[:2000]
    letters = sum(ch.isalpha() for ch in sample)
    return letters > 0 and len(_UNSPACED.findall(sample)) * 3 > letters


def term_counts(text: str, language_code: str) -> dict[int, float]:
    vec = _counter(language_code).embed_document(text)
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

    def _language_of(self, text: str) -> str:
        if unspaced(text):
            return PLAIN
        return self._language or detect_language(text, default=FALLBACK_LANGUAGE) or FALLBACK_LANGUAGE

    def embed_documents(self, texts: Sequence[str]) -> list[SparseVector]:
        try:
            return [_to_record(_model(self._language_of(t), self._avg_len).embed_document(t)) for t in texts]
        except Exception as exc:  # the engine raises plain ValueError/RuntimeError
            raise SparseEmbeddingFailed(f"BM25 document weighting failed: {exc}") from exc

    def embed_query(self, text: str) -> SparseVector:
        try:
            language = self._language_of(text)
            counts = term_counts(text, language)
            if self._language is None and language != FALLBACK_LANGUAGE:
                for index, count in term_counts(text, FALLBACK_LANGUAGE).items():
                    counts[index] = max(count, counts.get(index, 0.0))
        except Exception as exc:
            raise SparseEmbeddingFailed(f"BM25 query weighting failed: {exc}") from exc
        ordered = sorted(counts.items())
        return SparseVector(indices=tuple(i for i, _ in ordered), values=tuple(v for _, v in ordered))
