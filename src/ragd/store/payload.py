"""The Qdrant point layout ragd writes and reads: the one module that knows it.

A point is::

    id       UUID (StoredChunk.id parsed; returned in canonical 8-4-4-4-12 form)
    vectors  {"text-dense": [float] (cosine), "text-sparse": {indices, values} (IDF modifier)}

With ``RAGD_STORE__SPARSE_GROUPS`` = G > 0 (fixed in the manifest) each collection belongs to
group ``crc32(name) % G`` and a search of one collection walks only its group's posting lists
(:class:`SparseLayout`).  An index made since 2026-11-28 keeps the one ``text-sparse`` vector
and gives each group its own term ids (``grouping: terms``); one made before holds one vector
per group, ``text-sparse-g<i>`` (``grouping: vectors``), and is still read and written as such.
    payload  {"content": <chunk text>, "meta": {collection_name, file_id, name, source, ...}}

``meta`` holds whatever the caller put in ``StoredChunk.meta`` (made JSON-safe:
tuples become lists), plus ``meta.disabled`` (bool) once :meth:`set_disabled`
has touched the point: searches skip points where it is ``true`` (absent means
enabled).  The payload indexes on :data:`PAYLOAD_INDEXES` are created before
the first write.  The contract other clients rely on is
written down in ``docs/payload.md``.
"""

from __future__ import annotations

import dataclasses
import enum
import re
import uuid
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragd.errors import InvalidRequest
from ragd.types import (
    DenseVector,
    EmptyCondition,
    FilterNode,
    IndexManifest,
    MatchCondition,
    MetaFilter,
    PointFilter,
    SparseVector,
    StoredChunk,
)

DENSE_VECTOR = "text-dense"
SPARSE_VECTOR = "text-sparse"
#: the named vector of a dataset's own dense model: ``text-dense-<name>`` (RAGD_EMBEDDERS)
DENSE_VECTOR_PREFIX = f"{DENSE_VECTOR}-"
#: the sparse vector of a group of collections: ``text-sparse-g<i>`` (RAGD_STORE__SPARSE_GROUPS)
SPARSE_GROUP_PREFIX = f"{SPARSE_VECTOR}-g"
#: sparse groups as term ids of their own in the one ``text-sparse`` vector (new indexes)
GROUPING_TERMS = "terms"
#: sparse groups as named vectors ``text-sparse-g<i>`` (indexes made before 2026-11-28)
GROUPING_VECTORS = "vectors"
CONTENT_KEY = "content"
META_KEY = "meta"

COLLECTION_NAME_KEY = "meta.collection_name"
FILE_ID_KEY = "meta.file_id"
SPLIT_ID_KEY = "meta.split_id"
COLLECTION_TYPE_KEY = "meta.collection_type"
#: ISO 639-1 codes of the chunk's language (a list; detected per chunk at ingest)
LANGUAGES_KEY = "meta.languages"
#: a file's user metadata, copied into each of its chunks: a list of strings and a name -> value object
TAGS_KEY = "meta.tags"
FIELDS_KEY = "meta.fields"
#: a filter's built-in keys (docs/knowledge-bases.md#filters) and the payload key each reads
BUILTIN_FILTER_KEYS = {
    "language": LANGUAGES_KEY,
    "file_id": FILE_ID_KEY,
    "name": "meta.name",
    "source": "meta.source",
    "collection": COLLECTION_NAME_KEY,
    "dataset": "meta.dataset_id",
}
DISABLED_FIELD = "disabled"
#: the version of a dataset's chunks a point belongs to (issue 31: migrations); absent on the
#: version built before any migration.  A filter key of its own, never one a user's filter accepts
GENERATION_FIELD = "generation"
GENERATION_KEY = f"{META_KEY}.{GENERATION_FIELD}"
DISABLED_KEY = f"{META_KEY}.{DISABLED_FIELD}"

_CANONICAL = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class IndexKind(enum.Enum):
    KEYWORD = "keyword"
    BOOL = "bool"
    #: range lookups only (``meta.split_id``: a page of a file's chunks, a hit's neighbours)
    INTEGER = "integer"
    #: number ranges (a dataset's number field)
    FLOAT = "float"
    #: date ranges over ISO-8601 text (a dataset's date field)
    DATETIME = "datetime"


