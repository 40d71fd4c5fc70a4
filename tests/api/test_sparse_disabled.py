"""With sparse vectors disabled, the default (hybrid) search runs dense instead of answering 400."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest

from ragd.api.app import create_app
from ragd.errors import InvalidRequest
from ragd.retrieve.search import SearchRequest
from ragd.settings import SparseSettings
from ragd.types import SearchMode
from tests.api.conftest import AUTH, ingest_over_http, service_settings
from tests.support.live_server import LiveServer


async def test_hybrid_falls_back_to_dense_and_sparse_is_refused(
    tmp_path: Path, model_cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = service_settings(tmp_path, model_cache).model_copy(
        update={"sparse": SparseSettings(enabled=False)}
    )
    with caplog.at_level(logging.WARNING), LiveServer(create_app(settings)) as server:
        server.wait_ready()
        ingest_over_http(server)
        body = {"queries": ["How many approvals does the alpha protocol need?"], "collection_names": ["kb"]}
        response = httpx.post(f"{server.url}/search", json=body, headers=AUTH, timeout=60)
        assert response.status_code == 200, response.text
        assert response.json()["documents"][0][0].startswith("# Alpha")
        metrics = httpx.get(f"{server.url}/metrics", headers=AUTH, timeout=60).text
        paths = {
            line.split('path="')[1].split('"')[0]: float(line.rsplit(" ", 1)[1])
            for line in metrics.splitlines()
            if line.startswith("hybrid_path_total{")
        }
        # the path that ran, not the one asked for, as the retrieval agent labels it
        assert paths.get("dense_only") == 1.0, paths
        assert "native_sparse" not in paths, paths
        retriever = server.app.state.ragd.services.retriever
        with pytest.raises(InvalidRequest, match="sparse"):
            await retriever.search(SearchRequest("alpha", ("kb",), mode=SearchMode.SPARSE))
    assert any("hybrid searches run dense" in r.getMessage() for r in caplog.records)
