"""The one vocabulary of frozen records that flows through ragd.

INGEST  Blob -extract-> Document -chunk-> [Chunk] -embed-> [EmbeddedChunk] -store-> IngestReport
SEARCH  query -embed-> StoreQuery -store.search-> [Hit] -dedup-> [Hit][:k]
ANSWER  [Message] -search-> [Hit] -number-> [Citation] + context -model-> text citing [n]

Records are immutable: change one with :func:`dataclasses.replace`.  Pydantic
lives at the edges (settings, HTTP schemas); these are plain dataclasses.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

DenseVector = npt.NDArray[np.float32]


class ParsedEnum(enum.Enum):
    """An enum whose parse error lists the valid values."""

    @classmethod
    def parse(cls, value: str | enum.Enum) -> Any:
        if isinstance(value, cls):
            return value
        text = str(value).strip().lower()
        for member in cls:
            if member.value == text:
                return member
        valid = ", ".join(m.value for m in cls)
        raise ValueError(f"unknown {cls.__name__} {value!r}; valid values: {valid}")


class FusionMethod(ParsedEnum):
    """How a hybrid search combines its dense and BM25 lists (docs/scoring.md)."""

    #: each list's scores divided by its best, then a weighted mean (computed by ragd)
    CONVEX = "convex"
    #: weighted reciprocal-rank fusion, inside the engine
    RRF = "rrf"


class SearchMode(ParsedEnum):
    DENSE = "dense"
    SPARSE = "sparse"
    HYBRID = "hybrid"


class PromptStyle(ParsedEnum):
    """How the chat proxy gives the model its sources (docs/chat.md)."""

    #: ragd's: ``<document index="1" source=… path=… score=…>text</document>`` in ``<retrieved_documents>``
    DOCUMENTS = "documents"
    #: ragproxy's: a numbered list, each source's title and URL (or path), then its text
    SOURCES_LIST = "sources-list"


class ChunkStrategy(ParsedEnum):
    TOKEN = "token"
    MARKDOWN = "markdown"
    SENTENCE = "sentence"
    RECURSIVE = "recursive"
    MANUAL = "manual"


class IngestStatus(ParsedEnum):
    INDEXED = "indexed"
    UNCHANGED = "unchanged"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class Blob:
    """Raw bytes of one file plus what we know about where it came from.

    Exactly one of ``data`` / ``path`` holds the content; ``path`` lets
    extractors read large files without copying them into memory.
    """

    name: str
    data: bytes | None = None
    path: Path | None = None
    mime_type: str | None = None

    def read(self) -> bytes:
        if self.data is not None:
            return self.data
        if self.path is None:
            raise ValueError("blob has neither data nor path")
        return self.path.read_bytes()

    @property
    def suffix(self) -> str:
        return Path(self.name).suffix.lower()


@dataclass(frozen=True, slots=True)
class PageSpan:
    """Characters ``[start, end)`` of a document's text come from ``page`` (0-based)."""

    page: int
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class TextBox:
    """Characters ``[start, end)`` of a document's text are drawn in this rectangle of ``page``.

    ``page`` is 0-based; ``x0 < x1`` and ``y0 < y1`` are fractions (0..1) of the page's width and
    height from its top-left corner, so a box holds at any rendering resolution.  Extractors emit
    one per word or per line (PDFium's text page for PDF text layers, OCR word boxes for scans).
    """

    page: int
    start: int
    end: int
    x0: float
    y0: float
    x1: float
    y1: float


@dataclass(frozen=True, slots=True)
class Region:
    """Characters ``[start, end)`` of a document's text were made by ``extractor`` with ``profile``.

    A document read by one engine needs none (``Document.extractor`` and
    ``Document.meta["vision_profile"]`` say it); a figure described by a vision model next to a
    page's exact text is a region of its own, so its chunk records the engine and profile that
    made it (``meta.extractor``, ``meta.vision_profile``).
    """

    start: int
    end: int
    extractor: str
    profile: str | None = None