@dataclass(frozen=True, slots=True)
class PayloadIndex:
    """A payload index; ``is_tenant`` (keyword only) co-locates a tenant's points on disk."""

    key: str
    kind: IndexKind = IndexKind.KEYWORD
    is_tenant: bool = False


PAYLOAD_INDEXES: tuple[PayloadIndex, ...] = (
    PayloadIndex(COLLECTION_NAME_KEY, is_tenant=True),
    PayloadIndex(FILE_ID_KEY),
    PayloadIndex(COLLECTION_TYPE_KEY),
    PayloadIndex(DISABLED_KEY, IndexKind.BOOL),
    PayloadIndex(LANGUAGES_KEY),
    PayloadIndex(SPLIT_ID_KEY, IndexKind.INTEGER),
    PayloadIndex(TAGS_KEY),
)
#: the keys ``facet()`` is offered on: the keyword-indexed ones
FACET_KEYS = frozenset(index.key for index in PAYLOAD_INDEXES if index.kind is IndexKind.KEYWORD)


def point_uuid(point_id: str) -> uuid.UUID:
    """Parse a chunk id; anything but a UUID (any of its textual forms) is refused."""
    try:
        return uuid.UUID(str(point_id))
    except ValueError as exc:
        raise InvalidRequest(f"point id {point_id!r} is not a UUID") from exc


def canonical_id(raw: object) -> str:
    """The engine's id (UUID object or string) as ragd hands it out."""
    if isinstance(raw, uuid.UUID):
        return str(raw)
    text = str(raw)
    if _CANONICAL.fullmatch(text):  # what both engines return: skip the parse (hot in every search)
        return text
    return str(uuid.UUID(text))


def to_payload(chunk: StoredChunk) -> dict[str, Any]:
    """The stored payload of a chunk: its text plus its metadata, JSON-safe."""
    return {CONTENT_KEY: chunk.content, META_KEY: _jsonable(chunk.meta)}


def content_of(payload: Mapping[str, Any] | None) -> str:
    value = (payload or {}).get(CONTENT_KEY)
    return value if isinstance(value, str) else ""


def meta_of(payload: Mapping[str, Any] | None) -> dict[str, Any]:
    value = (payload or {}).get(META_KEY)
    return dict(value) if isinstance(value, Mapping) else {}


def dense_array(values: Sequence[float] | None) -> DenseVector | None:
    return None if values is None else np.asarray(values, dtype=np.float32)


def from_point(
    raw_id: object,
    payload: Mapping[str, Any] | None,
    dense: Sequence[float] | None = None,
    sparse: SparseVector | None = None,
    space: str | None = None,
) -> StoredChunk:
    """A stored point back as a chunk record (vectors only when they were asked for)."""
    return StoredChunk(
        id=canonical_id(raw_id),
        content=content_of(payload),
        meta=meta_of(payload),
        dense=dense_array(dense),
        sparse=sparse,
        space=space,
    )


def dense_vector_name(space: str | None) -> str:
    """The named vector of a dense model: ``text-dense`` for the default, ``text-dense-<name>``."""
    return DENSE_VECTOR if space is None else DENSE_VECTOR_PREFIX + space


def dense_vector_names(manifest: IndexManifest) -> dict[str, int]:
    """Every dense named vector an index has, with its size."""
    return {
        DENSE_VECTOR: manifest.dense_dim,
        **{dense_vector_name(s.name): s.dim for s in manifest.extra_dense},
    }


def space_of_vector(name: str) -> str | None:
    """The dense model of a named vector (inverse of :func:`dense_vector_name`)."""
    return None if name == DENSE_VECTOR else name.removeprefix(DENSE_VECTOR_PREFIX)


def dense_of_point(vectors: object) -> tuple[str | None, Sequence[float] | None]:
    """The one dense vector a point holds (its model's) and that model; (None, None) without one."""
    if isinstance(vectors, Mapping):
        for name, vector in vectors.items():
            if name == DENSE_VECTOR or str(name).startswith(DENSE_VECTOR_PREFIX):
                return space_of_vector(str(name)), vector
    return None, None


