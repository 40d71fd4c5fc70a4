"""A long input is cut to what can fill the model's window before the tokenizer reads it (a
100,000-character input used to be tokenized whole, then truncated): the tokenizer sees about a
window's worth of characters, and the model's tokens are exactly those of the whole text."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from ragd.embed.base import DenseSpec
from ragd.embed.hf_tokenizer import HfTokenizer
from ragd.embed.model_source import ModelFolder
from ragd.embed.serving import InputType, count_tokens
from ragd.model_inputs import CHARS_PER_TOKEN, encode_heads, head
from ragd.types import DenseVector
from tests.support.tokenizer_spy import Spy

WORDS = ["the", "alpha", "protocol", "requires", "three", "approvals", "before", "deployment", "reaches"]
LONG = " ".join(WORDS[i % len(WORDS)] for i in range(15_000))[:100_000]


@pytest.fixture(scope="module")
def folder(packaged: ModelFolder) -> ModelFolder:
    return packaged


@functools.cache
def truncating(folder: ModelFolder, window: int) -> Tokenizer:
    tokenizer = Tokenizer.from_file(str(folder.tokenizer_file))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=window)
    return tokenizer


@functools.cache
def model_tokenizer(folder: ModelFolder, window: int) -> HfTokenizer:
    return HfTokenizer.from_file(folder.tokenizer_file, window)


def whole(folder: ModelFolder, text: str, window: int) -> list[int]:
    """What the model reads of ``text`` when the tokenizer reads all of it."""
    return list(truncating(folder, window).encode(text, add_special_tokens=True).ids)


def spied(folder: ModelFolder) -> tuple[HfTokenizer, Spy]:
    tokenizer = HfTokenizer.from_file(folder.tokenizer_file, folder.max_seq_length)
    spy = Spy(tokenizer._encoder)
    tokenizer._encoder = spy  # type: ignore[assignment]
    return tokenizer, spy


def test_a_100k_character_input_is_cut_before_the_tokenizer_reads_it(folder: ModelFolder) -> None:
    tokenizer, spy = spied(folder)
    window = folder.max_seq_length
    (ids,) = tokenizer.encode_for_model([LONG])
    assert max(spy.read) <= window * CHARS_PER_TOKEN < len(LONG) // 40
    assert list(ids) == whole(folder, LONG, window)
    assert len(ids) == window


def test_a_batch_of_long_inputs_reads_a_window_s_worth_of_each(folder: ModelFolder) -> None:
    tokenizer, spy = spied(folder)
    texts = [LONG, "short text", LONG[7:]]
    encoded = tokenizer.encode_for_model(texts)
    assert sum(spy.read) <= 3 * folder.max_seq_length * CHARS_PER_TOKEN
    assert [list(ids) for ids in encoded] == [whole(folder, t, folder.max_seq_length) for t in texts]


def test_a_text_with_few_tokens_per_character_is_cut_again_longer(folder: ModelFolder) -> None:
    """White space is no token: a cut that does not fill the window doubles until it does."""
    sparse = "    \n\n    ".join(WORDS * 400)
    tokenizer, spy = spied(folder)
    (ids,) = tokenizer.encode_for_model([sparse])
    assert list(ids) == whole(folder, sparse, folder.max_seq_length)
    assert len(spy.read) >= 2
    assert max(spy.read) < len(sparse)


@settings(max_examples=40, deadline=None)
@given(
    words=st.lists(
        st.sampled_from([*WORDS, "naïve", "日本語", "x" * 120, "-", "e.g.", "Ünïcödé"]), max_size=900
    ),
    gaps=st.sampled_from([" ", "\n", "  \t ", "\u3000"]),
    window=st.sampled_from([8, 32, 256]),
)
def test_the_cut_changes_no_token_of_the_window(
    folder: ModelFolder, words: list[str], gaps: str, window: int
) -> None:
    text = gaps.join(words) or "a"
    (ids,) = model_tokenizer(folder, window).encode_for_model([text])
    assert list(ids) == whole(folder, text, window)


def test_a_head_ends_before_white_space_and_never_inside_a_word() -> None:
    assert head("short", 100) == "short"
    assert head("alpha beta gamma", 12) == "alpha beta"
    assert head("alpha\u3000beta gamma", 12) == "alpha\u3000beta"  # any Unicode white space
    assert head("ab " + "x" * 50 + " c", 10) == "ab"  # none in the second half: the last before it
    assert head("x" * 50 + " tail", 10) == "x" * 50  # a first word past the bound is kept whole
    assert head("x" * 50, 10) == "x" * 50
    assert len(head(LONG, 2048)) <= 2048


def test_encode_heads_keeps_the_input_order() -> None:
    texts = ["a " * 5000, "b", "c " * 3]
    lengths = encode_heads(texts, 4, lambda cuts: [len(c.split()) for c in cuts], lambda n: n >= 4)
    assert lengths == [len(head(texts[0], 4 * CHARS_PER_TOKEN).split()), 1, 3]


class Counting:
    """A dense model whose tokenizer counts words and records how much it read."""

    def __init__(self) -> None:
        self.spec = DenseSpec(model="words", dimension=3, max_tokens=256)
        self.read: list[int] = []

    @property
    def tokenizer(self) -> Counting:
        return self

    def count(self, text: str) -> int:
        self.read.append(len(text))
        return len(text.split())

    async def embed_query(self, text: str) -> DenseVector:
        return np.zeros(3, dtype=np.float32)

    async def embed_documents(self, texts: list[str]) -> list[DenseVector]:
        return [np.zeros(3, dtype=np.float32) for _ in texts]

    async def aclose(self) -> None:
        return None


def test_usage_counts_a_window_s_worth_of_each_input() -> None:
    dense = Counting()
    assert count_tokens(dense, [LONG] * 150, InputType.DOCUMENT) == 150 * 256  # type: ignore[arg-type]
    assert max(dense.read) <= 256 * CHARS_PER_TOKEN
    assert count_tokens(dense, ["three short words"], InputType.QUERY) == 3  # type: ignore[arg-type]
