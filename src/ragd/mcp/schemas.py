"""The MCP tools' arguments and results: Pydantic at the edge, JSON Schema for the client.

Arguments are validated here (unknown fields refused) before any use-case runs; results are built
from the domain records (:class:`~ragd.types.Hit`, :class:`~ragd.kb_types.Dataset`…) and sent
both as structured content and as their JSON text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ragd.kb.quick_add import Added
from ragd.kb.reach import Reach
from ragd.kb.search import MAX_QUERY_CHARS
from ragd.types import ChunkMeta, Hit

CollectionName = Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,128}$")]
DatasetId = Annotated[str, Field(min_length=1, max_length=64)]
#: a dataset's id, or its name (unique per tenant)
DatasetRef = Annotated[str, Field(min_length=1, max_length=200)]
#: the most characters one read_document call returns
MAX_READ_CHARS = 100_000
DEFAULT_READ_CHARS = 20_000


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SearchArgs(_Args):
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="what to look for")
    collections: list[CollectionName] | None = Field(
        None, max_length=100, description="collection names to search (list_collections shows them)"
    )
    datasets: list[DatasetRef] | None = Field(
        None,
        max_length=100,
        description="datasets to search, each by id or by name (e.g. support); an unknown one is an"
        " error (NOT_FOUND); neither collections nor datasets given: everything you may read",
    )
    k: int = Field(5, ge=1, le=50, description="how many hits")
    mode: Literal["hybrid", "dense", "sparse"] = Field("hybrid", description="retrieval mode")
    min_score: float = Field(0.0, ge=0.0, le=1.0, description="drop hits whose relevance is below this")
    filter: dict[str, Any] | None = Field(
        None,
        description='a filter expression: {"must": [...], "should": [...], "must_not": [...]} of conditions '
        'such as {"key": "tags", "match": {"value": "invoice"}} or {"key": "fields.year", "range": '
        '{"gte": 2020}}; keys: tags, fields.<name>, language, file_id, name, source, collection',
    )


class ListCollectionsArgs(_Args):
    pass


class ReadDocumentArgs(_Args):
    collection: CollectionName = Field(description="the collection the file is in (a hit's collection)")
    file_id: str = Field(min_length=1, max_length=128, description="the file's id (a hit's file_id)")
    offset: int = Field(0, ge=0, description="first character to return")
    limit: int = Field(
        DEFAULT_READ_CHARS, ge=1, le=MAX_READ_CHARS, description="at most this many characters"
    )


class _Destination(_Args):
    dataset_id: DatasetId | None = Field(None, description="the dataset to add to")
    collection: CollectionName | None = Field(
        None, description="or a collection: a dataset's collection_name, or (service key) any collection"
    )

    @model_validator(mode="after")
    def _one_destination(self) -> _Destination:
        if (self.dataset_id is None) == (self.collection is None):
            raise ValueError("give either dataset_id or collection")
        return self


class AddTextArgs(_Destination):
    name: str = Field(min_length=1, max_length=255, description="a file name, e.g. notes.md")
    text: str = Field(min_length=1, description="the content (Markdown or plain text)")


class AddUrlArgs(_Destination):
    url: str = Field(min_length=1, max_length=2000, description="an http(s) page to fetch and index")
    render: bool = Field(
        False,
        description="load the page in headless Chromium first, for pages whose text is written by"
        " JavaScript (slower; needs the server's ragd[render] and Chromium)",
    )


class HitView(BaseModel):
    citation: str = Field(description="[n]: cite the hit with this label")
    text: str
    name: str
    source: str
    page: int | None = Field(None, description="1-based page for paged formats (PDF), else null")
    relevance: float = Field(description="absolute relevance in [0, 1]")
    collection: str
    file_id: str
    dataset_name: str | None = Field(None, description="the dataset the hit is in (null: a raw collection)")

    @classmethod
    def of(cls, n: int, hit: Hit, dataset_names: Mapping[str, str] | None = None) -> HitView:
        """Hit ``n``; ``dataset_names``: dataset names by collection name."""
        meta = ChunkMeta.parse(hit.meta)
        return cls(
            citation=f"[{n}]",
            text=hit.content,
            name=meta.label,
            source=meta.source or meta.name,
            page=None if meta.page is None else meta.page + 1,
            relevance=round(hit.relevance, 6),
            collection=meta.collection_name,
            file_id=meta.file_id,
            dataset_name=(dataset_names or {}).get(meta.collection_name),
        )


class SearchResult(BaseModel):
    query: str
    hits: list[HitView]
    #: with a filter: how many chunks of what was searched it admitted (0: it matched nothing)
    filter_matched: int | None = None


class DatasetView(BaseModel):
    id: str
    name: str
    description: str
    collection_name: str
    chunks: int


class CollectionView(BaseModel):
    name: str
    chunks: int
    dataset_id: str | None = None


class CollectionsResult(BaseModel):
    datasets: list[DatasetView]
    collections: list[CollectionView] = Field(
        default_factory=list, description="service key only: every collection of the index"
    )

    @classmethod
    def of(cls, reach: Reach) -> CollectionsResult:
        return cls(
            datasets=[
                DatasetView(
                    id=d.id,
                    name=d.name,
                    description=d.description,
                    collection_name=d.collection_name,
                    chunks=n,
                )
                for d, n in reach.datasets
            ],
            collections=[
                CollectionView(name=c.name, chunks=c.chunks, dataset_id=c.dataset_id)
                for c in reach.collections
            ],
        )


class DocumentPage(BaseModel):
    collection: str
    file_id: str
    name: str
    source: str
    total_chars: int
    offset: int
    text: str
    next_offset: int | None = Field(description="pass as offset to read on; null at the end")


class AddResult(BaseModel):
    file_id: str
    name: str
    source: str
    collection: str
    dataset_id: str | None
    status: str = Field(description="indexed, or unchanged when the same content was there already")
    chunks: int

    @classmethod
    def of(cls, added: Added) -> AddResult:
        return cls(
            file_id=added.file_id,
            name=added.name,
            source=added.source,
            collection=added.collection,
            dataset_id=added.dataset_id,
            status=added.status.value,
            chunks=added.chunks,
        )
