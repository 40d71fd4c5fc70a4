"""Pure pieces of the rerank adapters: score maths, the token budget, padding, wire shapes, the folder."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragd.rerank.model_folder import locate
from ragd.rerank.pair_batch import EncodedPair, pad, query_budget
from ragd.rerank.scores import logit_probabilities, outside_unit_interval, sigmoid, unit_scores
from ragd.rerank.wire_formats import CohereWire, TeiWire


def test_sigmoid_is_exact_and_quiet_at_the_extremes() -> None:
    values = sigmoid([-1000.0, -2.0, 0.0, 2.0, 1000.0])  # -W error: no overflow warning
    np.testing.assert_allclose(values, [0.0, 1 / (1 + math.e**2), 0.5, 1 / (1 + math.e**-2), 1.0], atol=1e-15)


def test_one_logit_is_sigmoided_and_two_are_softmaxed() -> None:
    assert logit_probabilities([[0.0], [2.0]], 2) == pytest.approx([0.5, 1 / (1 + math.exp(-2.0))])
    assert logit_probabilities([0.0, -2.0], 2) == pytest.approx([0.5, 1 / (1 + math.exp(2.0))])
    two = np.array([[1.0, 3.0], [0.5, -0.5]])
    softmax = np.exp(two) / np.exp(two).sum(axis=1, keepdims=True)
    assert logit_probabilities(two, 2) == pytest.approx(list(softmax[:, 1]), abs=1e-12)


@pytest.mark.parametrize(
    ("logits", "count", "reason"),
    [
        (np.zeros((2, 3)), 2, r"got \[2, 3\]"),
        (np.zeros((3, 1)), 2, r"got \[3, 1\]"),
        (np.zeros((2, 1, 1)), 2, r"got \[2, 1, 1\]"),
        (np.array([[np.nan], [0.0]]), 2, "non-finite"),
    ],
)
def test_unexpected_logits(logits: np.ndarray, count: int, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        logit_probabilities(logits, count)


def test_server_scores() -> None:
    assert not outside_unit_interval([0.0, 0.5, 1.0])
    assert outside_unit_interval([0.2, 1.5])
    assert outside_unit_interval([-0.1])
    assert unit_scores([0.0, 0.7], logits=False) == [0.0, 0.7]
    assert unit_scores([0.0, 0.7], logits=True) == pytest.approx([0.5, 1 / (1 + math.exp(-0.7))])


@given(st.integers(0, 600), st.integers(2, 600))
def test_query_budget(query_tokens: int, budget: int) -> None:
    kept = query_budget(query_tokens, budget)
    assert 0 <= kept < budget  # the passage always keeps at least one token
    if query_tokens < budget:
        assert kept == query_tokens  # a query that fits is never cut
    else:
        assert kept == budget // 2


def test_pad_masks_and_types() -> None:
    batch = pad([EncodedPair([2, 5, 3, 6, 3], [0, 0, 0, 1, 1]), EncodedPair([2, 3, 3], [0, 0, 1])], pad_id=9)
    assert batch.input_ids.tolist() == [[2, 5, 3, 6, 3], [2, 3, 3, 9, 9]]
    assert batch.attention_mask.tolist() == [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]
    assert batch.token_type_ids.tolist() == [[0, 0, 0, 1, 1], [0, 0, 1, 0, 0]]
    assert {a.dtype for a in batch.as_feed().values()} == {np.dtype(np.int64)}


@pytest.mark.parametrize(
    ("base_path", "path"),
    [("/", "v1/rerank"), ("/v1/", "rerank"), ("/api/v1", "rerank"), ("/v1x/", "v1/rerank")],
)
def test_cohere_path(base_path: str, path: str) -> None:
    assert CohereWire.for_base_url("m", base_path).path == path


def test_wire_requests() -> None:
    assert CohereWire("m").request("q", ("a", "b")) == {
        "model": "m",
        "query": "q",
        "documents": ["a", "b"],
        "top_n": 2,
    }
    assert TeiWire().request("q", ["a"]) == {
        "query": "q",
        "texts": ["a"],
        "raw_scores": False,
        "truncate": True,
    }
    assert TeiWire().scores([{"index": 1, "score": 1}, {"index": 0, "score": 0.5}], 2) == {1: 1.0, 0: 0.5}
    with pytest.raises(ValueError, match="index True"):
        TeiWire().scores([{"index": True, "score": 0.5}], 2)


@pytest.mark.parametrize(
    ("config", "window"),
    [
        ({"model_max_length": 256}, 256),
        ({"model_max_length": 4096}, 512),
        ({"model_max_length": 1000000000000000019884624838656}, 512),  # transformers' "no limit"
        ({"model_max_length": None}, 512),
        ({}, 512),
        ([], 512),
    ],
)
def test_window_from_tokenizer_config(tmp_path: Path, config: object, window: int) -> None:
    (tmp_path / "model.onnx").write_bytes(b"")
    (tmp_path / "tokenizer.json").write_text("{}", encoding="utf-8")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    assert locate(tmp_path).window(512) == window
