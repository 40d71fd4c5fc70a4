"""What only the qdrant-client store does: collection metadata, foreign collections, server errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from qdrant_client import AsyncQdrantClient, models

from ragd.errors import ConfigurationError, IndexMismatch, StoreError, StoreUnavailable
from ragd.settings import StoreSettings
from ragd.store.manifest_io import METADATA_KEY, manifest_to_dict
from ragd.store.qdrant_store import QdrantStore, _dense_params
from ragd.store.tuning import IndexTuning
from ragd.types import PointFilter
from tests.support.scripted_http import Reply, ScriptedServer

from .data import DIM, manifest

COLLECTION = "ingestion_files"


async def _make_collection(
    path: Path, *, sparse_modifier: models.Modifier | None, metadata: dict[str, object] | None
) -> None:
    """A collection made by someone else (e.g. the reference ingestion-service's Haystack store)."""
    client = AsyncQdrantClient(path=str(path))
    await client.create_collection(
        COLLECTION,
        vectors_config={"text-dense": models.VectorParams(size=DIM, distance=models.Distance.COSINE)},
        sparse_vectors_config={"text-sparse": models.SparseVectorParams(modifier=sparse_modifier)},
        metadata=metadata,
    )
    await client.close()


async def test_the_manifest_is_kept_in_collection_metadata(tmp_path: Path) -> None:
    store = QdrantStore(path=tmp_path, collection=COLLECTION)
    await store.open(manifest())
    await store.close()
    client = AsyncQdrantClient(path=str(tmp_path))
    info = await client.get_collection(COLLECTION)
    await client.close()
    assert info.config.metadata == {METADATA_KEY: manifest_to_dict(manifest())}
    sparse = (info.config.params.sparse_vectors or {})["text-sparse"]
    assert sparse.modifier == models.Modifier.IDF


async def test_a_collection_without_a_ragd_manifest_is_refused(tmp_path: Path) -> None:
    await _make_collection(tmp_path, sparse_modifier=None, metadata=None)
    with pytest.raises(IndexMismatch, match="no ragd manifest"):
        await QdrantStore(path=tmp_path, collection=COLLECTION).open(manifest())


async def test_a_sparse_vector_without_idf_is_a_layout_mismatch(tmp_path: Path) -> None:
    await _make_collection(
        tmp_path, sparse_modifier=None, metadata={METADATA_KEY: manifest_to_dict(manifest())}
    )
    store = QdrantStore(path=tmp_path, collection=COLLECTION)
    with pytest.raises(IndexMismatch, match="text-sparse: index has modifier None, needs idf"):
        await store.open(manifest())
    assert not await store.ready()
    again = QdrantStore(path=tmp_path, collection=COLLECTION)  # the failed open released the path lock
    with pytest.raises(IndexMismatch):
        await again.open(manifest())


async def test_an_unreachable_server_is_store_unavailable() -> None:
    store = QdrantStore(url="http://127.0.0.1:9", timeout_s=2)
    with pytest.raises(StoreUnavailable, match="did not answer"):
        await store.open(manifest())


async def test_a_server_error_is_a_store_error_with_its_message() -> None:
    with ScriptedServer() as server:
        server.expect("GET", f"/collections/{COLLECTION}/exists", Reply.json({"result": {"exists": False}}))
        server.expect(
            "PUT",
            f"/collections/{COLLECTION}",
            Reply.json({"status": {"error": "Service internal error: No space left on device"}}, status=500),
        )
        store = QdrantStore(url=server.url, api_key="secret-key", collection=COLLECTION)
        with (
            pytest.warns(UserWarning, match="insecure connection"),  # qdrant-client's own, kept on purpose
            pytest.raises(StoreError, match=r"HTTP 500.*No space left") as info,
        ):
            await store.open(manifest())
        assert info.value.code == "QDRANT_WRITE_FAILED"
        create = server.requests[1].json
        assert create["vectors"] == {
            "text-dense": {
                "size": DIM,
                "distance": "Cosine",
                # searched first, the best candidates rescored with the float32 vectors
                "quantization_config": {"scalar": {"type": "int8", "always_ram": True}},
            }
        }
        assert create["sparse_vectors"] == {"text-sparse": {"modifier": "idf"}}
        assert create["hnsw_config"]["payload_m"] == 16
        assert create["metadata"] == {METADATA_KEY: manifest_to_dict(manifest())}
        assert server.requests[0].header("api-key") == "secret-key"
        server.verify()


async def test_a_slow_server_times_out_as_unavailable() -> None:
    with ScriptedServer() as server:
        server.expect("GET", f"/collections/{COLLECTION}/exists", Reply.json({"result": {}}, delay_s=5))
        store = QdrantStore(url=server.url, collection=COLLECTION, timeout_s=1)
        with pytest.raises(StoreUnavailable):
            await store.open(manifest())


def test_settings_choose_the_connection() -> None:
    with pytest.raises(ConfigurationError, match=r"store\.url"):
        QdrantStore.from_settings(StoreSettings(backend="qdrant"))
    with pytest.raises(ConfigurationError, match="exactly one"):
        QdrantStore(url=":memory:", path=Path("x"))
    assert QdrantStore.from_settings(StoreSettings(backend="qdrant", url=":memory:")).collection == COLLECTION


async def test_memory_mode_round_trip() -> None:
    store = QdrantStore.from_settings(StoreSettings(backend="qdrant", url=":memory:", collection="other"))
    await store.open(manifest())
    assert await store.ready()
    assert await store.count(PointFilter()) == 0
    await store.close()
    assert not await store.ready()


def test_with_the_int8_copy_turned_off_a_server_is_told_to_ignore_one_it_still_has() -> None:
    off = _dense_params(IndexTuning(dense_int8=False), filtered=False)
    assert off.model_dump(mode="json", exclude_unset=True, exclude_none=True) == {
        "quantization": {"ignore": True}
    }
    on = _dense_params(IndexTuning(), filtered=True)
    assert on.model_dump(mode="json", exclude_unset=True, exclude_none=True) == {
        "acorn": {"enable": True},
        "quantization": {"rescore": True, "oversampling": 2.0},
    }
