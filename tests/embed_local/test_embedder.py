"""OnnxDenseEmbedder: the DenseEmbedder contract, prefixes, batching, failures, the event loop."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

from ragd.embed.base import DenseEmbedder
from ragd.embed.hf_tokenizer import ModelInputs
from ragd.embed.local_onnx import OnnxDenseEmbedder
from ragd.embed.model_source import ModelFolder
from ragd.embed.onnx_runner import Matrix, OnnxEncoder, open_encoder
from ragd.errors import ConfigurationError, EmbeddingFailed
from ragd.settings import PACKAGED_MINILM, EmbeddingSettings
from tests.embed_local.conftest import Make

WORDS = ["retrieval", "ranking", "vectors", "chunk", "index", "query", "answer", "model", "token", "passage"]


def chunk_text(seed: int, tokens: int) -> str:
    rng = np.random.default_rng(seed)
    return " ".join(rng.choice(WORDS, size=tokens))


@pytest.fixture(scope="module", params=["fp32", "int8"])
def precision(request: pytest.FixtureRequest) -> str:
    """Every test of the contract runs on both precisions of the local model."""
    return str(request.param)


@pytest.fixture(scope="module")
def int8_dense(model_cache: Path) -> Iterator[DenseEmbedder]:
    embedder = OnnxDenseEmbedder.from_settings(EmbeddingSettings(precision="int8"), model_cache)
    yield embedder
    asyncio.run(embedder.aclose())


@pytest.fixture
def dense(dense: DenseEmbedder, precision: str, request: pytest.FixtureRequest) -> DenseEmbedder:
    """The session's fp32 model, or this module's int8 one."""
    return cast(DenseEmbedder, request.getfixturevalue("int8_dense")) if precision == "int8" else dense


@pytest.fixture
def make_embedder(make_embedder: Make, precision: str) -> Make:
    def make(**settings: Any) -> OnnxDenseEmbedder:
        return make_embedder(**{"precision": precision, **settings})

    return make


def test_spec_and_tokenizer_describe_the_packaged_model(dense: DenseEmbedder, precision: str) -> None:
    assert dense.spec.precision == precision
    assert dense.spec.model == PACKAGED_MINILM
    assert (dense.spec.dimension, dense.spec.max_tokens) == (384, 256)
    assert (dense.spec.query_prefix, dense.spec.document_prefix) == ("", "")
    assert dense.tokenizer is not None
    assert dense.tokenizer.count("hello world") == 2


async def test_vectors_are_unit_float32(dense: DenseEmbedder) -> None:
    query = await dense.embed_query("what is hybrid search?")
    (document,) = await dense.embed_documents(["Hybrid search fuses BM25 and dense rankings."])
    for vector in (query, document):
        assert vector.dtype == np.float32
        assert vector.shape == (384,)
        assert float(np.linalg.norm(vector)) == pytest.approx(1.0, abs=1e-5)
    assert await dense.embed_documents([]) == []


async def test_prefixes_reach_the_model(dense: DenseEmbedder, make_embedder: Make) -> None:
    prefixed = make_embedder(query_prefix="query: ", document_prefix="passage: ")
    text = "how do I rotate an API key"

    query = await prefixed.embed_query(text)
    (document,) = await prefixed.embed_documents([text])

    assert prefixed.spec.query_prefix == "query: "
    assert prefixed.spec.document_prefix == "passage: "
    assert float(query @ document) < 0.999
    np.testing.assert_allclose(query, await dense.embed_query("query: " + text), atol=1e-5)
    np.testing.assert_allclose(document, (await dense.embed_documents(["passage: " + text]))[0], atol=1e-5)


async def test_batching_by_length_keeps_input_order(make_embedder: Make) -> None:
    embedder = make_embedder(batch_size=3)
    texts = [chunk_text(seed, tokens) for seed, tokens in enumerate([200, 3, 40, 1, 120, 7, 300, 60])]

    together = await embedder.embed_documents(texts)
    alone = [(await embedder.embed_documents([text]))[0] for text in texts]
    backwards = await embedder.embed_documents(texts[::-1])

    for joint, single, reverse in zip(together, alone, backwards[::-1], strict=True):
        np.testing.assert_allclose(joint, single, atol=1e-5)
        np.testing.assert_allclose(joint, reverse, atol=1e-5)
    assert len({vector.tobytes() for vector in together}) == len(texts)


async def test_max_tokens_setting_shortens_the_window(dense: DenseEmbedder, make_embedder: Make) -> None:
    short = make_embedder(max_tokens=32)
    text = chunk_text(1, 200)
    cut = text[: dense.tokenizer.token_spans(text)[29][1]] if dense.tokenizer else ""  # 30 + [CLS],[SEP]

    assert short.spec.max_tokens == 32
    np.testing.assert_allclose(await short.embed_query(text), await dense.embed_query(cut), atol=1e-5)
    assert float((await short.embed_query(text)) @ (await dense.embed_query(text))) < 0.999


def test_max_tokens_beyond_the_model_positions_is_refused(model_cache: Path) -> None:
    with pytest.raises(ConfigurationError, match="512"):
        OnnxDenseEmbedder.from_settings(EmbeddingSettings(max_tokens=1024), model_cache)


def test_onnxruntime_failure_becomes_embedding_failed(
    packaged: ModelFolder, model_cache: Path, dense: DenseEmbedder, precision: str
) -> None:
    encoder = open_encoder(packaged, model_cache, batch_threads=1, query_threads=1, precision=precision)
    out_of_vocabulary = np.array([[101, 10_000_000, 102]], dtype=np.int64)
    batch = ModelInputs(out_of_vocabulary, np.ones_like(out_of_vocabulary), np.zeros_like(out_of_vocabulary))

    with pytest.raises(EmbeddingFailed, match="onnxruntime"):
        encoder.encode(batch)


async def test_closed_embedder_refuses_work(make_embedder: Make) -> None:
    embedder = make_embedder()
    await embedder.aclose()
    with pytest.raises(EmbeddingFailed, match="closed"):
        await embedder.embed_query("anything")


async def test_event_loop_keeps_ticking_during_a_large_batch(dense: DenseEmbedder) -> None:
    texts = [chunk_text(seed, 250) for seed in range(24)]
    gaps: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        while not done.is_set():
            started = time.perf_counter()
            await asyncio.sleep(0.01)
            gaps.append(time.perf_counter() - started)

    ticking = asyncio.create_task(ticker())
    started = time.perf_counter()
    await dense.embed_documents(texts)
    duration = time.perf_counter() - started
    done.set()
    await ticking

    assert len(gaps) >= duration / 0.01 / 4, f"{len(gaps)} ticks in {duration:.2f} s"
    assert max(gaps) < duration / 4, f"loop stalled {max(gaps):.3f} s of {duration:.2f} s"


class _Gated:
    """A real encoder whose document batches wait at a gate the test opens (queries pass)."""

    def __init__(self, inner: OnnxEncoder) -> None:
        self._inner = inner
        self.entered = threading.Event()
        self.gate = threading.Event()

    def encode(self, batch: ModelInputs, *, query: bool = False) -> Matrix:
        if not query:
            self.entered.set()
            if not self.gate.wait(timeout=60):
                raise EmbeddingFailed("the test never opened the gate")
        return self._inner.encode(batch, query=query)


async def test_a_query_never_waits_behind_an_ingest_s_batches(make_embedder: Make) -> None:
    embedder = make_embedder(batch_size=4)
    gated = _Gated(embedder._encoder)
    embedder._encoder = gated  # type: ignore[assignment]
    ingest = asyncio.create_task(embedder.embed_documents([chunk_text(seed, 250) for seed in range(12)]))
    try:
        assert await asyncio.to_thread(gated.entered.wait, 30), "no lane took the ingest's first batch"

        # every lane is held inside a document batch: the query must not need one of them
        query = await asyncio.wait_for(embedder.embed_query("a query while ingesting"), timeout=15)

        assert not ingest.done()
    finally:
        gated.gate.set()
    assert float(np.linalg.norm(query)) == pytest.approx(1.0, abs=1e-5)
    assert len(await ingest) == 12


async def test_concurrent_calls_share_batches_and_get_their_own_vectors(make_embedder: Make) -> None:
    embedder = make_embedder(batch_size=4, lanes=2, threads=2)
    lengths = [10 + 37 * (seed % 6) for seed in range(11)]
    calls = [[chunk_text(100 * call + row, lengths[call + row]) for row in range(5)] for call in range(6)]
    alone = [await embedder.embed_documents(texts) for texts in calls]

    together = await asyncio.gather(*(embedder.embed_documents(texts) for texts in calls))

    for mine, reference in zip(together, alone, strict=True):
        assert len(mine) == len(reference)
        for vector, expected in zip(mine, reference, strict=True):
            np.testing.assert_allclose(vector, expected, atol=1e-5)


class _Poisoned:
    """An encoder that fails any batch holding one token id (a real encoder otherwise)."""

    def __init__(self, inner: OnnxEncoder, poison: int) -> None:
        self._inner = inner
        self._poison = poison

    def encode(self, batch: ModelInputs, *, query: bool = False) -> Matrix:
        if (batch.input_ids == self._poison).any():
            raise EmbeddingFailed("onnxruntime failed on a batch (poisoned for the test)")
        return self._inner.encode(batch, query=query)


async def test_a_failed_batch_fails_only_the_calls_in_it(make_embedder: Make) -> None:
    embedder = make_embedder(batch_size=8, lanes=1, threads=1)
    poison = embedder._tokenizer.encode_for_model(["zebra"])[0][1]
    embedder._encoder = _Poisoned(embedder._encoder, poison)  # type: ignore[assignment]
    healthy = [chunk_text(seed, 200) for seed in range(6)]  # never batched with a 6-token text

    bad, good = await asyncio.gather(
        embedder.embed_documents(["zebra zebra zebra", chunk_text(99, 200)]),
        embedder.embed_documents(healthy),
        return_exceptions=True,
    )

    assert isinstance(bad, EmbeddingFailed)
    assert isinstance(good, list)
    assert len(good) == len(healthy)
    assert len(embedder._queue) == 0, "the failed call's other texts were left queued"
    assert len(await embedder.embed_documents(["after the failure"])) == 1


async def test_a_cancelled_call_leaves_nothing_queued(make_embedder: Make) -> None:
    embedder = make_embedder(batch_size=1, lanes=1, threads=1)
    call = asyncio.create_task(embedder.embed_documents([chunk_text(seed, 250) for seed in range(40)]))
    while len(embedder._queue) == 0:
        await asyncio.sleep(0.005)

    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call

    assert len(embedder._queue) == 0
    assert len(await embedder.embed_documents(["still serving"])) == 1


async def test_lanes_give_the_same_vectors_in_the_same_order(make_embedder: Make) -> None:
    texts = [chunk_text(seed, 20 + 23 * seed) for seed in range(10)]
    one = await make_embedder(batch_size=2, lanes=1, threads=2).embed_documents(texts)
    two = await make_embedder(batch_size=2, lanes=2, threads=2).embed_documents(texts)
    for a, b in zip(one, two, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)
