"""Fixtures for the reranker tests: tiny cross-encoder folders on disk, a scripted server on loopback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.scripted_http import scripted_server

from .tiny_cross_encoder import TinyConfig, TinyModel, make_model, write_folder

__all__ = ["scripted_server"]

#: tokenizer_config.json's model_max_length in the default tiny folder (caps rerank.max_tokens=512)
WINDOW = 48


@pytest.fixture(scope="session")
def tiny_model() -> TinyModel:
    return make_model(TinyConfig())


@pytest.fixture(scope="session")
def tiny_folder(tiny_model: TinyModel, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """model.onnx + tokenizer.json + tokenizer_config.json (model_max_length=WINDOW)."""
    return write_folder(tmp_path_factory.mktemp("tiny-cross-encoder"), tiny_model, model_max_length=WINDOW)
