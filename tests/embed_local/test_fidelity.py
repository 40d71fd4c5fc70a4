"""Fidelity to sentence-transformers: the fixture from bench/make_minilm_reference.py."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from safetensors.numpy import load_file

from ragd.embed.base import DenseEmbedder
from ragd.embed.bert_onnx import BertConfig, build_bert_graph
from ragd.embed.hf_tokenizer import HfTokenizer
from ragd.embed.local_onnx import OnnxDenseEmbedder
from ragd.embed.model_source import ModelFolder, Pooling
from ragd.embed.onnx_runner import normalise, pool
from ragd.settings import EmbeddingSettings
from ragd.types import DenseVector
from tests.embed_local.conftest import cosines, link_model_folder

MIN_COSINE = 0.9999


@pytest.fixture(scope="module")
def documents(dense: DenseEmbedder, reference: dict[str, Any]) -> list[DenseVector]:
    """Our embeddings of the fixture texts (no prefix), computed once for this module."""
    return asyncio.run(dense.embed_documents([item["text"] for item in reference["texts"]]))


def test_documents_match_sentence_transformers(
    documents: list[DenseVector], reference: dict[str, Any]
) -> None:
    texts = [item["text"] for item in reference["texts"]]
    expected = np.array([item["embedding"] for item in reference["texts"]])
    vectors = documents

    assert all(v.dtype == np.float32 and v.shape == (384,) for v in vectors)
    similarity = cosines(vectors, expected)
    worst = int(np.argmin(similarity))
    assert similarity[worst] >= MIN_COSINE, f"{texts[worst][:40]!r}: cosine {similarity[worst]:.7f}"


async def test_fixture_exercises_truncation(reference: dict[str, Any]) -> None:
    lengths = [item["tokens_untruncated"] for item in reference["texts"]]
    assert max(lengths) > reference["max_seq_length"]


async def test_queries_match_and_rank_like_the_reference(
    dense: DenseEmbedder, documents: list[DenseVector], reference: dict[str, Any]
) -> None:
    expected_documents = np.array([item["embedding"] for item in reference["texts"]])
    ours_documents = np.array(documents)

    for query in reference["queries"]:
        vector = await dense.embed_query(query["text"])
        assert cosines([vector], [query["embedding"]])[0] >= MIN_COSINE
        expected_order = np.argsort(-(expected_documents @ np.asarray(query["embedding"])))[:5]
        ours_order = np.argsort(-(ours_documents @ vector))[:5]
        assert ours_order.tolist() == expected_order.tolist(), query["text"]


@pytest.fixture(scope="module")
def token_state_export(packaged: ModelFolder) -> bytes:
    """The model as a plain transformer export: ids in, ``last_hidden_state`` out."""
    export = build_bert_graph(
        BertConfig.from_file(packaged.config_file), load_file(packaged.weights_file), None
    )
    return bytes(export.SerializeToString())


async def test_shipped_onnx_export_is_used_with_numpy_pooling(
    packaged: ModelFolder, token_state_export: bytes, reference: dict[str, Any], tmp_path: Path
) -> None:
    """A folder with onnx/model.onnx (token states only) is run as is: pooling happens in numpy."""
    folder = link_model_folder(packaged.path, tmp_path / "exported", skip=("model.safetensors",))
    (folder / "onnx").mkdir()
    (folder / "onnx" / "model.onnx").write_bytes(token_state_export)
    cache = tmp_path / "cache"

    embedder = OnnxDenseEmbedder.from_settings(EmbeddingSettings(model=str(folder)), cache)
    try:
        vectors = await embedder.embed_documents([item["text"] for item in reference["texts"]])
    finally:
        await embedder.aclose()

    assert embedder.spec.model == str(folder)
    assert not cache.exists(), "nothing should be built when the folder ships an ONNX model"
    similarity = cosines(vectors, [item["embedding"] for item in reference["texts"]])
    assert similarity.min() >= MIN_COSINE
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_cls_pooling_graph_equals_token_states_pooled_in_numpy(
    packaged: ModelFolder, token_state_export: bytes
) -> None:
    """CLS pooling has no sentence-transformers fixture: check the graph against the numpy path."""
    config = BertConfig.from_file(packaged.config_file)
    cls_graph = build_bert_graph(config, load_file(packaged.weights_file), Pooling.CLS)
    onnx.checker.check_model(cls_graph)
    tokenizer = HfTokenizer.from_file(packaged.tokenizer_file, 256)
    batch = tokenizer.pad(
        tokenizer.encode_for_model(["a short one", "a longer sentence to pad the short one"])
    )

    pooled = ort.InferenceSession(cls_graph.SerializeToString()).run(None, batch.as_feed())[0]
    hidden = ort.InferenceSession(token_state_export).run(None, batch.as_feed())[0]

    assert pooled.shape == (2, 384)
    assert np.allclose(pooled, normalise(pool(hidden, batch.attention_mask, Pooling.CLS)), atol=1e-6)
    assert not np.allclose(pooled, normalise(pool(hidden, batch.attention_mask, Pooling.MEAN)), atol=1e-3)
