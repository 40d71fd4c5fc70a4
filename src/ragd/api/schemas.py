"""HTTP schemas: the wire shapes of the retrieval-agent and ingestion-service contracts.

These are edge models only (pydantic); routes turn them into domain records.
Limits follow the newest retrieval-agent (``contracts.md`` §1.2) so validation
errors are FastAPI 422s with pydantic's wording; message ``content`` may also be
a list of OpenAI content parts (text parts are joined), where the reference 422s.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

from ragd.retrieve.filters import parse_filter
from ragd.settings import RetrievalSettings
from ragd.types import SearchKnobs

COLLECTION_PATTERN = r"^[A-Za-z0-9_-]{1,128}$"


class ContentPart(BaseModel):
    type: str = Field(max_length=64)
    text: str | None = Field(None, max_length=10_000)


class ChatMessage(BaseModel):
    role: str = Field(max_length=32)
    content: str | list[ContentPart] | None = None

    @field_validator("content")
    @classmethod
    def _bounded(cls, v: str | list[ContentPart] | None) -> str | list[ContentPart] | None:
        if isinstance(v, str) and len(v) > 10_000:
            raise ValueError("String should have at most 10000 characters")
        if isinstance(v, list) and len(v) > 50:
            raise ValueError("List should have at most 50 content parts")
        return v

    def text(self) -> str:
        """The message's text: a string as is, content parts' text parts joined by blank lines."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "\n\n".join(p.text for p in self.content if p.type == "text" and p.text)


#: POST /search limits that Open WebUI may exceed: clamped, logged and counted (a 422 would silently
#: turn retrieval off in Open WebUI), see ``SearchBody.clamp``.
MAX_SEARCH_K = 100
MAX_QUERY_CHARS = 2000


#: An ISO 639-1 (or 639-3) language code, as ``meta.languages`` holds them.
LanguageCode = Annotated[str, Field(pattern=r"^[a-z]{2,3}$")]


#: Which reranker runs: false (none), true (the default one), or a configured name.
RerankChoice = Annotated[
    bool | str | None,
    Field(
        description="false: no reranking; true: the default reranker (400 when none is configured); "
        "a name: that configured reranker (RAGD_RERANKERS); absent: the dataset's or the service's default",
    ),
]


def rerank_choice(value: bool | str | None) -> str | None:
    """A wire ``rerank`` value as :attr:`ragd.types.SearchKnobs.rerank` (None: the default)."""
    if value is False:
        return "none"
    if value is True:
        return "default"
    if value is None:
        return None
    return value.strip().lower()[:64]


#: A user's filter expression, parsed by :func:`ragd.retrieve.filters.parse_filter` (not by
#: pydantic: its errors are INVALID_FILTER naming the field path, the same on every surface).
FilterField = Annotated[
    Any,
    Field(
        description='a filter expression: {"must": [...], "should": [...], "must_not": [...]} of '
        'conditions such as {"key": "tags", "match": {"value": "invoice"}} or {"key": "fields.year", '
        '"range": {"gte": 2020}} (docs/knowledge-bases.md#filters); ANDed with the search\'s scope',
        json_schema_extra={"type": "object"},
    ),
]


#: A relevance floor on a search request (``POST /search`` and the dataset search), alias score_threshold.
MinScore = Annotated[
    float | None,
    Field(
        ge=0,
        le=1,
        validation_alias=AliasChoices("min_score", "score_threshold"),
        description="drop hits whose relevance (absolute, 0-1) is below this; alias score_threshold",
    ),
]


class KnobFields(BaseModel):
    """The search knobs on a search body (``POST /search`` extensions, the dataset search)."""

    min_score: MinScore = None
    vector_weight: float | None = Field(
        None,
        ge=0,
        le=1,
        description="hybrid: the dense list's share of the fusion (0-1), BM25 gets the rest; default "
        "RAGD_RETRIEVAL__VECTOR_WEIGHT (0.6, tuned for the default convex fusion; 0.5 with fusion=rrf "
        "is plain RRF)",
    )
    diversity: float | None = Field(
        None, ge=0, le=1, description="MMR: 0 (default) keeps the ranking, higher favours variety"
    )
    max_per_file: int | None = Field(None, ge=1, le=100, description="at most this many hits of one file")
    languages: list[LanguageCode] | None = Field(
        None,
        max_length=20,
        description="only chunks in one of these languages (ISO 639-1 codes, meta.languages)",
    )
    rerank: RerankChoice = None
    filter: FilterField = None
    hnsw_ef: int | None = Field(
        None,
        ge=4,
        le=4096,
        description="the dense search's HNSW ef for this request (higher: better recall on a large "
        "index, slower); default: the engine's. Exact scans (small or narrowly filtered datasets) "
        "ignore it",
    )

    def knobs(self, defaults: RetrievalSettings) -> SearchKnobs:
        """This body's knobs, settings filling what it leaves out; a bad ``filter`` is
        INVALID_FILTER (422) naming its field path."""
        return SearchKnobs(
            min_score=defaults.min_score if self.min_score is None else self.min_score,
            vector_weight=self.vector_weight,
            diversity=self.diversity or 0.0,
            max_per_file=self.max_per_file,
            languages=tuple(dict.fromkeys(self.languages or ())),
            rerank=rerank_choice(self.rerank),
            where=parse_filter(self.filter),
            hnsw_ef=self.hnsw_ef,
        )


