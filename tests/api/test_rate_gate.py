"""Which requests the rate gate counts (ragd.api.rates.COUNTED) against the routes ragd serves."""

from __future__ import annotations

import re

import pytest

from ragd.api.app import create_app
from ragd.api.rates import surface_of
from ragd.kb_types import RateSurface
from ragd.settings import LlmSettings, Settings

EXPECTED = {
    "/search": RateSurface.SEARCH,
    "/api/v1/search": RateSurface.SEARCH,
    "/api/v1/datasets/{dataset_id}/search": RateSurface.SEARCH,
    "/v1/chat/completions": RateSurface.CHAT,
    "/v1/embeddings": RateSurface.MODELS,
    "/embed": RateSurface.MODELS,
    "/v1/rerank": RateSurface.MODELS,
}


def test_the_counted_paths_are_exactly_the_search_chat_and_model_routes() -> None:
    settings = Settings(_env_file=None, llm=LlmSettings(base_url="http://llm.invalid/v1"))
    schema = create_app(settings).openapi()
    counted = {}
    for path, operations in schema["paths"].items():
        concrete = re.sub(r"\{[^}]+\}", "some-id", path)
        for method in operations:
            surface = surface_of(method.upper(), concrete)
            if surface is not None:
                counted[path] = surface
    assert counted == EXPECTED


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/v1/search"),
        ("POST", "/api/v1/datasets/a/b/search"),
        ("POST", "/api/v1/searches"),
        ("POST", "/v1/models"),
        ("POST", "/api/v1/datasets"),
    ],
)
def test_other_requests_are_not_counted(method: str, path: str) -> None:
    assert surface_of(method, path) is None
