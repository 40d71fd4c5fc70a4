"""The index's dense models: the default one, and the named ones a dataset may choose.

Every model has a named vector of its own in the one physical collection (``text-dense`` for the
default, ``text-dense-<name>`` for ``RAGD_EMBEDDERS[name]``), and every point holds the vector of
its collection's model only.  Which model a collection uses is the dataset's choice, kept in the
catalog (:class:`CollectionModels`); a collection that belongs to no dataset uses the default.

With no named model configured (the default set-up) nothing is looked up: every collection is
the default model's, at no cost per search or per file.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Protocol

from ragd.embed.base import DenseEmbedder
from ragd.errors import ConfigurationError
from ragd.types import CollectionVersion, DenseSpace

DEFAULT_MODEL = "default"


#: how long the versions of migrating collections are reused before the catalog is asked again
VERSIONS_TTL_S = 0.5


class CollectionModels(Protocol):
    """Where the datasets' model choices are kept (the catalog)."""

    async def collection_models(self, collection_names: Sequence[str]) -> dict[str, str]:
        """The named model of each of ``collection_names`` that chose one; the rest use the default."""
        ...

    async def collection_versions(self) -> dict[str, CollectionVersion]:
        """Every collection whose dataset holds more than one version of its chunks (a migration)."""
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
        self._versions: tuple[float, dict[str, CollectionVersion]] | None = None
        self._versions_lock = asyncio.Lock()
        #: searches running in this process: a token each, and when it planned (monotonic)
        self._searches: dict[int, float] = {}
        self._tokens = itertools.count()

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

    async def versions(self) -> dict[str, CollectionVersion]:
        """The collections whose datasets hold more than one version of their chunks (a migration
        building or retaining one), with the model and generation each serves: read from the
        catalog at most every VERSIONS_TTL_S (one small query; none per search in between).

        The model of such a collection comes from here, never from :meth:`space_of`: the model and
        the versions a search reads are one snapshot, so a switch is seen whole or not at all.  A
        migration waits longer than the TTL after hiding its new version before writing into it."""
        if self._lookup is None:
            return {}
        now = time.monotonic()
        cached = self._versions
        if cached is not None and now - cached[0] < VERSIONS_TTL_S:
            return cached[1]
        async with self._versions_lock:
            cached = self._versions
            if cached is not None and time.monotonic() - cached[0] < VERSIONS_TTL_S:
                return cached[1]
            fresh = await self._lookup.collection_versions()
            self._versions = (time.monotonic(), fresh)
            return fresh

    @contextmanager
    def searching(self) -> Iterator[None]:
        """Around one search, from before it reads :meth:`versions` until its hits are back."""
        token = next(self._tokens)
        self._searches[token] = time.monotonic()
        try:
            yield
        finally:
            del self._searches[token]

    async def drain(self, before: float, *, timeout_s: float = 120.0) -> None:
        """Wait until no search of this process that started before ``before`` (monotonic) is
        still running: one that read the versions before a migration hid its new version must
        not meet that version's first chunks."""
        deadline = time.monotonic() + timeout_s
        while any(t < before for t in list(self._searches.values())) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)

    def forget_versions(self) -> None:
        """Read the versions from the catalog on the next search (this process changed them)."""
        self._versions = None

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
