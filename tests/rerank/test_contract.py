"""The Reranker contract, run against every adapter: the local tiny model and a scripted remote server."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ragd.remote_json import Backoff
from ragd.rerank.base import Reranker
from ragd.rerank.local_onnx import OnnxCrossEncoder
from ragd.rerank.remote_http import HttpReranker
from ragd.settings import RerankSettings
from tests.support.scripted_http import ScriptedServer

from .fakes import cohere_handler, tei_handler

QUERY = "where do cats sit?"
PASSAGES = [
    "the cat sat on the mat.",
    "dogs chase cats in the park",
    "quantum physics experiments",
    "red",
    "the sun and the moon over the river, and a blue house " * 12,
    "",
    "how does water run",
]


@pytest.fixture(params=["local", "remote-cohere", "remote-tei"])
async def reranker(
    request: pytest.FixtureRequest, tiny_folder: Path, scripted_server: ScriptedServer
) -> AsyncIterator[Reranker]:
    adapter: Reranker
    if request.param == "local":
        settings = RerankSettings(provider="local", path=tiny_folder, batch_size=3, threads=1)
        adapter = OnnxCrossEncoder.from_settings(settings)
    else:
        api = request.param.removeprefix("remote-")
        scripted_server.on("POST", "/v1/rerank", cohere_handler())
        scripted_server.on("POST", "/rerank", tei_handler())
        settings = RerankSettings.model_validate(
            {"provider": "remote", "api": api, "base_url": scripted_server.url, "model": "m", "batch_size": 3}
        )
        adapter = HttpReranker.from_settings(settings, backoff=Backoff(base_s=0.01))
    yield adapter
    await adapter.aclose()
    scripted_server.verify()


async def test_one_score_in_the_unit_interval_per_passage(reranker: Reranker) -> None:
    scores = await reranker.rerank(QUERY, PASSAGES)
    assert len(scores) == len(PASSAGES)
    assert all(isinstance(s, float) and math.isfinite(s) and 0.0 <= s <= 1.0 for s in scores)
    assert len(set(scores)) > 1  # not a constant


async def test_scores_follow_the_passages_order(reranker: Reranker) -> None:
    forward = await reranker.rerank(QUERY, PASSAGES)
    backward = await reranker.rerank(QUERY, PASSAGES[::-1])
    assert backward == pytest.approx(forward[::-1], abs=1e-6)


async def test_a_passage_scores_the_same_alone_and_in_company(reranker: Reranker) -> None:
    scores = await reranker.rerank(QUERY, PASSAGES)
    for index in (0, 4):
        assert await reranker.rerank(QUERY, [PASSAGES[index]]) == pytest.approx([scores[index]], abs=1e-6)


async def test_no_passages_no_scores(reranker: Reranker) -> None:
    assert await reranker.rerank(QUERY, []) == []


def test_has_a_name(reranker: Reranker) -> None:
    assert reranker.name.startswith(("local:", "remote:"))
