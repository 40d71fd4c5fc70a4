"""Both store adapters behind one fixture, so every contract test runs on each.

``edge``: Qdrant Edge in a temporary data dir.  ``client``: qdrant-client local
mode, in memory for ``store`` and on a temporary path for ``make_store``
(persistent, so reopen tests work) — the reference
that mirrors the server API.  ``server``: a real Qdrant server named by
``RAGD_TEST_QDRANT_URL`` (a collection of the test's own, dropped after), skipped when none is named
(:mod:`tests.support.qdrant_server`, docs/deployment.md#before-an-upgrade).  The client is a
recording subclass so tests can see which calls ``open`` made (local mode reports no payload schema).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from qdrant_client import AsyncQdrantClient

from ragd.store.base import VectorStore
from ragd.store.edge_store import EdgeStore
from ragd.store.qdrant_store import QdrantStore
from tests.support import qdrant_server

from .data import manifest

BACKENDS = ("edge", "client", "server")


Call = tuple[str, tuple[Any, ...], dict[str, Any]]


class RecordingClient(AsyncQdrantClient):
    """A real AsyncQdrantClient that also logs the calls that shape the collection, in order."""

    def __init__(self, log: list[Call], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.log = log

    async def create_collection(self, *args: Any, **kwargs: Any) -> bool:
        self.log.append(("create_collection", args, kwargs))
        return await super().create_collection(*args, **kwargs)

    async def create_payload_index(self, *args: Any, **kwargs: Any) -> Any:
        self.log.append(("create_payload_index", args, kwargs))
        return await super().create_payload_index(*args, **kwargs)

    async def upsert(self, *args: Any, **kwargs: Any) -> Any:
        self.log.append(("upsert", args, kwargs))
        return await super().upsert(*args, **kwargs)


StoreFactory = Callable[[], VectorStore]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def client_log() -> list[Call]:
    """What the recording qdrant-client was asked to do (client backend only)."""
    return []


@pytest.fixture
def server_collection(backend: str) -> Iterator[tuple[str, str | None, str] | None]:
    """The server backend's (url, api key, collection): skipped without a server, dropped after."""
    if backend != "server":
        yield None
        return
    url, key = qdrant_server.server()
    name = qdrant_server.collection_name()
    yield url, key, name
    qdrant_server.drop(url, key, name)


@pytest.fixture
def make_store(
    backend: str,
    tmp_path: Path,
    client_log: list[Call],
    server_collection: tuple[str, str | None, str] | None,
) -> StoreFactory:
    """A factory of stores on one location: each call is a new handle on the same index."""

    def make() -> VectorStore:
        if backend == "edge":
            return EdgeStore(tmp_path / "data", "ingestion_files")
        if server_collection is not None:
            url, key, name = server_collection
            return QdrantStore(
                url=url,
                api_key=key,
                collection=name,
                client_factory=lambda **kw: RecordingClient(client_log, **kw),
            )
        return QdrantStore(
            path=tmp_path / "local",
            collection="ingestion_files",
            client_factory=lambda **kw: RecordingClient(client_log, **kw),
        )

    return make


def empty_store(backend: str, make_store: StoreFactory, client_log: list[Call]) -> VectorStore:
    """A new store, not opened yet; the client backend in memory (fast), like the congruence tests."""
    if backend in ("edge", "server"):
        return make_store()
    return QdrantStore(url=":memory:", client_factory=lambda **kw: RecordingClient(client_log, **kw))


@pytest.fixture
async def store(backend: str, make_store: StoreFactory, client_log: list[Call]) -> AsyncIterator[VectorStore]:
    """An open, empty store."""
    s = empty_store(backend, make_store, client_log)
    await s.open(manifest())
    yield s
    await s.close()
