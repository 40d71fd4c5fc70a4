"""The vision tests' endpoint, and kits (settings + client) closed after each test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ragd.settings import ExtractSettings, VisionSettings
from ragd.vision.kit import VisionKit, build_vision
from tests.support.vision_endpoint import VisionEndpoint, vision_endpoint

__all__ = ["make_kit", "vision_endpoint"]

MakeKit = Callable[..., VisionKit]


@pytest.fixture
def make_kit(vision_endpoint: VisionEndpoint) -> Iterator[MakeKit]:
    """``make_kit(extract=ExtractSettings(...), cache_dir=..., **vision settings)``: a kit on the
    test's endpoint (cache off unless a folder is given)."""
    made: list[VisionKit] = []

    def make(
        extract: ExtractSettings | None = None, cache_dir: Path | None = None, **vision: object
    ) -> VisionKit:
        settings = VisionSettings(
            api_base_url=vision_endpoint.url,
            model="scripted-vl",
            cache_dir=cache_dir,
            **vision,  # type: ignore[arg-type]
        )
        kit = build_vision(extract or ExtractSettings(), settings)
        assert kit is not None
        made.append(kit)
        return kit

    yield make
    for kit in made:
        kit.close()
