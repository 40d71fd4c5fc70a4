"""``POST /search``: distances are absolute relevance, and ``min_score`` / ``score_threshold`` floor them."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ragd.api.app import create_app
from tests.api.conftest import AUTH, ingest_over_http, service_settings
from tests.support.live_server import LiveServer


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[LiveServer]:
    settings = service_settings(tmp_path_factory.mktemp("relevance"), model_cache)
    with LiveServer(create_app(settings)) as live:
        live.wait_ready()
        ingest_over_http(live)
        yield live


def _search(server: LiveServer, query: str, **extra: object) -> httpx.Response:
    body = {"queries": [query], "collection_names": ["kb"], "k": 3, **extra}
    return httpx.post(f"{server.url}/search", json=body, headers=AUTH, timeout=60)


def test_distances_are_absolute_relevance(server: LiveServer) -> None:
    on_topic = _search(server, "How many approvals does the alpha protocol need?").json()
    off_topic = _search(server, "What is the capital of France?").json()
    assert on_topic["documents"][0][0].startswith("# Alpha")
    for distances in (on_topic["distances"][0], off_topic["distances"][0]):
        assert all(0.0 <= d <= 1.0 for d in distances)
    # the first hit of an off-topic query ranks first too, but it is not relevant
    assert on_topic["distances"][0][0] > 0.5 > off_topic["distances"][0][0]


@pytest.mark.parametrize("field", ["min_score", "score_threshold"])
def test_min_score_drops_what_is_not_relevant(server: LiveServer, field: str) -> None:
    off = _search(server, "What is the capital of France?", **{field: 0.4})
    assert off.status_code == 200, off.text
    assert off.json() == {"documents": [[]], "metadatas": [[]], "distances": [[]]}
    on = _search(server, "How many approvals does the alpha protocol need?", **{field: 0.4}).json()
    assert on["documents"][0][0].startswith("# Alpha")
    assert all(d >= 0.4 for d in on["distances"][0])


def test_a_floor_outside_zero_to_one_is_a_422(server: LiveServer) -> None:
    assert _search(server, "alpha", min_score=1.5).status_code == 422


def test_over_limit_values_from_open_webui_are_clamped_not_refused(
    server: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A 422 silently turns RAG off in Open WebUI: k and query length are clamped, logged, counted."""
    with caplog.at_level(logging.DEBUG, logger="ragd.api.routes.search"):
        # 2,500+ characters with a control character inside the part the clamp keeps
        long_query = "alpha \x1b[31mprotocol approvals " + "alpha protocol approvals " * 100
        response = _search(server, long_query, k=500)
        assert response.status_code == 200, response.text
        assert 1 <= len(response.json()["documents"][0]) <= 100
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("k over its limit, clamped (k=500" in w for w in warnings)
    assert any("queries over its limit" in w for w in warnings)
    debug = [r.getMessage() for r in caplog.records if "resolved queries" in r.getMessage()]
    assert debug
    assert "\x1b" not in debug[-1], "user text reaches the log sanitised"
    metrics = httpx.get(f"{server.url}/metrics", headers=AUTH).text
    assert 'search_clamped_total{field="k"} 1.0' in metrics
    assert 'search_clamped_total{field="queries"} 1.0' in metrics
    # everything else stays strict
    assert _search(server, "alpha", k="many").status_code == 422
    assert _search(server, "alpha", k=0).status_code == 422
