"""The model tokenizer as a TokenCounter (chunk sizing) and as the source of model inputs."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragd.chunk.base import TokenCounter
from ragd.embed.hf_tokenizer import HfTokenizer
from ragd.embed.model_source import ModelFolder

CLS, SEP, PAD = 101, 102, 0


@pytest.fixture(scope="module")
def tokenizer(packaged: ModelFolder) -> HfTokenizer:
    return HfTokenizer.from_file(packaged.tokenizer_file, packaged.max_seq_length)


def pieces(tokenizer: TokenCounter, text: str) -> list[str]:
    return [text[start:end] for start, end in tokenizer.token_spans(text)]


def test_ascii_spans_slice_the_original_text(tokenizer: HfTokenizer) -> None:
    assert pieces(tokenizer, "Hello, world!") == ["Hello", ",", "world", "!"]
    assert pieces(tokenizer, "  tokenization  ") == ["token", "ization"]


def test_non_ascii_spans_slice_the_original_text(tokenizer: HfTokenizer) -> None:
    text = "Grüße aus Köln 🎉 東京"
    spans = tokenizer.token_spans(text)
    sliced = [text[start:end] for start, end in spans]

    assert "".join(sliced) == text.replace(" ", "")  # no character lost or doubled
    assert "🎉" in sliced  # an unknown symbol still maps to its own character
    assert sliced[-2:] == ["東", "京"]  # CJK characters are split one by one
    assert tokenizer.count(text) == len(spans)


_TEXT = st.text(
    alphabet=st.characters(categories=("Lu", "Ll", "Lo", "Nd", "Pd", "Po", "Ps", "Pe", "Sm", "So", "Zs")),
    max_size=80,
)


def test_tokens_split_from_one_character_share_its_span(tokenizer: HfTokenizer) -> None:
    """Normalisation can split one character into several tokens (a Hangul syllable into jamo)."""
    spans = tokenizer.token_spans("한국 a")
    assert spans[0] == spans[1] == (0, 1)
    assert spans[-1] == (3, 4)
    assert tokenizer.count("한국 a") == len(spans) > 3


@settings(max_examples=200, deadline=None)
@given(text=_TEXT)
def test_spans_are_ordered_and_cover_every_visible_character(tokenizer: HfTokenizer, text: str) -> None:
    spans = tokenizer.token_spans(text)
    covered: set[int] = set()
    previous = (0, 0)
    for start, end in spans:
        assert 0 <= start < end <= len(text)
        assert (start, end) == previous or start >= previous[1]  # in order; shared only when split
        assert not text[start:end].isspace()
        covered.update(range(start, end))
        previous = (start, end)
    visible = {index for index, char in enumerate(text) if not char.isspace()}
    assert visible <= covered
    assert tokenizer.count(text) == len(spans)


def test_counting_ignores_the_bundled_128_token_truncation(tokenizer: HfTokenizer) -> None:
    text = "word " * 600
    assert tokenizer.count(text) == 600
    assert len(tokenizer.token_spans(text)) == 600


def test_model_inputs_carry_special_tokens_and_truncate_to_the_window(tokenizer: HfTokenizer) -> None:
    short, long = tokenizer.encode_for_model(["hello world", "word " * 600])

    assert short.tolist() == [CLS, *short[1:-1].tolist(), SEP]
    assert len(short) == 2 + tokenizer.count("hello world")
    assert len(long) == 256
    assert (long[0], long[-1]) == (CLS, SEP)


def test_pad_right_pads_to_the_longest_sequence(tokenizer: HfTokenizer) -> None:
    sequences = tokenizer.encode_for_model(["a", "a much longer piece of text"])
    batch = tokenizer.pad(sequences)

    width = len(sequences[1])
    assert batch.input_ids.shape == batch.attention_mask.shape == batch.token_type_ids.shape == (2, width)
    assert batch.input_ids.dtype == np.int64
    assert batch.input_ids[0].tolist() == [*sequences[0].tolist(), *[PAD] * (width - len(sequences[0]))]
    assert batch.attention_mask.sum(axis=1).tolist() == [len(sequences[0]), width]
    assert not batch.token_type_ids.any()


def test_long_texts_are_tokenized_in_pieces_with_the_same_spans(tokenizer: HfTokenizer) -> None:
    """Pieces cut at white space (bounded tokenizer memory) give exactly the spans of one pass."""
    from ragd.embed.hf_tokenizer import SEGMENT_CHARS, segments

    words = "harbour tariff ledger saffron crate Ostend quay. Über café 東京 한국 naïve — ok!\n"
    text = words * (3 * SEGMENT_CHARS // len(words))
    whole = list(tokenizer._counter.encode(text, add_special_tokens=False).offsets)
    assert tokenizer.token_spans(text) == whole
    assert tokenizer.token_arrays(text).tolist() == [list(span) for span in whole]
    pieces = segments(text, SEGMENT_CHARS)
    assert len(pieces) >= 3
    assert pieces[0][0] == 0
    assert pieces[-1][1] == len(text)
    assert all(a[1] == b[0] for a, b in pairwise(pieces))
    assert all(text[end - 1].isspace() for _, end in pieces[:-1])
    run = "x" * (2 * SEGMENT_CHARS + 7)  # no white space at all: cut where the size ends
    size = SEGMENT_CHARS
    assert segments(run, size) == [(0, size), (size, 2 * size), (2 * size, len(run))]
