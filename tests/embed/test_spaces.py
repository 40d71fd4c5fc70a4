"""Which dense model a collection's vectors were made with (:class:`ragd.embed.spaces.DenseSpaces`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import pytest

from ragd.embed.base import DenseEmbedder, DenseSpec
from ragd.embed.spaces import DenseSpaces
from ragd.errors import ConfigurationError
from ragd.types import DenseSpace


class Model:
    def __init__(self, name: str, dim: int, prefix: str = "") -> None:
        self.spec = DenseSpec(model=name, dimension=dim, max_tokens=128, query_prefix=prefix)


class Catalog:
    def __init__(self, chosen: dict[str, str]) -> None:
        self.chosen, self.asked = chosen, 0

    async def collection_models(self, collection_names: Sequence[str]) -> dict[str, str]:
        self.asked += 1
        return {n: self.chosen[n] for n in collection_names if n in self.chosen}


def spaces(**named: Any) -> DenseSpaces:
    return DenseSpaces(
        cast(DenseEmbedder, Model("minilm", 384)), {k: cast(DenseEmbedder, v) for k, v in named.items()}
    )


async def test_without_named_models_nothing_is_looked_up() -> None:
    catalog = Catalog({"a": "e5"})
    plain = spaces()
    plain.bind(catalog)
    assert await plain.group(["a", "b"]) == {None: ("a", "b")}
    assert await plain.space_of("a") is None
    assert catalog.asked == 0
    assert plain.names == ("default",)
    assert plain.manifest_entries == ()


async def test_collections_are_grouped_by_their_dataset_s_model_in_order() -> None:
    both = spaces(e5=Model("e5-small", 384, "query: "), tiny=Model("tiny", 32))
    both.bind(Catalog({"b": "e5", "d": "tiny", "c": "e5"}))
    assert await both.group(["a", "b", "c", "d"]) == {None: ("a",), "e5": ("b", "c"), "tiny": ("d",)}
    assert await both.space_of("d") == "tiny"
    assert both.names == ("default", "e5", "tiny")
    assert both.manifest_entries == (
        DenseSpace(name="e5", model="e5-small", dim=384, query_prefix="query: "),
        DenseSpace(name="tiny", model="tiny", dim=32),
    )
    assert both.embedder(None) is both.default
    with pytest.raises(ConfigurationError, match="'gone', which is not configured"):
        both.embedder("gone")