def grouping_for(groups: int) -> str:
    """How a new index with ``groups`` sparse groups keeps them: as terms (the manifest's
    ``sparse_grouping``; without groups the field is not written, and its default stands)."""
    return GROUPING_TERMS if groups else GROUPING_VECTORS


def group_of(collection_name: object, groups: int) -> int:
    """A collection's sparse group: ``crc32(name) % groups``, stable across processes and machines
    (unlike Python's ``hash``), so every writer and reader of an index agrees on it."""
    return zlib.crc32(str(collection_name).encode("utf-8")) % groups


def _term_offset(group: int) -> int:
    """What a group adds to its term ids (mod 2**32): a bijection within the group, so its terms
    stay apart; two groups' ids meet only where two hashes happen to, and a search filters by
    collection anyway."""
    return zlib.crc32(f"ragd-sparse-group:{group}".encode("ascii"))


def _shifted(vector: SparseVector, offset: int) -> SparseVector:
    return _sorted_vector(
        ((i + offset) & 0xFFFFFFFF, v) for i, v in zip(vector.indices, vector.values, strict=True)
    )


def _sorted_vector(terms: Iterable[tuple[int, float]]) -> SparseVector:
    ordered = sorted(terms)
    return SparseVector(tuple(i for i, _ in ordered), tuple(v for _, v in ordered))


@dataclass(frozen=True, slots=True)
class SparseLayout:
    """Where an index keeps its chunks' sparse (BM25) vectors, from its manifest.

    - ``groups == 0``: the one ``text-sparse`` vector, the term ids as the model made them
      (``shared/contracts.md`` §1.6).
    - ``grouping == "terms"``: the one ``text-sparse`` vector, each group's terms with ids of their
      own (the model's id plus the group's offset, mod 2**32).  A posting list holds one group's
      chunks, so a search of one collection walks its group's postings only; a search of several
      groups is one query holding each group's ids.  The storage costs what one vector costs.
      IDF counts a term's chunks in its group, among all the index's chunks.
    - ``grouping == "vectors"`` (indexes made before 2026-11-28): one named vector per group,
      ``text-sparse-g<i>``; a search of several groups queries each and merges the lists.  Each
      named vector costs the engine its own storage in every segment (32 MB of touched pages per
      vector per segment while building), which is why new indexes use terms.

    Whatever the layout, a chunk read back carries the model's term ids."""

    groups: int = 0
    grouping: str = GROUPING_TERMS

    @classmethod
    def of(cls, manifest: IndexManifest) -> SparseLayout:
        return cls(manifest.sparse_groups, manifest.sparse_grouping)

    @property
    def by_vectors(self) -> bool:
        return self.groups > 0 and self.grouping == GROUPING_VECTORS

    def vector_names(self) -> tuple[str, ...]:
        """Every sparse named vector of the index."""
        if not self.by_vectors:
            return (SPARSE_VECTOR,)
        return tuple(f"{SPARSE_GROUP_PREFIX}{i}" for i in range(self.groups))

    def stored(self, chunk: StoredChunk, vector: SparseVector) -> tuple[str, SparseVector]:
        """The named vector ``chunk``'s sparse ``vector`` is stored under, and what is stored."""
        if self.groups <= 0:
            return SPARSE_VECTOR, vector
        group = group_of(chunk.meta.get("collection_name", ""), self.groups)
        if self.by_vectors:
            return f"{SPARSE_GROUP_PREFIX}{group}", vector
        return SPARSE_VECTOR, _shifted(vector, _term_offset(group))

    def queries(self, flt: PointFilter, vector: SparseVector) -> list[tuple[str, SparseVector]]:
        """The sparse lists a search under ``flt`` runs: ``(named vector, query)`` each.  Its
        collections' groups, or every group when it names no collection; none when it names an
        empty tuple (nothing matches).  One list but with ``grouping == "vectors"``."""
        if self.groups <= 0:
            return [(SPARSE_VECTOR, vector)]
        if flt.collection_names is None:
            groups: list[int] = list(range(self.groups))
        else:
            groups = sorted({group_of(name, self.groups) for name in flt.collection_names})
        if self.by_vectors:
            return [(f"{SPARSE_GROUP_PREFIX}{g}", vector) for g in groups]
        if not groups:
            return []
        merged: dict[int, float] = {}
        for g in groups:  # two groups' ids may meet (a sparse query's ids must be unique): one stays
            one = _shifted(vector, _term_offset(g))
            for i, v in zip(one.indices, one.values, strict=True):
                merged[i] = max(v, merged.get(i, v))
        return [(SPARSE_VECTOR, _sorted_vector(merged.items()))]

    def read_back(self, vectors: object, payload: Mapping[str, Any] | None) -> SparseVector | None:
        """The sparse vector a point holds, with the model's term ids, or None."""
        found = _sparse_of_point(vectors)
        if found is None:
            return None
        vector = SparseVector(tuple(int(i) for i in found.indices), tuple(float(v) for v in found.values))
        if self.groups <= 0 or self.by_vectors:
            return vector
        meta = (payload or {}).get(META_KEY) or {}
        group = group_of(meta.get("collection_name", "") if isinstance(meta, Mapping) else "", self.groups)
        return _shifted(vector, -_term_offset(group))


