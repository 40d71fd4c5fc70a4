"""A disabled file stays disabled when it is ingested again (changed, unchanged or forced).

Real parts: the packaged embedder, BM25, the token chunker and Qdrant Edge.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ragd.chunk.factory import build_chunker
from ragd.embed.base import DenseEmbedder
from ragd.embed.bm25 import Bm25SparseEmbedder
from ragd.ingest.pipeline import Ingestor
from ragd.ingest.points import chunk_meta, is_disabled
from ragd.settings import ChunkSettings
from ragd.store.edge_store import EdgeStore
from ragd.types import (
    Chunk,
    ChunkStrategy,
    Document,
    FileRef,
    IndexManifest,
    IngestStatus,
    PointFilter,
    StoredChunk,
    StoreQuery,
)

REF = FileRef(file_id="f-1", collection_name="kb", name="notes.md", source="notes.md")
OTHER = FileRef(file_id="f-2", collection_name="kb", name="other.md", source="other.md")
PARAS = [f"Paragraph {i}: " + " ".join(f"word{i}x{j}" for j in range(60)) for i in range(8)]
V1 = "\n\n".join(PARAS)
V2 = "\n\n".join([*PARAS[:4], "A brand new paragraph about zebras and their stripes.", *PARAS[4:]])


@dataclass
class Rig:
    store: EdgeStore
    ingestor: Ingestor
    dense: DenseEmbedder

    async def ingest(self, text: str, ref: FileRef = REF, *, force: bool = False) -> IngestStatus:
        document = Document(text=text, extractor="text")
        return (await self.ingestor.ingest_document(document, ref, force=force)).status

    async def points(self, ref: FileRef = REF) -> list[StoredChunk]:
        page, _ = await self.store.scroll(PointFilter(file_id=ref.file_id), limit=10_000)
        return page

    async def found(self, text: str) -> set[str]:
        """file ids a hybrid search for ``text`` finds in "kb"."""
        query = StoreQuery(
            filter=PointFilter(collection_names=("kb",)),
            limit=50,
            dense=await self.dense.embed_query(text),
            sparse=Bm25SparseEmbedder("english").embed_query(text),
        )
        return {str(h.meta["file_id"]) for h in await self.store.search(query)}


@pytest.fixture
async def rig(tmp_path: Path, dense: DenseEmbedder) -> AsyncIterator[Rig]:
    chunker = build_chunker(
        ChunkSettings(strategy=ChunkStrategy.TOKEN, token_size=64, token_overlap=8),
        counter=dense.tokenizer,
        max_tokens=dense.spec.max_tokens,
        document_prefix="",
    )
    store = EdgeStore(tmp_path / "data")
    await store.open(IndexManifest(dense.spec.model, dense.spec.dimension, "", "", "bm25", chunker.version))
    ingestor = Ingestor(
        extractor=None,  # type: ignore[arg-type]  # documents only: nothing to extract
        chunker=chunker,
        dense=dense,
        sparse=Bm25SparseEmbedder("english"),
        store=store,
    )
    yield Rig(store, ingestor, dense)
    await store.close()


async def test_a_disabled_file_stays_disabled_through_every_kind_of_reingest(rig: Rig) -> None:
    await rig.ingest(V1)
    await rig.ingest(V1.replace("Paragraph", "Section"), OTHER)
    assert await rig.found("word2x5 word2x6") == {"f-1", "f-2"}
    stored = len(await rig.points())
    assert await rig.ingestor.set_disabled(REF.file_id, True) == stored
    assert await rig.found("word2x5 word2x6") == {"f-2"}

    assert await rig.ingest(V1) is IngestStatus.UNCHANGED
    assert is_disabled(await rig.points())

    assert await rig.ingest(V2) is IngestStatus.INDEXED  # a new version: written already flagged
    points = await rig.points()
    assert any("zebras" in p.content for p in points)
    assert all(p.meta["disabled"] is True for p in points)
    assert "f-1" not in await rig.found("zebras and their stripes")

    assert await rig.ingest(V2, force=True) is IngestStatus.INDEXED
    assert all(p.meta["disabled"] is True for p in await rig.points())

    assert await rig.ingestor.set_disabled(REF.file_id, False, "kb") == len(points)
    assert "f-1" in await rig.found("zebras and their stripes")
    assert await rig.ingest(V1) is IngestStatus.INDEXED  # an enabled file's new version stays enabled
    assert not is_disabled(await rig.points())
    assert all("disabled" not in p.meta for p in await rig.points(OTHER))


async def test_setting_the_flag_on_a_file_with_no_points_is_zero(rig: Rig) -> None:
    assert await rig.ingestor.set_disabled("no-such-file", True) == 0


def test_the_flag_comes_from_the_store_never_from_the_callers_extra_meta() -> None:
    document = Document(text="t", extractor="text")
    chunk = Chunk(text="t", split_id=0, start=0, end=1)
    sneaky = FileRef(file_id="f", collection_name="kb", name="n", source="n", extra={"disabled": True})
    meta = chunk_meta(sneaky, document, chunk, file_hash="h", version="v", total=1)
    assert not meta.disabled
    assert "disabled" not in meta.to_payload()
    flagged = chunk_meta(REF, document, chunk, file_hash="h", version="v", total=1, disabled=True)
    assert flagged.to_payload()["disabled"] is True
    one = StoredChunk(id=str(uuid.uuid4()), content="t", meta={"disabled": False})
    assert not is_disabled([one])
    assert is_disabled([one, StoredChunk(id=str(uuid.uuid4()), content="t", meta={"disabled": True})])
    assert not is_disabled([])
