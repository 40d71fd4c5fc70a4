"""Fixtures for the local ONNX embedder: the packaged model folder, the fixture, network guards."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from ragd.embed.local_onnx import OnnxDenseEmbedder
from ragd.embed.model_source import ModelFolder, resolve_model
from ragd.errors import MissingDependency
from ragd.settings import PACKAGED_MINILM, EmbeddingSettings

REFERENCE = Path(__file__).resolve().parents[1] / "fixtures" / "minilm" / "reference.json"


@pytest.fixture(scope="session")
def packaged() -> ModelFolder:
    try:
        return resolve_model(PACKAGED_MINILM)
    except MissingDependency as exc:
        pytest.skip(f"the packaged model is not installed: {exc}")


@pytest.fixture(scope="session")
def reference() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(REFERENCE.read_text(encoding="utf-8"))
    return loaded


def link_model_folder(source: Path, target: Path, *, skip: tuple[str, ...] = ()) -> Path:
    """A copy of a model folder made of symlinks (cheap), leaving out the names in ``skip``."""
    target.mkdir(parents=True, exist_ok=True)
    for entry in source.iterdir():
        if entry.name not in skip:
            (target / entry.name).symlink_to(entry)
    return target


def cosines(left: npt.ArrayLike, right: npt.ArrayLike) -> npt.NDArray[np.float64]:
    a = np.asarray(left, dtype=np.float64)
    b = np.asarray(right, dtype=np.float64)
    return np.asarray((a * b).sum(axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1))


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail loudly if anything tries to open a connection."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a test tried to reach the network: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


Make = Callable[..., OnnxDenseEmbedder]


@pytest.fixture
async def make_embedder(model_cache: Path) -> AsyncIterator[Make]:
    """Builds embedders from settings (the graph comes from the session cache) and closes them."""
    made: list[OnnxDenseEmbedder] = []

    def make(**settings: Any) -> OnnxDenseEmbedder:
        made.append(OnnxDenseEmbedder.from_settings(EmbeddingSettings(**settings), model_cache))
        return made[-1]

    yield make
    for embedder in made:
        await embedder.aclose()