def _sparse_of_point(vectors: object) -> Any:
    """The one sparse vector a point holds (under ``text-sparse`` or its group's name), or None."""
    if isinstance(vectors, Mapping):
        for name, vector in vectors.items():
            if name == SPARSE_VECTOR or str(name).startswith(SPARSE_GROUP_PREFIX):
                return vector
    return None


def require_dense(chunk: StoredChunk, dims: Mapping[str, int]) -> tuple[str, list[float]]:
    """The chunk's named dense vector and its values, checked against the index's dimensions."""
    if chunk.dense is None:
        raise InvalidRequest(f"chunk {chunk.id} has no dense vector; every stored chunk needs one")
    name = dense_vector_name(chunk.space)
    dim = dims.get(name)
    if dim is None:
        raise InvalidRequest(f"chunk {chunk.id}: the index has no dense model {chunk.space!r}")
    if chunk.dense.shape != (dim,):
        raise InvalidRequest(
            f"chunk {chunk.id} has a dense vector of shape {chunk.dense.shape}; the index expects ({dim},)"
        )
    return name, np.asarray(chunk.dense, dtype=np.float32).tolist()


@dataclass(frozen=True, slots=True)
class KeywordMatch:
    """``key`` must equal one of ``values`` (one value: an exact match)."""

    key: str
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RangeMatch:
    """``key`` holds a number in ``[gte, lte]`` (a point without the key does not match)."""

    key: str
    gte: int
    lte: int


@dataclass(frozen=True, slots=True)
class FlagMatch:
    """``key`` holds the boolean ``value`` (a point without the key does not match)."""

    key: str
    value: bool


@dataclass(frozen=True, slots=True)
class FilterPlan:
    """A :class:`PointFilter` in layout terms.  Adapters translate it.

    Every match, range and the ids are ANDed (``must``); a point matching any of ``excluded``
    is left out (``must_not``)."""

    matches: tuple[KeywordMatch, ...] = ()
    ids: tuple[uuid.UUID, ...] | None = None
    excluded: tuple[FlagMatch, ...] = ()
    ranges: tuple[RangeMatch, ...] = ()
    #: the user's filter expression, its keys still filter keys (:func:`payload_key` maps them)
    where: MetaFilter | None = None

    @property
    def is_empty(self) -> bool:
        return not self.narrows and not self.excluded

    @property
    def narrows(self) -> bool:
        """True when the caller's filter selects points (by value or id), exclusions aside."""
        return bool(self.matches) or bool(self.ranges) or self.ids is not None or self.where is not None


def filter_plan(flt: PointFilter) -> FilterPlan:
    """Map a point filter onto payload keys; an empty tuple of names or ids matches nothing."""
    matches: list[KeywordMatch] = []
    if flt.collection_names is not None:
        matches.append(KeywordMatch(COLLECTION_NAME_KEY, tuple(flt.collection_names)))
    if flt.file_id is not None:
        matches.append(KeywordMatch(FILE_ID_KEY, (flt.file_id,)))
    if flt.languages is not None:  # any of them (a chunk's list holds one)
        matches.append(KeywordMatch(LANGUAGES_KEY, tuple(flt.languages)))
    ids = None if flt.ids is None else tuple(point_uuid(i) for i in flt.ids)
    ranges = () if flt.split_ids is None else (RangeMatch(SPLIT_ID_KEY, *flt.split_ids),)
    return FilterPlan(matches=tuple(matches), ids=ids, ranges=ranges, where=versioned_where(flt))


