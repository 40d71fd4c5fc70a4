"""Deterministic stand-ins for an embedding model, served in the real OpenAI and TEI wire formats."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from tests.support.scripted_http import RecordedRequest, Reply


def raw_vector(text: str, dim: int) -> list[float]:
    """A pseudo-random, un-normalised vector that depends only on ``text``."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return [float(x) * 3.0 for x in np.random.default_rng(seed).standard_normal(dim)]


def expected(text: str, dim: int) -> npt.NDArray[np.float32]:
    vector = np.asarray(raw_vector(text, dim), dtype=np.float64)
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def openai_body(texts: Sequence[str], dim: int, *, shuffle: bool = True) -> dict[str, object]:
    """An ``/embeddings`` response; ``shuffle`` lists the items in reverse, as servers may."""
    data = [{"object": "embedding", "index": i, "embedding": raw_vector(t, dim)} for i, t in enumerate(texts)]
    return {
        "object": "list",
        "model": "fake",
        "data": data[::-1] if shuffle else data,
        "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)},
    }


def openai_handler(dim: int) -> Callable[[RecordedRequest], Reply]:
    """Embed whatever texts arrive."""
    return lambda request: Reply.json(openai_body(request.json["input"], dim))


def tei_handler(dim: int) -> Callable[[RecordedRequest], Reply]:
    return lambda request: Reply.json([raw_vector(t, dim) for t in request.json["inputs"]])
