"""Dense embeddings from an OpenAI-compatible ``POST {base_url}/embeddings`` endpoint.

Works with OpenAI itself and with the many servers that copy its wire format
(vLLM, llama.cpp, Ollama, LiteLLM, Infinity...).  Request
``{"model": m, "input": [texts]}``; response ``{"data": [{"index": i,
"embedding": [...]}, ...]}``, which may come back in any order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragd.embed.remote_http import Backoff, RemoteEmbedder
from ragd.errors import ConfigurationError
from ragd.remote_json import RemoteJsonClient
from ragd.settings import EmbeddingSettings

OPENAI_BASE_URL = "https://api.openai.com/v1"


@dataclass(frozen=True, slots=True)
class OpenAIWire:
    """The ``/embeddings`` request and response shapes."""

    model: str
    path: str = "embeddings"

    def request(self, texts: Sequence[str]) -> dict[str, object]:
        return {"model": self.model, "input": list(texts)}

    def vectors(self, payload: object) -> list[object]:
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            raise ValueError("no 'data' list")
        by_index: dict[int, object] = {}
        for item in data:
            index = item.get("index") if isinstance(item, dict) else None
            if not isinstance(index, int) or index in by_index:
                raise ValueError(f"missing or repeated 'index' in {str(item)[:80]}")
            by_index[index] = item.get("embedding")
        if sorted(by_index) != list(range(len(by_index))):
            raise ValueError(f"indices {sorted(by_index)[:10]} are not 0..{len(by_index) - 1}")
        return [by_index[i] for i in range(len(by_index))]

    async def window(self, client: RemoteJsonClient) -> int | None:
        """The OpenAI API does not say: ``embedding.max_tokens`` or the documented default applies."""
        del client
        return None


class OpenAIEmbedder(RemoteEmbedder):
    """``DenseEmbedder`` for an OpenAI-compatible server; build with :meth:`create`."""

    @classmethod
    async def create(cls, settings: EmbeddingSettings, *, backoff: Backoff | None = None) -> OpenAIEmbedder:
        """Connect and, unless ``settings.dimension`` is set, probe the vector size with one request."""
        model = settings.model.strip()
        if not model or model.startswith("packaged:"):
            raise ConfigurationError(
                "embedding.model must name the server's model when embedding.provider is 'openai'",
                hint="e.g. RAGD_EMBEDDING__MODEL=text-embedding-3-small",
            )
        wire = OpenAIWire(model)
        base_url = settings.base_url or OPENAI_BASE_URL
        return await cls._connect(settings, wire, name=f"openai:{model}", base_url=base_url, backoff=backoff)
