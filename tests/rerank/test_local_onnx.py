"""OnnxCrossEncoder on a tiny random BERT cross-encoder, checked against a numpy forward pass."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ragd.errors import ConfigurationError, RerankFailed
from ragd.rerank.base import Reranker
from ragd.rerank.local_onnx import OnnxCrossEncoder
from ragd.settings import RerankSettings

from .conftest import WINDOW
from .tiny_cross_encoder import (
    TinyConfig,
    TinyModel,
    build_tokenizer,
    expected_scores,
    make_model,
    reference_probability,
    write_folder,
)

QUERY = "where do cats sit?"
PASSAGES = [
    "the cat sat on the mat.",
    "dogs chase cats in the park",
    "quantum physics experiments",
    "red",
    "the sun and the moon over the river, and a blue house",
    "how does water run",
]
LONG = "the dog runs in the park and the cat sits on a red mat by the river . " * 20
TOLERANCE = 1e-5


def settings(path: Path | None, **overrides: object) -> RerankSettings:
    values: dict[str, object] = {"provider": "local", "path": path, "batch_size": 4, "threads": 1}
    return RerankSettings.model_validate(values | overrides)


@pytest.fixture
async def encoder(tiny_folder: Path) -> AsyncIterator[OnnxCrossEncoder]:
    reranker = OnnxCrossEncoder.from_settings(settings(tiny_folder))
    yield reranker
    await reranker.aclose()


async def score(folder: Path, query: str, passages: list[str], **overrides: object) -> list[float]:
    reranker = OnnxCrossEncoder.from_settings(settings(folder, **overrides))
    try:
        return await reranker.rerank(query, passages)
    finally:
        await reranker.aclose()


def test_the_reference_is_sensitive_to_what_the_adapter_could_get_wrong(tiny_model: TinyModel) -> None:
    # Guards the tests below: zeroed type ids or a swapped pair must change the reference score.
    tokenizer = build_tokenizer()
    for passage in PASSAGES:
        pair = tokenizer.encode(QUERY, passage)
        swapped = tokenizer.encode(passage, QUERY)
        right = reference_probability(tiny_model, pair.ids, pair.type_ids)
        assert abs(right - reference_probability(tiny_model, pair.ids, [0] * len(pair.ids))) > 1e-3
        assert abs(right - reference_probability(tiny_model, swapped.ids, swapped.type_ids)) > 1e-3


async def test_scores_match_the_numpy_forward_pass(
    encoder: OnnxCrossEncoder, tiny_model: TinyModel, tiny_folder: Path
) -> None:
    reranker: Reranker = encoder
    got = await reranker.rerank(QUERY, PASSAGES)  # 6 passages: two padded batches of 4 and 2
    want = expected_scores(tiny_model, QUERY, PASSAGES, WINDOW)
    assert got == pytest.approx(want, abs=TOLERANCE)
    assert max(want) - min(want) > 0.2  # the model tells passages apart
    assert encoder.name == f"local:{tiny_folder.name}"


async def test_padding_does_not_change_a_score(encoder: OnnxCrossEncoder) -> None:
    (alone,) = await encoder.rerank(QUERY, ["red"])
    batched = await encoder.rerank(QUERY, ["red", PASSAGES[4], "red"])
    assert batched[0] == pytest.approx(alone, abs=1e-6)
    assert batched[2] == pytest.approx(alone, abs=1e-6)


async def test_order_follows_the_passages(encoder: OnnxCrossEncoder) -> None:
    forward = await encoder.rerank(QUERY, PASSAGES)
    backward = await encoder.rerank(QUERY, PASSAGES[::-1])
    assert backward == pytest.approx(forward[::-1], abs=1e-6)


async def test_empty_passages(encoder: OnnxCrossEncoder) -> None:
    assert await encoder.rerank(QUERY, []) == []


async def test_long_passages_are_truncated_to_the_tokenizer_limit(
    encoder: OnnxCrossEncoder, tiny_model: TinyModel
) -> None:
    # rerank.max_tokens is 512 but tokenizer_config.json caps the window at 48 (the graph has 64 positions)
    got = await encoder.rerank(QUERY, [LONG, "red", LONG[:150]])
    assert got == pytest.approx(
        expected_scores(tiny_model, QUERY, [LONG, "red", LONG[:150]], WINDOW), abs=TOLERANCE
    )


async def test_max_tokens_below_the_tokenizer_limit_wins(tiny_folder: Path, tiny_model: TinyModel) -> None:
    got = await score(tiny_folder, QUERY, [LONG, PASSAGES[0]], max_tokens=20)
    assert got == pytest.approx(expected_scores(tiny_model, QUERY, [LONG, PASSAGES[0]], 20), abs=TOLERANCE)
    assert got[0] != pytest.approx(expected_scores(tiny_model, QUERY, [LONG], WINDOW)[0], abs=1e-3)


async def test_a_query_that_fits_is_never_cut(encoder: OnnxCrossEncoder, tiny_model: TinyModel) -> None:
    query = "what cats sit on the mat in the park by the river " * 3  # 33 tokens: over half the window
    assert len(build_tokenizer().encode(query, add_special_tokens=False).ids) > WINDOW // 2
    got = await encoder.rerank(query, [LONG, "red"])
    assert got == pytest.approx(expected_scores(tiny_model, query, [LONG, "red"], WINDOW), abs=TOLERANCE)


async def test_a_query_that_alone_fills_the_window_keeps_half_of_it(
    encoder: OnnxCrossEncoder, tiny_model: TinyModel
) -> None:
    query = "what cats sit on the mat in the park by the river " * 6  # 66 tokens, window 48
    tokenizer = build_tokenizer()
    budget = WINDOW - 3  # [CLS] q [SEP] p [SEP]
    q_ids = tokenizer.encode(query, add_special_tokens=False).ids[: budget // 2]
    p_ids = tokenizer.encode(LONG, add_special_tokens=False).ids[: budget - budget // 2]
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    ids = [cls, *q_ids, sep, *p_ids, sep]
    type_ids = [0] * (len(q_ids) + 2) + [1] * (len(p_ids) + 1)
    (got,) = await encoder.rerank(query, [LONG])
    assert got == pytest.approx(reference_probability(tiny_model, ids, type_ids), abs=TOLERANCE)


async def test_two_logits_are_read_with_a_softmax(tmp_path: Path) -> None:
    model = make_model(TinyConfig(labels=2, seed=11))
    folder = write_folder(tmp_path, model, onnx_subdir=True)  # onnx/model.onnx, no tokenizer_config.json
    got = await score(folder, QUERY, PASSAGES, max_tokens=64)
    assert got == pytest.approx(expected_scores(model, QUERY, PASSAGES, 64), abs=TOLERANCE)


async def test_a_graph_without_token_type_ids_is_fed_without_them(tmp_path: Path) -> None:
    model = make_model(TinyConfig(type_ids=False))
    folder = write_folder(tmp_path, model, model_max_length=WINDOW)
    got = await score(folder, QUERY, PASSAGES)
    assert got == pytest.approx(expected_scores(model, QUERY, PASSAGES, WINDOW), abs=TOLERANCE)


async def test_concurrent_calls_give_the_same_scores(encoder: OnnxCrossEncoder) -> None:
    alone = await encoder.rerank(QUERY, PASSAGES)
    together = await asyncio.gather(*(encoder.rerank(QUERY, PASSAGES) for _ in range(5)))
    assert all(result == pytest.approx(alone, abs=1e-6) for result in together)


async def test_inference_failure_is_rerank_failed(tmp_path: Path, tiny_model: TinyModel) -> None:
    # No tokenizer_config.json and max_tokens past the graph's 64 positions: onnxruntime fails.
    folder = write_folder(tmp_path, tiny_model)
    reranker = OnnxCrossEncoder.from_settings(settings(folder, max_tokens=128))
    try:
        assert len(await reranker.rerank(QUERY, ["red"])) == 1  # short pairs still work
        with pytest.raises(RerankFailed, match="onnxruntime failed") as caught:
            await reranker.rerank(QUERY, [LONG])
        assert caught.value.code == "RERANK_FAILED"
    finally:
        await reranker.aclose()


async def test_a_closed_encoder_refuses_work(tiny_folder: Path) -> None:
    reranker = OnnxCrossEncoder.from_settings(settings(tiny_folder))
    await reranker.aclose()
    with pytest.raises(RerankFailed, match="closed"):
        await reranker.rerank(QUERY, ["red"])


def test_path_is_required() -> None:
    with pytest.raises(ConfigurationError, match=r"rerank\.path is required"):
        OnnxCrossEncoder.from_settings(settings(None))


@pytest.mark.parametrize(
    ("files", "missing"),
    [
        ((), r"no model\.onnx or onnx/model\.onnx and no tokenizer\.json"),
        (("tokenizer.json",), r"no model\.onnx or onnx/model\.onnx$"),
        (("model.onnx",), r"no tokenizer\.json$"),
        (("onnx/model.onnx",), r"no tokenizer\.json$"),
    ],
)
def test_missing_files_are_named(
    tmp_path: Path, tiny_folder: Path, files: tuple[str, ...], missing: str
) -> None:
    for name in files:
        source = tiny_folder / Path(name).name
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(source.read_bytes())
    with pytest.raises(ConfigurationError) as caught:
        OnnxCrossEncoder.from_settings(settings(tmp_path))
    assert re.search(missing, caught.value.message)
    assert str(tmp_path) in caught.value.message


def test_a_missing_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="not a folder") as caught:
        OnnxCrossEncoder.from_settings(settings(tmp_path / "nowhere"))
    assert str(tmp_path / "nowhere") in caught.value.message


def test_unreadable_files_are_configuration_errors(tmp_path: Path, tiny_folder: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"not a graph")
    (tmp_path / "tokenizer.json").write_bytes((tiny_folder / "tokenizer.json").read_bytes())
    with pytest.raises(ConfigurationError, match="onnxruntime cannot load"):
        OnnxCrossEncoder.from_settings(settings(tmp_path))
    (tmp_path / "tokenizer.json").write_text("{", encoding="utf-8")
    with pytest.raises(ConfigurationError, match="cannot load tokenizer"):
        OnnxCrossEncoder.from_settings(settings(tmp_path))
