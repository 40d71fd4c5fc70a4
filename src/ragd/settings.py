"""Typed settings, read once at start-up and passed down.

Environment variables use the ``RAGD_`` prefix and ``__`` between a group
and its field (``RAGD_EMBEDDING__BATCH_SIZE=16``); a ``.env`` file in the
working directory is read too.  No other module reads ``os.environ``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from ragd.types import ChunkStrategy, SearchMode

PACKAGED_MINILM = "packaged:all-MiniLM-L6-v2"


class StoreSettings(BaseModel):
    backend: Literal["edge", "qdrant"] = Field(
        "edge", description="edge: embedded Qdrant Edge in data_dir; qdrant: a Qdrant server by url"
    )
    url: str | None = Field(None, description="Qdrant server URL (backend=qdrant), or ':memory:'")
    api_key: str | None = Field(None, description="Qdrant server API key")
    collection: str = Field("ingestion_files", description="the one physical collection")
    timeout_s: float = Field(30.0, gt=0, description="Qdrant request timeout")


class EmbeddingSettings(BaseModel):
    provider: Literal["local", "openai", "tei"] = Field(
        "local", description="local: onnxruntime in-process; openai: /v1/embeddings; tei: TEI /embed"
    )
    model: str = Field(
        PACKAGED_MINILM,
        description="local: 'packaged:all-MiniLM-L6-v2', a folder path or a hub id; remote: model name",
    )
    query_prefix: str = Field("", description="prepended to queries (e5: 'query: ')")
    document_prefix: str = Field("", description="prepended to documents (e5: 'passage: ')")
    batch_size: int = Field(16, ge=1, le=512, description="texts per inference / request batch")
    threads: int = Field(0, ge=0, description="onnxruntime intra-op threads (0: all cores)")
    max_tokens: int = Field(0, ge=0, description="override the model window (0: from the model)")
    base_url: str | None = Field(None, description="remote provider base URL")
    api_key: str | None = Field(None, description="remote provider API key")
    dimension: int | None = Field(None, ge=1, description="remote provider vector size (probed if unset)")
    timeout_s: float = Field(30.0, gt=0)
    retries: int = Field(3, ge=0, le=20)
    cache_dir: Path | None = Field(None, description="where converted ONNX graphs are cached")
    languages: tuple[str, ...] = Field(
        ("en",), description="languages the dense model understands (ISO 639-1); others lean on BM25"
    )


class SparseSettings(BaseModel):
    enabled: bool = True
    language: str = Field(
        "auto", description="BM25 stemming/stop-word language: 'auto' (detect per text) or e.g. 'english'"
    )


class ChunkSettings(BaseModel):
    strategy: ChunkStrategy = ChunkStrategy.TOKEN
    token_size: int = Field(400, ge=16, description="token strategy: chunk size in model tokens")
    token_overlap: int = Field(80, ge=0)
    char_size: int = Field(1200, ge=100, description="recursive/sentence strategies: size in characters")
    char_overlap: int = Field(200, ge=0)

    @field_validator("strategy", mode="before")
    @classmethod
    def _parse_strategy(cls, v: str | ChunkStrategy) -> ChunkStrategy:
        return ChunkStrategy.parse(v)  # type: ignore[no-any-return]


class ExtractSettings(BaseModel):
    ocr: Literal["auto", "off"] = Field("auto", description="OCR scanned pages when Tesseract is installed")
    ocr_language: str = "eng"
    max_file_bytes: int = Field(104_857_600, ge=1, description="files over this are refused")
    timeout_s: float = Field(120.0, gt=0)


class RetrievalSettings(BaseModel):
    mode: SearchMode = SearchMode.HYBRID
    k: int = Field(5, ge=1, le=100)
    rrf_k: int = Field(2, ge=1, description="RRF k (2 matches Qdrant's server default)")
    prefetch_multiplier: int = Field(4, ge=1, description="each path fetches max(k*this, prefetch_min)")
    prefetch_min: int = Field(40, ge=1)
    foreign_dense_weight: float = Field(
        0.25, ge=0, le=1, description="dense weight in RRF when the query's language is not the model's"
    )

    @field_validator("mode", mode="before")
    @classmethod
    def _parse_mode(cls, v: str | SearchMode) -> SearchMode:
        return SearchMode.parse(v)  # type: ignore[no-any-return]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="RAGD_", env_nested_delimiter="__", env_file=".env", extra="ignore"
    )

    data_dir: Path = Field(Path(".ragd"), description="embedded index, caches and metadata")
    default_collection: str = Field("default", description="logical collection when none is given")
    ingest_concurrency: int = Field(2, ge=1, le=64, description="files extracted in parallel")
    log_level: str = "INFO"
    store: StoreSettings = StoreSettings()
    embedding: EmbeddingSettings = EmbeddingSettings()
    sparse: SparseSettings = SparseSettings()
    chunking: ChunkSettings = ChunkSettings()
    extract: ExtractSettings = ExtractSettings()
    retrieval: RetrievalSettings = RetrievalSettings()

    @property
    def model_cache_dir(self) -> Path:
        return self.embedding.cache_dir or self.data_dir / "models"
