"""A failed read is QDRANT_READ_FAILED, a failed write QDRANT_WRITE_FAILED, in both adapters and on
the ingestion-service surface."""

from __future__ import annotations

import httpx
import pytest
from qdrant_client.http.exceptions import UnexpectedResponse

from ragd.api.errors import compat_status
from ragd.errors import StoreError, StoreReadFailed
from ragd.store import edge_store, qdrant_store


def _fail() -> None:
    raise RuntimeError("segment is corrupted")


@pytest.mark.parametrize(
    ("what", "code"),
    [("search", "QDRANT_READ_FAILED"), ("count", "QDRANT_READ_FAILED"), ("scroll", "QDRANT_READ_FAILED"),
     ("facet", "QDRANT_READ_FAILED"), ("upsert", "QDRANT_WRITE_FAILED"), ("delete", "QDRANT_WRITE_FAILED")],
)  # fmt: skip
def test_each_adapter_names_reads_and_writes(what: str, code: str) -> None:
    with pytest.raises(StoreError) as edge:
        edge_store._engine(_fail, what)
    assert edge.value.code == code
    assert "segment is corrupted" in str(edge.value)
    response = UnexpectedResponse(
        500, "Internal Server Error", b'{"status":{"error":"boom"}}', httpx.Headers()
    )
    with pytest.raises(StoreError) as client, qdrant_store._translated(what):
        raise response
    assert client.value.code == code


def test_the_ingestion_surface_keeps_the_read_code() -> None:
    assert compat_status(StoreReadFailed("search failed"), "POST") == (500, "QDRANT_READ_FAILED")
    assert compat_status(StoreError("upsert failed"), "PUT") == (500, "QDRANT_WRITE_FAILED")