class SearchBody(KnobFields):
    queries: list[str] | None = Field(None, max_length=10)
    messages: list[ChatMessage] | None = Field(None, max_length=50)
    collection_names: list[str] = Field(min_length=1, max_length=20)
    k: int = Field(5, ge=1, description=f"results; above {MAX_SEARCH_K} is clamped to {MAX_SEARCH_K}")
    retrieval_query_generation_prompt_template: str | None = Field(None, max_length=8000)

    def clamp(self) -> tuple[SearchBody, list[str]]:
        """This body with ``k`` and over-long queries cut to their limits, and the fields that were."""
        clamped = []
        changes: dict[str, Any] = {}
        if self.k > MAX_SEARCH_K:
            changes["k"] = MAX_SEARCH_K
            clamped.append("k")
        if any(len(q) > MAX_QUERY_CHARS for q in self.queries or ()):
            changes["queries"] = [q[:MAX_QUERY_CHARS] for q in self.queries or ()]
            clamped.append("queries")
        return (self.model_copy(update=changes) if changes else self), clamped

    @field_validator("collection_names")
    @classmethod
    def _names(cls, v: list[str]) -> list[str]:
        import re

        for name in v:
            if not re.match(COLLECTION_PATTERN, name):
                raise ValueError(f"collection name {name[:130]!r} must match {COLLECTION_PATTERN}")
        return v

    @model_validator(mode="after")
    def _something_to_search(self) -> SearchBody:
        if not self.queries and not self.messages:
            raise ValueError("provide queries or messages")
        return self


class SearchResponse(BaseModel):
    documents: list[list[str]]
    metadatas: list[list[dict[str, Any]]]
    distances: list[list[float]]


class IngestJson(BaseModel):
    """``PUT /api/v1/ingest`` with ``Content-Type: application/json``: a file in S3."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    file_id: str = Field(min_length=1, max_length=256)
    filename: str = Field(min_length=1, max_length=1024)
    collection_name: str = Field(min_length=1, max_length=256)
    collection_type: str = Field("file", max_length=64)
    user_id: str = Field(min_length=1, max_length=256)
    overwrite: bool = True
    force: bool = Field(False, description="re-index even when the file's bytes are unchanged")
    s3_bucket: str | None = Field(None, max_length=255)
    s3_key: str | None = Field(None, max_length=1024)
    metadata: dict[str, Any] | None = Field(
        None,
        description='ragd extension: the file\'s user metadata {"tags": [...], "fields": {...}}, copied into '
        "every chunk's meta.tags and meta.fields (docs/knowledge-bases.md#metadata)",
    )

    @model_validator(mode="after")
    def _s3_ref(self) -> IngestJson:
        if not self.s3_bucket or not self.s3_key:
            raise ValueError("JSON ingest needs both s3_bucket and s3_key (or send multipart with a file)")
        return self


class Extraction(BaseModel):
    """How the ``auto`` router read the file (contracts: the ingestion service's ``extraction``)."""

    engine: str | None = Field(None, description="the engine that read it (meta.extractor)")
    route: dict[str, Any] = Field(
        description='the signal and its measures, e.g. {"signal": "textbox", "textboxes": 50}'
    )


class IngestOk(BaseModel):
    status: Literal[True] = True
    collection_name: str
    chunks_count: int
    #: only when the auto router stamped a route (a vision endpoint is configured)
    extraction: Extraction | None = None


class DeleteOk(BaseModel):
    status: Literal[True] = True
    file_id: str
    chunks_deleted: int


class IngestForm(BaseModel):
    """``PUT /api/v1/ingest`` as multipart/form-data (documentation only: the form is streamed by hand)."""

    file: bytes = Field(description="the document; streamed to a temporary file, never held in memory")
    file_id: str
    filename: str
    collection_name: str
    collection_type: str = "file"
    user_id: str
    overwrite: str = Field("true", description="true/1/yes/y or false/0/no/n")
    force: str = Field("false", description="true: re-index even when the file's bytes are unchanged")
    metadata: str | None = Field(
        None, description='ragd extension: JSON {"tags": [...], "fields": {...}}, the file\'s user metadata'
    )


class ExtractForm(BaseModel):
    """``POST /api/v1/extract`` as multipart/form-data (documentation only)."""

    file: bytes
    engine: str | None = Field(
        None, description="extraction engine override, e.g. kreuzberg, text, vision-llm or hybrid-diagram"
    )
    profile: str | None = Field(
        None,
        description="a vision engine's prompt profile: diagram, diagram-topology, general, figure or ocr "
        "(for other engines a 400)",
    )


def request_body(media: dict[str, type[BaseModel]]) -> dict[str, Any]:
    """An OpenAPI ``requestBody`` for routes that parse their body themselves (``openapi_extra``)."""
    return {
        "requestBody": {
            "required": True,
            "content": {kind: {"schema": model.model_json_schema()} for kind, model in media.items()},
        }
    }
