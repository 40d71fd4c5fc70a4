"""The settings' limits apply to every tenant without an override of its own: a live service with
RAGD_LIMITS__CHAT_PER_MINUTE=1 and …SEARCH_PER_MINUTE=1 (SQLite catalog); the chat proxy answers
429 in OpenAI's shape before its upstream is asked (nothing listens there)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragd.api.app import create_app
from ragd.settings import ChatSettings, LimitsSettings, LlmSettings
from tests.kb.conftest import SERVICE_KEY, Api, kb_settings, new_tenant
from tests.support.live_server import LiveServer


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[LiveServer]:
    settings = kb_settings(
        tmp_path_factory.mktemp("limits") / "data",
        model_cache,
        None,
        limits=LimitsSettings(chat_per_minute=1, search_per_minute=1),
        llm=LlmSettings(base_url="http://127.0.0.1:9/v1", model="upstream-model"),
        chat=ChatSettings(enabled=True),
    )
    with LiveServer(create_app(settings)) as server:
        server.wait_ready()
        yield server


def test_the_settings_limits_hold_for_a_tenant_without_overrides(limited: LiveServer) -> None:
    service = Api(limited.url, SERVICE_KEY)
    tenant_id, keys = new_tenant(service, "defaults", "reader")
    reader = keys["reader"]
    try:
        seen = service.ok("GET", f"/api/v1/tenants/{tenant_id}/limits")
        assert seen["limits"]["chat_per_minute"] == seen["defaults"]["chat_per_minute"] == 1
        assert seen["overrides"] == {}
        # the first request is counted whatever becomes of it (here: a body that is not JSON)
        assert reader.post("/v1/chat/completions", content=b"not json").status_code == 400
        refused = reader.post("/v1/chat/completions", json={"model": "upstream-model", "messages": []})
        assert refused.status_code == 429
        assert refused.json()["error"]["code"] == "RATE_LIMITED"
        assert int(refused.headers["Retry-After"]) == 60
        reader.ok("POST", "/api/v1/search", json={"query": "anything"})
        assert reader.post("/api/v1/search", json={"query": "anything"}).status_code == 429
        # the service key is never counted
        for _ in range(3):
            service.ok("POST", "/api/v1/search", json={"query": "anything"})
        # an override lifts the default for this tenant at once (the replica that took the PUT)
        service.ok("PUT", f"/api/v1/tenants/{tenant_id}/limits", json={"search_per_minute": 0})
        reader.ok("POST", "/api/v1/search", json={"query": "anything"})
    finally:
        for api in (service, reader):
            api.close()
