"""Language identification: what BM25's stemmer and language-aware fusion both rely on."""

from __future__ import annotations

import pytest

from ragd.language import detect_language

GERMAN = "Wie viele Einwohner hat die Hauptstadt von Deutschland im Jahr zweitausend?"
ENGLISH = "How many people lived in the capital of Germany in the year two thousand?"


@pytest.mark.parametrize(("text", "code"), [(GERMAN, "de"), (ENGLISH, "en")])
def test_detects_a_question_and_again_from_the_cache(text: str, code: str) -> None:
    assert detect_language(text) == code
    assert detect_language(text) == code  # the second call is the cached answer


def test_unsure_answers_fall_back_to_each_callers_default() -> None:
    assert detect_language("ab 12 ?") is None  # fewer than three letters
    assert detect_language("ab 12 ?", default="en") == "en"
    # too short to call: unsure, and cached as unsure rather than as the first caller's default
    assert detect_language("qdrant ragd", default="xx") == "xx"
    assert detect_language("qdrant ragd", default="yy") == "yy"
    assert detect_language("qdrant ragd") is None
