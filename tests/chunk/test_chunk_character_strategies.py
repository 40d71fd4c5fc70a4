"""The sentence and recursive strategies: where they cut and what they repeat."""

from __future__ import annotations

from itertools import pairwise

from ragd.types import Chunk, ChunkStrategy, Document
from tests.chunk.chunk_support import Setup, WhitespaceCounter, check_invariants


def sentence_text(n: int) -> tuple[str, list[str]]:
    sentences = [
        f"Sentence {i} is about topic {i % 5} and nothing else{'!' if i % 3 == 0 else '.'}" for i in range(n)
    ]
    return " ".join(sentences), sentences


def run(strategy: ChunkStrategy, text: str, *, size: int, overlap: int, max_tokens: int = 512) -> list[Chunk]:
    setup = Setup(strategy, WhitespaceCounter(), max_tokens, char_size=size, char_overlap=overlap)
    document = Document(text=text, extractor="test")
    chunks = setup.build().chunk(document)
    check_invariants(setup, document, chunks)
    return chunks


def test_sentence_chunks_are_whole_sentences() -> None:
    text, sentences = sentence_text(60)
    chunks = run(ChunkStrategy.SENTENCE, text, size=300, overlap=0)
    assert len(chunks) > 5
    assert [s for c in chunks for s in split_sentences(c.text)] == sentences


def test_sentence_overlap_repeats_whole_trailing_sentences() -> None:
    text, _ = sentence_text(60)
    chunks = run(ChunkStrategy.SENTENCE, text, size=300, overlap=120)
    repeated = 0
    for before, after in pairwise(chunks):
        shared = text[after.start : before.end]
        if after.start < before.end:
            repeated += 1
            assert shared.startswith("Sentence "), shared
            assert shared.endswith((".", "!")), shared
            assert len(shared) <= 120
    assert repeated >= len(chunks) - 2, "most neighbours should share a sentence"


def test_a_sentence_longer_than_the_size_is_cut_between_words() -> None:
    long_sentence = " ".join(f"word{i}" for i in range(200)) + "."
    chunks = run(ChunkStrategy.SENTENCE, f"Short one. {long_sentence} Short two.", size=150, overlap=0)
    assert all(len(c.text) <= 150 for c in chunks)
    assert all(c.text.split()[0].startswith(("word", "Short")) for c in chunks)
    assert all(c.text[-1] != "d" for c in chunks), "no chunk ends inside a word"


def test_recursive_prefers_paragraphs_then_lines() -> None:
    paragraphs = ["\n".join(f"line {p}.{k} " + "x" * 30 for k in range(4)) for p in range(12)]
    text = "\n\n".join(paragraphs)
    chunks = run(ChunkStrategy.RECURSIVE, text, size=400, overlap=0)
    assert all(c.text in paragraphs or "\n\n" in c.text for c in chunks if len(c.text) > 200)
    assert all(text[c.end : c.end + 2] in ("\n\n", "") for c in chunks), "cuts fall between paragraphs"
    long_paragraph = "\n".join(f"row {k} " + "y" * 60 for k in range(20))
    pieces = run(ChunkStrategy.RECURSIVE, long_paragraph, size=300, overlap=0)
    assert len(pieces) > 1
    assert all(p.text.startswith("row ") and p.text.endswith("y") for p in pieces), "cut at line ends"


def test_recursive_falls_back_to_characters_for_one_huge_word() -> None:
    word = "z" * 2500
    chunks = run(ChunkStrategy.RECURSIVE, f"before\n\n{word}\n\nafter", size=1000, overlap=100)
    pieces = [c for c in chunks if "z" in c.text]
    assert len(pieces) >= 3
    assert all(len(c.text) <= 1000 for c in pieces)


def test_character_chunks_respect_a_small_model_window() -> None:
    text, _ = sentence_text(80)
    for strategy in (ChunkStrategy.SENTENCE, ChunkStrategy.RECURSIVE):
        chunks = run(strategy, text, size=1200, overlap=200, max_tokens=40)
        assert all(WhitespaceCounter().count(c.text) + 2 <= 40 for c in chunks)


def split_sentences(text: str) -> list[str]:
    out, current = [], []
    for word in text.split(" "):
        current.append(word)
        if word.endswith((".", "!")):
            out.append(" ".join(current))
            current = []
    assert not current, f"chunk ends mid-sentence: {text[-40:]!r}"
    return out


def test_overlap_never_exceeds_half_a_chunk_cut_short_by_the_window() -> None:
    text, _ = sentence_text(80)
    for strategy in (ChunkStrategy.SENTENCE, ChunkStrategy.RECURSIVE):
        chunks = run(strategy, text, size=1200, overlap=600, max_tokens=40)
        for before, after in pairwise(chunks):
            assert before.end - after.start <= len(before.text) // 2 + 1
        assert len(chunks) < 2 * len(text) / max(len(c.text) for c in chunks) + 2
