"""The cross-encoder's tokenizer reads about a window's worth of a long query or passage (a
100,000-character text used to be tokenized whole, then truncated), and the pairs are the same."""

from __future__ import annotations

from ragd.model_inputs import CHARS_PER_TOKEN
from ragd.rerank.local_onnx import PairTokenizer
from tests.support.tokenizer_spy import Spy

from .conftest import WINDOW
from .tiny_cross_encoder import build_tokenizer

SENTENCE = "the dog runs in the park and the cat sits on a red mat by the river . "
LONG = (SENTENCE * 1500)[:100_000]


def test_long_texts_are_cut_before_tokenizing_and_the_pairs_are_unchanged() -> None:
    reference = PairTokenizer(build_tokenizer(), WINDOW)
    spied = PairTokenizer(build_tokenizer(), WINDOW)
    spy = Spy(spied._tokenizer)
    spied._tokenizer = spy  # type: ignore[assignment]
    cases = [("where do cats sit?", [LONG, "red", LONG[3:]]), (LONG, [LONG, "the cat"])]
    for query, passages in cases:
        got = spied.encode(query, passages)
        assert max(spy.read) <= WINDOW * CHARS_PER_TOKEN < len(LONG) // 100
        spy.read.clear()
        whole = _whole_pairs(reference, query, passages)
        assert [(list(p.ids), list(p.type_ids)) for p in got] == whole


Pair = tuple[list[int], list[int]]


def _whole_pairs(tokenizer: PairTokenizer, query: str, passages: list[str]) -> list[Pair]:
    """The pairs as built from whole tokenizations (what ragd did before it cut texts), by hand:
    ``[CLS] query [SEP] passage [SEP]`` (truncating whole encodings and post-processing them pairs
    every overflow piece of the query with every one of the passage: gigabytes for 100k characters)."""
    inner = build_tokenizer()
    cls, sep = inner.token_to_id("[CLS]"), inner.token_to_id("[SEP]")
    assert cls is not None
    assert sep is not None
    q_ids = inner.encode(query, add_special_tokens=False).ids
    keep = len(q_ids) if len(q_ids) < tokenizer.budget else tokenizer.budget // 2
    pairs = []
    for passage in passages:
        p_ids = inner.encode(passage, add_special_tokens=False).ids[: tokenizer.budget - keep]
        ids = [cls, *q_ids[:keep], sep, *p_ids, sep]
        pairs.append((ids, [0] * (keep + 2) + [1] * (len(p_ids) + 1)))
    return pairs
