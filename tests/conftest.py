"""Fixtures shared by the whole suite: paths to ../shared, a session-wide real embedder, settings."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragd.embed.base import DenseEmbedder
from ragd.settings import EmbeddingSettings, Settings
from tests.support.scripted_http import scripted_server

__all__ = ["scripted_server", "shared_path"]

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def shared_path(*parts: str) -> Path:
    """A path under ../shared, or skip the test with a clear reason when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"needs the shared benchmark data at {path} (clone ragd beside ../shared)")
    return path


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session")
def dense(model_cache: Path) -> Iterator[DenseEmbedder]:
    """The real packaged all-MiniLM-L6-v2 in onnxruntime, loaded once per session."""
    from ragd.embed.local_onnx import OnnxDenseEmbedder

    embedder = OnnxDenseEmbedder.from_settings(EmbeddingSettings(), model_cache)
    yield embedder
    asyncio.run(embedder.aclose())


@pytest.fixture
def settings(tmp_path: Path, model_cache: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", embedding=EmbeddingSettings(cache_dir=model_cache))
