"""The index's dense models: the default one, and the named ones a dataset may choose.

Every model has a named vector of its own in the one physical collection (``text-dense`` for the
default, ``text-dense-<name>`` for ``RAGD_EMBEDDERS[name]``), and every point holds the vector of
its collection's model only.  Which model a collection uses is the dataset's choice, kept in the
catalog (:class:`CollectionModels`); a collection that belongs to no dataset uses the default.

With no named model configured (the default set-up) nothing is looked up: every collection is
the default model's, at no cost per search or per file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from ragd.embed.base import DenseEmbedder
from ragd.errors import ConfigurationError
from ragd.types import DenseSpace

DEFAULT_MODEL = "default"


class CollectionModels(Protocol):
    """Where the datasets' model choices are kept (the catalog)."""

    async def collection_models(self, collection_names: Sequence[str]) -> dict[str, str]:
        """The named model of each of ``collection_names`` that chose one; the rest use the default."""
        ...


class DenseSpaces:
    """The configured dense models by name, and which one a collection's vectors were made with."""

    def __init__(
        self,
        default: DenseEmbedder,
        named: Mapping[str, DenseEmbedder] | None = None,
        *,
        languages: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        self.default = default
        self.named = dict(named or {})
        self._languages = {name: tuple(langs) for name, langs in (languages or {}).items()}
        self._lookup: CollectionModels | None = None

    def bind(self, lookup: CollectionModels) -> None:
        """Where the datasets' choices are read from (once the catalog is open)."""
        self._lookup = lookup

    @property
    def names(self) -> tuple[str, ...]:
        return (DEFAULT_MODEL, *self.named)

    @property
    def manifest_entries(self) -> tuple[DenseSpace, ...]:
        """The named models as the index manifest records them (sorted by name)."""
        return tuple(
            DenseSpace(
                name=name,
                model=model.spec.model,
                dim=model.spec.dimension,
                query_prefix=model.spec.query_prefix,
                document_prefix=model.spec.document_prefix,
                precision=model.spec.precision,
            )
            for name, model in sorted(self.named.items())
        )

    def embedder(self, space: str | None) -> DenseEmbedder:
        """The model of ``space`` (None: the default)."""
        if space is None:
            return self.default
        model = self.named.get(space)
        if model is None:
            raise ConfigurationError(
                f"a dataset uses the dense model {space[:64]!r}, which is not configured",
                hint="add it back to RAGD_EMBEDDERS (the index was built with it)",
            )
        return model

    def languages(self, space: str | None, default: Sequence[str]) -> tuple[str, ...]:
        return self._languages.get(space or DEFAULT_MODEL, tuple(default))

    async def space_of(self, collection_name: str) -> str | None:
        """The named model of a collection's vectors (None: the default)."""
        if not self.named or self._lookup is None:
            return None
        return (await self._lookup.collection_models([collection_name])).get(collection_name)

    async def group(self, collection_names: Sequence[str]) -> dict[str | None, tuple[str, ...]]:
        """``collection_names`` by the model of their vectors, in order of first appearance."""
        if not self.named or self._lookup is None:
            return {None: tuple(collection_names)}
        chosen = await self._lookup.collection_models(collection_names)
        groups: dict[str | None, list[str]] = {}
        for name in collection_names:
            groups.setdefault(chosen.get(name), []).append(name)
        return {space: tuple(names) for space, names in groups.items()}