@dataclass(frozen=True, slots=True)
class Document:
    """Extracted text of one file.

    ``text`` is Markdown where the extractor keeps structure (headings,
    tables), plain text otherwise.  ``pages`` maps character ranges back to
    0-based page numbers for paged formats (PDF); empty otherwise.
    """

    text: str
    extractor: str
    mime_type: str | None = None
    pages: tuple[PageSpan, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)
    #: where the text is drawn on its pages (paged formats with a layout; empty otherwise)
    boxes: tuple[TextBox, ...] = ()
    #: parts of the text made by another engine than ``extractor`` (figure descriptions)
    regions: tuple[Region, ...] = ()

    def page_at(self, offset: int) -> int | None:
        """The 0-based page holding character ``offset``, or None when unpaged."""
        for span in self.pages:
            if span.start <= offset < span.end:
                return span.page
        if self.pages and offset >= self.pages[-1].end:
            return self.pages[-1].page
        return None


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of a document's text, characters ``[start, end)`` of it.

    ``headers`` is the heading breadcrumb (outermost first) the chunk sits
    under; it is prepended to the text that is embedded, never to ``text``.
    """

    text: str
    split_id: int
    start: int
    end: int
    headers: tuple[str, ...] = ()
    page: int | None = None

    @property
    def breadcrumb(self) -> str:
        return " > ".join(self.headers)

    def embedding_text(self) -> str:
        """What the embedder sees: breadcrumb line, then the chunk text."""
        if self.headers:
            return f"{self.breadcrumb}\n{self.text}"
        return self.text


@dataclass(frozen=True, slots=True)
class SparseVector:
    indices: tuple[int, ...]
    values: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.indices) != len(self.values):
            raise ValueError("sparse vector indices and values differ in length")

    @property
    def is_empty(self) -> bool:
        return not self.indices


@dataclass(frozen=True, slots=True)
class FileRef:
    """Which logical file a set of chunks belongs to, and its identity."""

    file_id: str
    collection_name: str
    name: str
    source: str
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ChunkMeta:
    """A chunk's metadata: the ``meta`` object of its point (docs/payload.md), typed.

    ragd builds it at ingest and reads it back with :meth:`parse` wherever it needs a field; it is
    a dict only on the wire (the payload, Open WebUI's ``metadatas``).  Points written by other
    tools may lack keys or hold other types: :meth:`parse` keeps what fits, and every key it does
    not know stays in ``extra`` (written back unchanged by :meth:`to_payload`).
    """

    collection_name: str
    file_id: str
    name: str = ""
    source: str = ""
    split_id: int | None = None
    #: how many chunks the file's version has (a version is complete when it has them all)
    chunk_count: int | None = None
    extractor: str | None = None
    #: the vision engine's prompt profile (diagram, general, ocr, figure, …) when one made the text
    vision_profile: str | None = None
    #: where the chunk is drawn: ``(page, x0, y0, x1, y1)``, 0-based page, fractions of the page
    #: from its top-left corner, one per line of the passage (docs/payload.md)
    boxes: tuple[tuple[int, float, float, float, float], ...] = ()
    #: the file's bytes and the pipeline that made the points (re-ingest skips an unchanged file)
    file_hash: str | None = None
    pipeline: str | None = None
    ingest_version: str | None = None
    headers: tuple[str, ...] = ()
    headers_breadcrumb: str | None = None
    #: 0-based; None for unpaged formats
    page: int | None = None
    page_count: int | None = None
    title: str | None = None
    #: ISO 639-1 codes: the chunk's language, else the document's
    languages: tuple[str, ...] = ()
    disabled: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """What a person calls the file: its name, else its source."""
        return self.name or self.source

    def to_payload(self) -> dict[str, Any]:
        """The JSON object stored as the point's ``meta`` (optional keys only when set)."""
        out: dict[str, Any] = {
            **self.extra,
            "collection_name": self.collection_name,
            "file_id": self.file_id,
            "name": self.name,
            "source": self.source,
        }
        for key in _OPTIONAL_META:
            value = getattr(self, key)
            if value is not None and value != () and value is not False:
                out[key] = _plain(value)
        return out

    @classmethod
    def parse(cls, meta: Mapping[str, Any]) -> ChunkMeta:
        """Read a stored ``meta`` object; a value of the wrong type counts as absent."""
        known = {f for f in cls.__dataclass_fields__ if f != "extra"}
        return cls(
            collection_name=_str(meta.get("collection_name")) or "",
            file_id=_str(meta.get("file_id")) or "",
            name=_str(meta.get("name")) or "",
            source=_str(meta.get("source")) or "",
            split_id=_int(meta.get("split_id")),
            chunk_count=_int(meta.get("chunk_count")),
            extractor=_str(meta.get("extractor")),
            vision_profile=_str(meta.get("vision_profile")),
            boxes=_boxes(meta.get("boxes")),
            file_hash=_str(meta.get("file_hash")),
            pipeline=_str(meta.get("pipeline")),
            ingest_version=_str(meta.get("ingest_version")),
            headers=_strs(meta.get("headers")),
            headers_breadcrumb=_str(meta.get("headers_breadcrumb")),
            page=_int(meta.get("page")),
            page_count=_int(meta.get("page_count")),
            title=_str(meta.get("title")),
            languages=_strs(meta.get("languages")),
            disabled=meta.get("disabled") is True,
            extra={k: v for k, v in meta.items() if k not in known},
        )


_OPTIONAL_META = (
    "split_id",
    "chunk_count",
    "extractor",
    "vision_profile",
    "boxes",
    "file_hash",
    "pipeline",
    "ingest_version",
    "headers",
    "headers_breadcrumb",
    "page",
    "page_count",
    "title",
    "languages",
    "disabled",
)


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _plain(value: object) -> object:
    """Tuples as lists, nested ones too (a payload is JSON)."""
    return [_plain(v) for v in value] if isinstance(value, tuple) else value


def _boxes(value: object) -> tuple[tuple[int, float, float, float, float], ...]:
    if not isinstance(value, list | tuple):
        return ()
    out = []
    for box in value:
        if (
            isinstance(box, list | tuple)
            and len(box) == 5
            and _int(box[0]) is not None
            and all(isinstance(v, int | float) and not isinstance(v, bool) for v in box[1:])
        ):
            out.append((int(box[0]), float(box[1]), float(box[2]), float(box[3]), float(box[4])))
    return tuple(out)


def _strs(value: object) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list | tuple) else ()


