"""Dense embeddings from Hugging Face Text Embeddings Inference (TEI): ``POST {base_url}/embed``.

Request ``{"inputs": [texts], "truncate": true}`` (the server cuts texts to
the model's window instead of refusing them); response: a JSON list of
vectors in input order.  The model's window comes from ``GET /info``
(``max_input_length``) unless ``embedding.max_tokens`` sets it.  TEI refuses batches over its
``--max-client-batch-size`` (default 32) with HTTP 413: keep
``embedding.batch_size`` at or under it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragd.embed.remote_http import Backoff, RemoteEmbedder, display_url
from ragd.errors import ConfigurationError
from ragd.remote_json import RemoteJsonClient
from ragd.settings import EmbeddingSettings


@dataclass(frozen=True, slots=True)
class TeiWire:
    """The ``/embed`` request and response shapes."""

    path: str = "embed"

    def request(self, texts: Sequence[str]) -> dict[str, object]:
        return {"inputs": list(texts), "truncate": True}

    def vectors(self, payload: object) -> list[object]:
        if not isinstance(payload, list):
            raise ValueError(f"expected a list of vectors, got {type(payload).__name__}")
        return payload

    async def window(self, client: RemoteJsonClient) -> int | None:
        """TEI's ``GET /info`` names the model's window: ``max_input_length``."""
        info = await client.get_json("info")
        size = info.get("max_input_length") if isinstance(info, dict) else None
        return size if isinstance(size, int) and size > 0 else None


class TeiEmbedder(RemoteEmbedder):
    """``DenseEmbedder`` for a TEI server; build with :meth:`create`."""

    @classmethod
    async def create(cls, settings: EmbeddingSettings, *, backoff: Backoff | None = None) -> TeiEmbedder:
        """Connect and, unless ``settings.dimension`` is set, probe the vector size with one request."""
        if not settings.base_url:
            raise ConfigurationError(
                "embedding.base_url is required when embedding.provider is 'tei'",
                hint="e.g. RAGD_EMBEDDING__BASE_URL=http://localhost:8080",
            )
        model = settings.model.strip()
        label = model if model and not model.startswith("packaged:") else display_url(settings.base_url)
        return await cls._connect(
            settings, TeiWire(), name=f"tei:{label.rstrip('/')}", base_url=settings.base_url, backoff=backoff
        )
