"""The composition root: the one place that picks concrete backends from settings.

Everything else receives its collaborators; tests build ``Settings(...)`` and
call :func:`open_services` (or construct use-cases directly with their own parts).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

from ragd.chunk.base import Chunker
from ragd.chunk.factory import build_chunker
from ragd.embed.base import DenseEmbedder, SparseEmbedder
from ragd.embed.bm25 import Bm25SparseEmbedder
from ragd.errors import ConfigurationError
from ragd.extract.base import Extractor
from ragd.extract.router import build_extractor
from ragd.ingest.pipeline import Ingestor
from ragd.retrieve.search import Retriever
from ragd.settings import Settings
from ragd.store.base import VectorStore
from ragd.types import IndexManifest

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Services:
    settings: Settings
    store: VectorStore
    dense: DenseEmbedder
    sparse: SparseEmbedder | None
    extractor: Extractor
    chunker: Chunker
    ingestor: Ingestor
    retriever: Retriever
    manifest: IndexManifest


async def build_dense(settings: Settings) -> DenseEmbedder:
    emb = settings.embedding
    if emb.provider == "local":
        from ragd.embed.local_onnx import OnnxDenseEmbedder

        return OnnxDenseEmbedder.from_settings(emb, settings.model_cache_dir)
    if emb.provider == "openai":
        from ragd.embed.openai_compat import OpenAIEmbedder

        return await OpenAIEmbedder.create(emb)
    if emb.provider == "tei":
        from ragd.embed.tei import TeiEmbedder

        return await TeiEmbedder.create(emb)
    raise ConfigurationError(f"unknown embedding provider {emb.provider!r}")


def build_store(settings: Settings) -> VectorStore:
    if settings.store.backend == "edge":
        from ragd.store.edge_store import EdgeStore

        return EdgeStore.from_settings(settings.store, settings.data_dir)
    from ragd.store.qdrant_store import QdrantStore

    return QdrantStore.from_settings(settings.store)


def manifest_for(dense: DenseEmbedder, sparse: SparseEmbedder | None, chunker: Chunker) -> IndexManifest:
    spec = dense.spec
    return IndexManifest(
        dense_model=spec.model,
        dense_dim=spec.dimension,
        query_prefix=spec.query_prefix,
        document_prefix=spec.document_prefix,
        sparse_model=sparse.name if sparse else "none",
        chunker_version=chunker.version,
    )


@asynccontextmanager
async def open_services(settings: Settings) -> AsyncIterator[Services]:
    """Build the whole graph from ``settings``; everything is closed on exit."""
    async with AsyncExitStack() as stack:
        dense = await build_dense(settings)
        stack.push_async_callback(dense.aclose)
        sparse = Bm25SparseEmbedder(settings.sparse.language) if settings.sparse.enabled else None
        chunker = build_chunker(
            settings.chunking,
            counter=dense.tokenizer,
            max_tokens=settings.embedding.max_tokens or dense.spec.max_tokens,
            document_prefix=dense.spec.document_prefix,
        )
        manifest = manifest_for(dense, sparse, chunker)
        store = build_store(settings)
        stack.push_async_callback(store.close)
        await store.open(manifest)
        extractor = build_extractor(settings.extract)
        ingestor = Ingestor(extractor=extractor, chunker=chunker, dense=dense, sparse=sparse, store=store)
        retriever = Retriever(store, dense, sparse, settings.retrieval, settings.embedding.languages)
        yield Services(
            settings=settings,
            store=store,
            dense=dense,
            sparse=sparse,
            extractor=extractor,
            chunker=chunker,
            ingestor=ingestor,
            retriever=retriever,
            manifest=manifest,
        )