@dataclass(frozen=True, slots=True)
class StoredChunk:
    """One point as the store keeps it: id, text, metadata, vectors."""

    id: str
    content: str
    meta: Mapping[str, Any]
    dense: DenseVector | None = None
    sparse: SparseVector | None = None
    #: the dense model (embedding space) of ``dense``: None for the index's default model, else the
    #: name of one of the index's other models (a dataset's choice; :class:`DenseSpace`)
    space: str | None = None


@dataclass(frozen=True, slots=True)
class ComponentScores:
    """Raw scores of each retrieval path, for explanation (None: not in that list)."""

    dense: float | None = None
    sparse: float | None = None
    fused: float | None = None
    rerank: float | None = None


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result.

    ``score`` is on ragd's one documented scale (docs/scoring.md): in
    ``[0, 1]``, higher is more relevant, 1.0 = ranked first by every
    retrieval path used.  ``scores`` carries the raw component values.
    ``relevance`` is absolute: the calibrated probability in ``[0, 1]`` that
    the hit is relevant, whatever the other hits (:mod:`ragd.retrieve.relevance`).
    """

    id: str
    content: str
    meta: Mapping[str, Any]
    score: float
    scores: ComponentScores = ComponentScores()
    relevance: float = 0.0
    #: the chunk's stored dense vector when the search returned it (diversity needs it); never serialised
    vector: DenseVector | Sequence[float] | None = field(default=None, compare=False, repr=False)
    #: the dense model of ``vector`` (None: the index's default; else a dataset's named model)
    space: str | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class SearchKnobs:
    """How a search filters and ranks, the same on every surface (docs/search-knobs.md).

    Each surface maps its own field names onto this record once (``/search``, the dataset search,
    the chat proxy's ``rag_*`` fields, the CLI); the pipeline reads nothing else."""

    #: drop hits whose relevance (absolute, [0, 1]) is below this; 0 keeps every hit
    min_score: float = 0.0
    #: hybrid: the dense list's share of the fusion (0-1, BM25 gets the rest); None: the setting
    vector_weight: float | None = None
    #: MMR: 0 keeps the ranking, higher trades relevance for variety (MMR's λ = 1 - diversity)
    diversity: float = 0.0
    #: at most this many hits of one file; None: no cap
    max_per_file: int | None = None
    #: drop a hit whose dense cosine to a better-ranked one is at least this; None: keep them
    near_duplicates: float | None = None
    #: only chunks in one of these languages (ISO 639-1 codes); empty: every language
    languages: tuple[str, ...] = ()
    #: which reranker runs: a configured name, "none", or None for the default (when configured)
    rerank: str | None = None
    #: HNSW search depth of the dense search (higher: better recall, slower); None: the store's
    hnsw_ef: int | None = None
    #: the user's filter expression (docs/knowledge-bases.md#filters), ANDed with the search's scope
    where: MetaFilter | None = None

    @property
    def diversifies(self) -> bool:
        return self.diversity > 0 or self.max_per_file is not None or self.near_duplicates is not None


#: a value a filter matches exactly: a keyword, an integer or a boolean
MatchScalar = str | int | bool


@dataclass(frozen=True, slots=True)
class MatchCondition:
    """``key`` holds one of ``values`` (a list-valued key such as ``tags``: any element does).

    ``key`` is a filter key (docs/knowledge-bases.md#filters): ``tags``, ``fields.<name>`` or a
    built-in (``language``, ``file_id``, ``name``, ``source``, ``collection``); the store's
    payload module maps it onto the payload."""

    key: str
    values: tuple[MatchScalar, ...]


@dataclass(frozen=True, slots=True)
class RangeCondition:
    """``key`` holds a number (``dates`` False) or an ISO-8601 date/datetime (``dates`` True)
    within the bounds given; a point without the key does not match."""

    key: str
    gt: float | str | None = None
    gte: float | str | None = None
    lt: float | str | None = None
    lte: float | str | None = None
    dates: bool = False


@dataclass(frozen=True, slots=True)
class EmptyCondition:
    """``key`` is absent, null or an empty list (``empty`` True: ``is_empty``), or holds a value
    (``empty`` False: ``exists``)."""

    key: str
    empty: bool


@dataclass(frozen=True, slots=True)
class MetaFilter:
    """A user's filter expression, store-independent: every ``must`` holds, at least one ``should``
    holds (when there are any), no ``must_not`` holds.  Parsed and bounded by
    :func:`ragd.retrieve.filters.parse_filter`; adapters translate it."""

    must: tuple[FilterNode, ...] = ()
    should: tuple[FilterNode, ...] = ()
    must_not: tuple[FilterNode, ...] = ()


FilterNode = MatchCondition | RangeCondition | EmptyCondition | MetaFilter


@dataclass(frozen=True, slots=True)
class PointFilter:
    """The narrow set of filters the use-cases need; adapters translate it.

    Every field is ANDed; ``None`` means "no constraint".
    """

    collection_names: tuple[str, ...] | None = None
    file_id: str | None = None
    ids: tuple[str, ...] | None = None
    #: chunks in any of these languages (ISO 639-1, ``meta.languages``)
    languages: tuple[str, ...] | None = None
    #: chunks whose position in their file (``meta.split_id``) lies in ``[first, last]``
    split_ids: tuple[int, int] | None = None
    #: a user's filter expression, ANDed with every field above (it can only narrow them)
    where: MetaFilter | None = None
    #: one version of a dataset's chunks (``meta.generation``): ``""`` the untagged one (built
    #: before any migration), else that generation's tag; None: every version
    generation: str | None = None
    #: versions left out (a migration's version being built, or one retained after a switch)
    hidden: tuple[HiddenVersions, ...] = ()


@dataclass(frozen=True, slots=True)
class CollectionVersion:
    """What a search of a collection reads while its dataset holds more than one version of its
    chunks (a migration building or retaining one): the dense model and generation it serves, and
    the versions left out."""

    collection_name: str
    space: str | None
    generation: str
    hidden: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class HiddenVersions:
    """The versions of one collection's chunks a read leaves out: generation tags (``""``: the
    untagged version).  Every other collection, and this one's other versions, are untouched."""

    collection_name: str
    tags: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FusionParams:
    """Reciprocal-rank fusion inside the store: k and one weight per path (dense, sparse)."""

    k: int = 2
    dense_weight: float = 1.0
    sparse_weight: float = 1.0
    method: FusionMethod = FusionMethod.RRF


@dataclass(frozen=True, slots=True)
class StoreQuery:
    """A search the store runs in one call: dense, sparse or both fused."""

    filter: PointFilter
    limit: int
    dense: DenseVector | None = None
    sparse: SparseVector | None = None
    prefetch_limit: int = 100
    fusion: FusionParams = FusionParams()
    #: hybrid only: also run each path alone to fill ``Hit.scores.dense/sparse`` (about twice the cost)
    explain: bool = True
    #: the dense model ``dense`` was made with: None for the default, else a named :class:`DenseSpace`
    space: str | None = None
    #: the dense search's HNSW ``ef`` for this query (None: the store's setting); exact scans ignore it
    hnsw_ef: int | None = None


@dataclass(frozen=True, slots=True)
class DenseSpace:
    """One more dense model of an index, beside the default one: its vectors live in a named vector
    of their own (``text-dense-<name>``), and the datasets that chose it are embedded with it."""

    name: str
    model: str
    dim: int
    query_prefix: str = ""
    document_prefix: str = ""
    precision: str = "fp32"


@dataclass(frozen=True, slots=True)
class IndexManifest:
    """What the vectors in an index were made with; a mismatch is fatal.

    Stored with the data.  ``dense_dim`` is the dense vector size.
    """

    dense_model: str
    dense_dim: int
    query_prefix: str
    document_prefix: str
    sparse_model: str
    chunker_version: str
    schema_version: int = 1
    #: the index's other dense models by name (RAGD_EMBEDDERS), fixed when the index is created
    extra_dense: tuple[DenseSpace, ...] = ()
    #: 0: no sparse groups; G > 0: a collection's BM25 postings are its group's (crc32(name) % G)
    #: (RAGD_STORE__SPARSE_GROUPS), fixed when the index is created
    sparse_groups: int = 0
    #: the default dense model's weights as run (RAGD_EMBEDDING__PRECISION): int8 vectors are not fp32's
    dense_precision: str = "fp32"
    #: how the groups are kept (``ragd.store.payload.SparseLayout``): "terms" (term ids of their own
    #: in ``text-sparse``, since 2026-11-28) or "vectors" (``text-sparse-g<i>``, before); not a
    #: setting: an index is opened as it was made
    sparse_grouping: str = "vectors"

    def mismatches(self, other: IndexManifest) -> list[str]:
        """Human-readable differences between two manifests (empty when equal)."""
        out = []
        for name in self.__dataclass_fields__:
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine == theirs:
                continue
            if name == "extra_dense":
                out.append(f"dense models: index has {_spaces(mine)}, configuration has {_spaces(theirs)}")
            elif name == "dense_precision":
                out.append(
                    "embedding precision (RAGD_EMBEDDING__PRECISION): "
                    f"index has {mine!r}, configuration has {theirs!r}"
                )
            elif name == "sparse_groups":
                out.append(
                    "sparse vector groups (RAGD_STORE__SPARSE_GROUPS): "
                    f"index has {mine}, configuration has {theirs}"
                )
            else:
                out.append(f"{name}: index has {mine!r}, configuration has {theirs!r}")
        return out


def _spaces(spaces: Sequence[DenseSpace]) -> str:
    if not spaces:
        return "none"
    return ", ".join(
        f"{s.name}={s.model} ({s.dim}-d, prefixes {s.query_prefix!r}/{s.document_prefix!r}"
        + (f", precision {s.precision}" if s.precision != "fp32" else "")
        + ")"
        for s in spaces
    )


@dataclass(frozen=True, slots=True)
class IngestReport:
    """Outcome of ingesting one file."""

    source: str
    status: IngestStatus
    file_id: str = ""
    collection_name: str = ""
    chunks: int = 0
    code: str | None = None
    message: str | None = None
    extractor: str | None = None
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A model's request to call a tool: ``arguments`` is the JSON text the model wrote."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Message:
    """One chat turn as the use-cases see it: a role and its text (content parts already joined).

    An assistant turn may carry ``tool_calls``; a ``tool`` turn answers one by ``tool_call_id``.
    """

    role: str
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None


@dataclass(frozen=True, slots=True)
class Citation:
    """A numbered source put in front of a model: ``[number]`` in its answer points here.

    ``text`` is what the model was shown (a source cut to fit the context budget is shorter
    than the chunk); ``chunk_id`` is the stored point's id, ``split_id`` its place in the file.
    """

    number: int
    chunk_id: str
    file_id: str
    name: str
    source: str
    text: str
    score: float
    split_id: int | None = None
    page: int | None = None
    headers: tuple[str, ...] = ()