def generation_condition(tag: str) -> FilterNode:
    """The chunks of one version: ``""`` the untagged one, else those tagged ``tag``."""
    if tag == "":
        return EmptyCondition(GENERATION_FIELD, empty=True)
    return MatchCondition(GENERATION_FIELD, (tag,))


def versioned_where(flt: PointFilter) -> MetaFilter | None:
    """The user's filter with the version scope folded in: ``generation`` (must) and each
    collection's hidden versions (must not); the filter itself when there is neither."""
    if flt.generation is None and not flt.hidden:
        return flt.where
    must: list[FilterNode] = [] if flt.where is None else [flt.where]
    if flt.generation is not None:
        must.append(generation_condition(flt.generation))
    must_not: list[FilterNode] = []
    for hidden in flt.hidden:
        if not hidden.tags:
            continue
        tags = tuple(generation_condition(t) for t in hidden.tags)
        which = tags[0] if len(tags) == 1 else MetaFilter(should=tags)
        must_not.append(MetaFilter(must=(MatchCondition("collection", (hidden.collection_name,)), which)))
    return MetaFilter(must=tuple(must), must_not=tuple(must_not))


def field_index(name: str, kind: IndexKind) -> PayloadIndex:
    """The payload index of a user metadata field ``meta.fields.<name>`` (created once a dataset
    records the field's type: :meth:`ragd.store.base.VectorStore.ensure_index`)."""
    return PayloadIndex(f"{FIELDS_KEY}.{name}", kind)


def payload_key(filter_key: str) -> str:
    """The payload key a filter key reads: ``tags`` -> ``meta.tags``, ``fields.x`` ->
    ``meta.fields.x``, a built-in its own (``language`` -> ``meta.languages``)."""
    if filter_key in BUILTIN_FILTER_KEYS:
        return BUILTIN_FILTER_KEYS[filter_key]
    return f"{META_KEY}.{filter_key}"


def search_plan(flt: PointFilter) -> FilterPlan:
    """The plan of a search: the filter, minus disabled points (``meta.disabled == true``).

    Only searches leave disabled points out; count, scroll, delete and facet see them."""
    return dataclasses.replace(filter_plan(flt), excluded=(FlagMatch(DISABLED_KEY, True),))


def scoped_plan(flt: PointFilter, action: str) -> FilterPlan:
    """The plan of a bulk write; an unconstrained filter is refused (it would touch every point)."""
    plan = filter_plan(flt)
    if plan.is_empty:
        raise InvalidRequest(f"refusing to {action} with an empty filter: it would {action} every point")
    return plan


def delete_plan(flt: PointFilter) -> FilterPlan:
    return scoped_plan(flt, "delete")


def disabled_update(disabled: bool) -> tuple[str, dict[str, bool]]:
    """``(key, payload)`` of a set-payload that flags points: merged into ``meta``, other keys kept."""
    return META_KEY, {DISABLED_FIELD: bool(disabled)}


def meta_update(values: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """``(key, payload)`` of a set-payload that replaces some ``meta`` keys (a file's ``tags`` and
    ``fields``), the other meta keys kept; ``disabled`` is :func:`disabled_update`'s alone."""
    if DISABLED_FIELD in values:
        raise InvalidRequest("meta.disabled is set by set_disabled only")
    if "collection_name" in values:  # the tenant key; a chunk's sparse group follows from it too
        raise InvalidRequest("meta.collection_name is fixed when a chunk is written")
    return META_KEY, _jsonable(dict(values))


def require_indexed(key: str) -> None:
    """Facets are only offered on keyword-indexed keys (the engine needs the index)."""
    if key not in FACET_KEYS:
        valid = ", ".join(sorted(FACET_KEYS))
        raise InvalidRequest(f"cannot facet on {key!r}: not an indexed payload key; valid keys: {valid}")


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise InvalidRequest(f"metadata value {value!r} of type {type(value).__name__} is not JSON-safe")
