"""Idempotent ingest with real parts: re-ingest, replacement, and failures injected at every stage.

After any failure the stored points must be exactly the previous version's — never partial, never
duplicated — and a retry must converge to exactly the new version.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from ragd.chunk.factory import build_chunker
from ragd.embed.base import DenseEmbedder, DenseSpec
from ragd.embed.bm25 import Bm25SparseEmbedder
from ragd.errors import (
    EmbeddingFailed,
    ExtractionError,
    PayloadTooLarge,
    RagError,
    SparseEmbeddingFailed,
    StoreError,
)
from ragd.extract.router import build_extractor
from ragd.ingest.pipeline import Ingestor
from ragd.settings import ChunkSettings, ExtractSettings
from ragd.store.edge_store import EdgeStore
from ragd.types import (
    Blob,
    ChunkStrategy,
    Document,
    FileRef,
    IndexManifest,
    IngestStatus,
    PointFilter,
    SparseVector,
    StoredChunk,
)

REF = FileRef(file_id="f-1", collection_name="kb", name="notes.md", source="notes.md")
PARAS = [f"Paragraph {i}: " + " ".join(f"word{i}x{j}" for j in range(60)) for i in range(12)]
V1 = "\n\n".join(PARAS)
V2 = "\n\n".join([*PARAS[:6], "A brand new paragraph about zebras and their stripes.", *PARAS[6:]])


class FailingDense:
    def __init__(self, real: DenseEmbedder) -> None:
        self._real = real
        self.spec: DenseSpec = real.spec
        self.tokenizer = real.tokenizer

    async def embed_query(self, text: str):  # type: ignore[no-untyped-def]
        return await self._real.embed_query(text)

    async def embed_documents(self, texts: Sequence[str]):  # type: ignore[no-untyped-def]
        raise EmbeddingFailed("injected: the embedding endpoint went away")

    async def aclose(self) -> None:
        return None


class FailingSparse(Bm25SparseEmbedder):
    def embed_documents(self, texts: Sequence[str]) -> list[SparseVector]:
        raise SparseEmbeddingFailed("injected")


class FailingExtractor:
    name = "failing"

    def extract(self, blob: Blob) -> Document:
        raise ExtractionError("injected: corrupt file")


class FlakyStore(EdgeStore):
    """The real store, except that upsert fails (or is cancelled) after ``ok_batches`` batches."""

    ok_batches = 10**9
    cancel = False

    async def upsert(self, chunks: Sequence[StoredChunk]) -> None:
        if self.ok_batches <= 0:
            if self.cancel:
                raise asyncio.CancelledError
            raise StoreError("injected: write rejected")
        self.ok_batches -= 1
        await super().upsert(chunks)


@dataclass
class Rig:
    store: FlakyStore
    dense: DenseEmbedder
    path: Path

    def ingestor(self, **overrides: object) -> Ingestor:
        parts: dict[str, object] = {
            "extractor": build_extractor(ExtractSettings()),
            "chunker": chunker(self.dense),
            "dense": self.dense,
            "sparse": Bm25SparseEmbedder("english"),
            "store": self.store,
            "write_batch": 2,
        }
        parts.update(overrides)
        return Ingestor(**parts)  # type: ignore[arg-type]

    async def ingest(self, text: str, **overrides: object) -> int:
        self.path.write_text(text)
        outcome = await self.ingestor(**overrides).ingest(Blob(name=REF.name, path=self.path), REF)
        return outcome.chunks

    async def points(self) -> set[tuple[str, str]]:
        page, _ = await self.store.scroll(PointFilter(collection_names=("kb",)), limit=10_000)
        return {(p.id, p.content) for p in page}


def chunker(dense: DenseEmbedder):  # type: ignore[no-untyped-def]
    return build_chunker(
        ChunkSettings(strategy=ChunkStrategy.TOKEN, token_size=64, token_overlap=8),
        counter=dense.tokenizer,
        max_tokens=dense.spec.max_tokens,
        document_prefix="",
    )


@pytest.fixture
async def rig(tmp_path: Path, dense: DenseEmbedder) -> AsyncIterator[Rig]:
    store = FlakyStore(tmp_path / "data")
    manifest = IndexManifest(dense.spec.model, dense.spec.dimension, "", "", "bm25", chunker(dense).version)
    await store.open(manifest)
    yield Rig(store, dense, tmp_path / "notes.md")
    await store.close()


async def test_reingest_is_skipped_and_replacement_leaves_no_leftovers(rig: Rig) -> None:
    n1 = await rig.ingest(V1)
    v1 = await rig.points()
    assert n1 == len(v1) > 4
    outcome = await rig.ingestor().ingest(Blob(name=REF.name, path=rig.path), REF)
    assert outcome.status is IngestStatus.UNCHANGED
    assert await rig.points() == v1
    n2 = await rig.ingest(V2)
    v2 = await rig.points()
    assert len(v2) == n2
    assert any("zebras" in text for _, text in v2)
    assert v1 & v2, "unchanged leading chunks keep their ids"
    assert v1 - v2, "chunks that moved are replaced, not duplicated"


@pytest.mark.parametrize(
    ("stage", "error"),
    [
        ("extract", ExtractionError),
        ("embed", EmbeddingFailed),
        ("sparse", SparseEmbeddingFailed),
        ("write-first-batch", StoreError),
        ("write-later-batch", StoreError),
    ],
)
async def test_failure_at_any_stage_keeps_the_previous_version_exactly(
    rig: Rig, stage: str, error: type[RagError]
) -> None:
    await rig.ingest(V1)
    before = await rig.points()
    overrides: dict[str, object] = {}
    if stage == "extract":
        overrides["extractor"] = FailingExtractor()
    elif stage == "embed":
        overrides["dense"] = FailingDense(rig.dense)
    elif stage == "sparse":
        overrides["sparse"] = FailingSparse("english")
    else:
        rig.store.ok_batches = 0 if stage == "write-first-batch" else 3
    with pytest.raises(error):
        await rig.ingest(V2, **overrides)
    assert await rig.points() == before
    rig.store.ok_batches = 10**9
    await rig.ingest(V2)
    after = await rig.points()
    assert any("zebras" in text for _, text in after)
    assert len(after) == len({text for _, text in after}), "no duplicates after the retry"


async def test_cancelled_write_removes_only_its_own_points(rig: Rig) -> None:
    await rig.ingest(V1)
    before = await rig.points()
    rig.store.ok_batches, rig.store.cancel = 2, True
    with pytest.raises(asyncio.CancelledError):
        await rig.ingest(V2)
    assert await rig.points() == before


async def test_concurrent_ingests_of_one_file_are_serialised(rig: Rig, tmp_path: Path) -> None:
    a, b = tmp_path / "a.md", tmp_path / "b.md"
    a.write_text(V1)
    b.write_text(V2)
    ingestor = rig.ingestor()
    await asyncio.gather(
        ingestor.ingest(Blob(name="a.md", path=a), REF), ingestor.ingest(Blob(name="b.md", path=b), REF)
    )
    texts = [text for _, text in await rig.points()]
    has_zebras = any("zebras" in t for t in texts)
    expected = await rig.ingestor().ingest(Blob(name="x", path=b if has_zebras else a), REF)
    assert expected.status is IngestStatus.UNCHANGED, "the index holds exactly one complete version"


async def test_delete_removes_every_point_of_the_file(rig: Rig) -> None:
    stored = await rig.ingest(V1)
    assert await rig.ingestor().delete(REF.file_id) == stored
    assert await rig.points() == set()
    assert await rig.ingestor().delete(REF.file_id) == 0


async def test_a_file_over_the_chunk_limit_is_refused_and_its_previous_version_kept(rig: Rig) -> None:
    n1 = await rig.ingest(V1)
    v1 = await rig.points()
    bigger = "\n\n".join([V1, V2, V1.replace("word", "term")])
    with pytest.raises(PayloadTooLarge) as caught:
        await rig.ingest(bigger, max_chunks=n1)
    assert caught.value.http_status == 413
    assert "RAGD_CHUNKING__MAX_CHUNKS" in str(caught.value)
    assert await rig.points() == v1, "the file's indexed version is untouched"
    assert await rig.ingest(bigger, max_chunks=10_000) > n1
