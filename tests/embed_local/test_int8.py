"""RAGD_EMBEDDING__PRECISION=int8: the quantised graph, its cache, its fidelity, and the manifest."""

from __future__ import annotations

import asyncio
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from pydantic import ValidationError

from ragd.bootstrap import open_services
from ragd.embed import onnx_runner, quantize
from ragd.embed.base import DenseEmbedder
from ragd.embed.local_onnx import OnnxDenseEmbedder
from ragd.embed.quantize import int8_output_error, kept_fp32, projections_to_keep
from ragd.errors import IndexMismatch
from ragd.settings import EmbeddingSettings, Settings
from tests.embed_local.conftest import cosines


@pytest.fixture(scope="module")
def int8(model_cache: Path) -> Iterator[OnnxDenseEmbedder]:
    embedder = OnnxDenseEmbedder.from_settings(EmbeddingSettings(precision="int8"), model_cache)
    yield embedder
    asyncio.run(embedder.aclose())


def _texts(reference: dict[str, Any]) -> list[str]:
    return [item["text"] for item in reference["texts"]]


def test_the_graph_runs_int8_kernels_and_keeps_its_outlier_projections_fp32(int8: OnnxDenseEmbedder) -> None:
    source = int8._encoder.source
    assert source.name.startswith("int8-")
    ops = Counter(node.op_type for node in onnx.load(str(source)).graph.node)
    # all-MiniLM-L6-v2: 6 layers of one fused Attention and three MatMuls
    kept = kept_fp32(source)
    assert ops["QAttention"] + ops["MatMulInteger"] == 24 - len(kept)
    assert ops["MatMul"] == len(kept)
    assert 1 <= len(kept) <= 24 * quantize.MAX_KEPT_SHARE
    assert int8.spec.precision == "int8"


async def test_int8_vectors_stay_close_to_fp32_and_rank_alike(
    int8: OnnxDenseEmbedder, dense: DenseEmbedder, reference: dict[str, Any]
) -> None:
    texts = _texts(reference)
    exact = np.array(await dense.embed_documents(texts))
    approx = np.array(await int8.embed_documents(texts))
    similarity = cosines(exact, approx)
    assert similarity.min() >= 0.97, similarity.min()
    assert similarity.mean() >= 0.99, similarity.mean()
    norms = np.linalg.norm(approx, axis=1)
    assert np.allclose(norms, 1.0, atol=1e-5)
    # each text as a query: its own document ranks first under both precisions
    query = np.array([await int8.embed_query(text) for text in texts[:8]])
    assert list((query @ exact.T).argmax(axis=1)) == list(range(8))


def test_the_int8_graph_is_made_once_and_reused(model_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = OnnxDenseEmbedder.from_settings(EmbeddingSettings(precision="int8"), model_cache)
    asyncio.run(first.aclose())

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the cached int8 graph was quantised again")

    monkeypatch.setattr(onnx_runner, "quantize_graph", refuse)
    again = OnnxDenseEmbedder.from_settings(EmbeddingSettings(precision="int8"), model_cache)
    assert again._encoder.source == first._encoder.source
    assert not again._encoder.built
    asyncio.run(again.aclose())


@pytest.mark.slow  # > 5 s (the fast tier's bound)
async def test_a_cut_int8_file_is_quantised_again(model_cache: Path, tmp_path: Path) -> None:
    cache = tmp_path / "models"
    cache.mkdir()
    for graph in model_cache.glob("bert-*.onnx"):  # the fp32 graph, as converted once per session
        shutil.copy(graph, cache / graph.name)
    made = OnnxDenseEmbedder.from_settings(EmbeddingSettings(precision="int8"), cache)
    vector = await made.embed_query("a cut file is rebuilt")
    await made.aclose()
    path = made._encoder.source
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    rebuilt = OnnxDenseEmbedder.from_settings(EmbeddingSettings(precision="int8"), cache)
    assert rebuilt._encoder.built
    assert path.read_bytes() == data  # the same graph again: quantisation is deterministic
    assert np.allclose(await rebuilt.embed_query("a cut file is rebuilt"), vector, atol=1e-6)
    await rebuilt.aclose()
    assert [p.name for p in cache.iterdir() if p.name.startswith(".")] == []  # no temporaries left


def test_precision_is_the_local_model_s_setting() -> None:
    with pytest.raises(ValidationError, match="precision='int8' is for the local model"):
        EmbeddingSettings(provider="openai", base_url="http://127.0.0.1:1/v1", model="m", precision="int8")
    with pytest.raises(ValidationError):
        EmbeddingSettings(precision="int4")


def test_the_output_error_is_zero_when_int8_is_exact_and_grows_with_an_outlier() -> None:
    rng = np.random.default_rng(7)
    weight = rng.integers(-127, 128, size=(16, 8)).astype(np.float64)
    weight[0] = 127  # every column's range is exactly 127 steps
    inputs = rng.integers(0, 256, size=(32, 16)).astype(np.float64)
    inputs[0, 0] = 255.0
    inputs[1, 0] = 0.0
    assert int8_output_error(inputs, weight) == pytest.approx(0.0, abs=1e-12)
    smooth = rng.normal(size=(64, 16))
    spiked = smooth.copy()
    spiked[0, 3] = 60.0  # one activation 20x the rest: the other values lose their resolution
    assert int8_output_error(spiked, weight) > 3 * int8_output_error(smooth, weight)


def test_only_projections_that_stand_out_stay_fp32_and_never_more_than_a_quarter() -> None:
    assert projections_to_keep({}) == ()
    errors = {f"p{i}": 0.02 for i in range(20)} | {"worst": 0.09, "bad": 0.07, "border": 0.039}
    assert projections_to_keep(errors) == ("worst", "bad")
    every = {f"p{i}": 0.01 * (i + 1) ** 3 for i in range(8)}  # many stand out: two (a quarter) kept
    assert projections_to_keep(every) == ("p7", "p6")


async def test_fp32_and_int8_indexes_refuse_each_other(tmp_path: Path, model_cache: Path) -> None:
    def settings(precision: str) -> Settings:
        return Settings(
            data_dir=tmp_path / "data",
            embedding=EmbeddingSettings(cache_dir=model_cache, precision=precision),
        )

    async with open_services(settings("fp32")):
        pass
    with pytest.raises(IndexMismatch) as refused:
        async with open_services(settings("int8")):
            pass
    assert "RAGD_EMBEDDING__PRECISION" in str(refused.value)
    assert "index has 'fp32', configuration has 'int8'" in str(refused.value)

    other = tmp_path / "other"
    async with open_services(settings("int8").model_copy(update={"data_dir": other})):
        pass
    with pytest.raises(IndexMismatch, match="index has 'int8', configuration has 'fp32'"):
        async with open_services(settings("fp32").model_copy(update={"data_dir": other})):
            pass


async def test_a_named_model_s_precision_is_in_the_manifest_too(tmp_path: Path, model_cache: Path) -> None:
    def settings(precision: str) -> Settings:
        named = EmbeddingSettings(cache_dir=model_cache, precision=precision)
        return Settings(
            data_dir=tmp_path / "data",
            embedding=EmbeddingSettings(cache_dir=model_cache),
            embedders={"small": named},
        )

    async with open_services(settings("int8")) as services:
        (space,) = services.manifest.extra_dense
        assert (space.name, space.precision, services.manifest.dense_precision) == ("small", "int8", "fp32")
    with pytest.raises(IndexMismatch, match=r"small=.*precision int8"):
        async with open_services(settings("fp32")):
            pass
