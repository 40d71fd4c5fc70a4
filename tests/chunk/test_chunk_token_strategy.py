"""The token strategy: full windows, cuts at word starts, tokens that share a character."""

from __future__ import annotations

from ragd.types import Chunk, ChunkStrategy, Document
from tests.chunk.chunk_support import MiniLmCounter, Setup, check_invariants


def run(counter: MiniLmCounter, text: str, *, size: int, overlap: int, max_tokens: int = 256) -> list[Chunk]:
    setup = Setup(ChunkStrategy.TOKEN, counter, max_tokens, token_size=size, token_overlap=overlap)
    document = Document(text=text, extractor="test")
    chunks = setup.build().chunk(document)
    check_invariants(setup, document, chunks)
    return chunks


def test_chunks_fill_the_size_and_start_at_words(minilm: MiniLmCounter) -> None:
    text = " ".join(f"unaffable{i % 10} retrieval-augmented generation" for i in range(300))
    chunks = run(minilm, text, size=100, overlap=20)
    sizes = [minilm.count(c.text) for c in chunks]
    assert max(sizes) <= 100
    assert min(sizes[:-1]) >= 90, sizes
    assert all(c.start == 0 or text[c.start - 1] == " " for c in chunks)
    assert all(c.end == len(text) or text[c.end] == " " for c in chunks)


def test_text_without_spaces_is_cut_between_tokens(minilm: MiniLmCounter) -> None:
    text = "日本語のテキストです" * 60
    chunks = run(minilm, text, size=50, overlap=0)
    assert len(chunks) > 5
    assert "".join(c.text for c in chunks) == text


def test_a_character_split_into_several_tokens_is_never_cut(minilm: MiniLmCounter) -> None:
    # MiniLM splits a Hangul syllable into jamo tokens that all start at the same character.
    text = " ".join(["츄0002. 0."] * 40 + ["한국어 텍스트"] * 40)
    spans = minilm.token_spans(text)
    assert len({start for start, _ in spans}) < len(spans), "the example needs tokens sharing a start"
    run(minilm, text, size=16, overlap=7, max_tokens=22)
