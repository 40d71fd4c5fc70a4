"""Typed settings, read once at start-up and passed down.

Environment variables use the ``RAGD_`` prefix and ``__`` between a group
and its field (``RAGD_EMBEDDING__BATCH_SIZE=16``); a ``.env`` file in the
working directory is read too.  No other module reads ``os.environ``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from ragd.types import ChunkStrategy, FusionMethod, PromptStyle, SearchMode

PACKAGED_MINILM = "packaged:all-MiniLM-L6-v2"
#: the vision engines' prompt profiles (ragd.vision.profiles)
VisionProfileName = Literal["diagram", "diagram-topology", "general", "figure", "ocr"]


def _comma_list(value: object) -> object:
    """Accept ``a,b`` (or a JSON list) for tuple settings read from the environment."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            return json.loads(text)
        return tuple(part.strip() for part in text.split(",") if part.strip())
    return value


class StoreSettings(BaseModel):
    backend: Literal["edge", "qdrant"] = Field(
        "edge", description="edge: embedded Qdrant Edge in data_dir; qdrant: a Qdrant server by url"
    )
    url: str | None = Field(None, description="Qdrant server URL (backend=qdrant), or ':memory:'")
    api_key: str | None = Field(None, description="Qdrant server API key")
    collection: str = Field("ingestion_files", description="the one physical collection")
    min_free_mb: int = Field(
        256,
        ge=0,
        description="embedded store: refuse writes (507 STORAGE_FULL) and start-up below this much free"
        " disk, before the engine's memory-mapped files run out of room; 0: no check",
    )
    timeout_s: float = Field(30.0, gt=0, description="Qdrant request timeout")
    payload_on_disk: bool = Field(
        False,
        description="keep chunk payloads on disk (mmap) instead of RAM: less memory, slower result"
        " fetching (~2 ms per search at 100k chunks); applies to new collections, and to an existing"
        " embedded index after its next optimize",
    )
    dense_on_disk: bool = Field(
        False,
        description="keep the float32 dense vectors on disk (mmap): searches scan the int8 copy in RAM"
        " and read only the candidates they rescore; for indexes of millions of chunks (1M: resident"
        " memory 3.1 -> see docs/benchmarks.md); applies to new collections",
    )
    dense_int8: bool = Field(
        True,
        description="search an int8 copy of the dense vectors (in RAM, a quarter of their size) and"
        " rescore the best candidates with the float32 vectors: faster scans, exact scores; applies"
        " to new collections, and to an existing embedded index after its next optimize",
    )
    bulk_segment_chunks: int = Field(
        200_000,
        ge=0,
        description="embedded store: a bulk load (ragd ingest, a folder sync, a restore, an evaluation's"
        " corpus) builds the indexes of every this many chunks written, so the unindexed write segment"
        " and the memory of building it stay bounded (a 1M-chunk build: docs/benchmarks.md); 0: only at"
        " the end",
    )
    sparse_groups: int = Field(
        0,
        ge=0,
        le=1024,
        description="0: one BM25 posting list per term; G > 0: one per term and group of collections"
        " (crc32(name) % G; term ids of their own per group, in the one text-sparse vector), so a search"
        " of one collection walks only its group's postings: for indexes of millions of chunks in many"
        " collections (docs/payload.md#sparse-groups); fixed when the index is created (a change is"
        " INDEX_MISMATCH: re-index)",
    )


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
    max_batch_tokens: int = Field(
        2048,
        ge=0,
        description="local: padded tokens per batch at most (long texts go 8 to a batch, not 16): peak"
        " memory of a SciFact ingest 965 -> 739 MB at the same speed; 0: no limit",
    )
    threads: int = Field(0, ge=0, description="local: CPU threads for the model (0: all cores)")
    lanes: int = Field(
        0,
        ge=0,
        le=64,
        description="local: document batches run at once, each on threads/lanes threads (0: one per thread,"
        " at most 4); one lane per core never waits on a core that other ingest work took",
    )
    max_tokens: int = Field(
        0,
        ge=0,
        description="override the model window (0: from the model; remote: TEI's /info, else 512)",
    )
    query_batch: int = Field(
        32, ge=1, le=256, description="local: concurrent queries embedded in one model call, at most"
    )
    query_cache: int = Field(
        1024, ge=0, description="local: vectors of the last this-many query texts kept (0: none)"
    )
    tokenizer: Path | None = Field(
        None, description="remote: the model's tokenizer.json, so chunk sizes are exact (unset: estimated)"
    )
    base_url: str | None = Field(None, description="remote provider base URL")
    api_key: str | None = Field(None, description="remote provider API key")
    dimension: int | None = Field(None, ge=1, description="remote provider vector size (probed if unset)")
    timeout_s: float = Field(30.0, gt=0)
    retries: int = Field(3, ge=0, le=20)
    cache_dir: Path | None = Field(None, description="where converted ONNX graphs are cached")
    precision: Literal["fp32", "int8"] = Field(
        "fp32",
        description="local: int8 runs the model's dynamic int8 quantisation (made once, cached beside the"
        " graph): 1.56x the ingest chunks/s of fp32 here, hybrid nDCG@10 within 0.0032 (docs/benchmarks.md,"
        " int8); fixed when the index is created (a change is INDEX_MISMATCH: re-index, e.g. export and"
        " import --reembed)",
    )
    languages: Annotated[tuple[str, ...], NoDecode] = Field(
        ("en",), description="languages the dense model understands (ISO 639-1); others lean on BM25"
    )

    @field_validator("languages", mode="before")
    @classmethod
    def _languages(cls, v: object) -> object:
        return _comma_list(v)

    @model_validator(mode="after")
    def _precision_is_local(self) -> EmbeddingSettings:
        if self.precision != "fp32" and self.provider != "local":
            raise ValueError(
                f"precision={self.precision!r} is for the local model; a {self.provider} endpoint's"
                " precision is its server's (set precision to fp32)"
            )
        return self


class SparseSettings(BaseModel):
    enabled: bool = True
    avg_len: float = Field(
        100.0,
        gt=0,
        description="BM25 average document length in terms (stop words removed); part of the index",
    )
    language: str = Field(
        "auto", description="BM25 stemming/stop-word language: 'auto' (detect per text) or e.g. 'english'"
    )


class ChunkSettings(BaseModel):
    strategy: ChunkStrategy = ChunkStrategy.TOKEN
    token_size: int = Field(400, ge=16, description="token strategy: chunk size in model tokens")
    token_overlap: int = Field(80, ge=0)
    char_size: int = Field(1200, ge=100, description="recursive/sentence strategies: size in characters")
    char_overlap: int = Field(200, ge=0)
    max_chunks: int = Field(
        20_000, ge=1, description="files that would make more chunks than this are refused (413)"
    )

    @field_validator("strategy", mode="before")
    @classmethod
    def _parse_strategy(cls, v: str | ChunkStrategy) -> ChunkStrategy:
        return ChunkStrategy.parse(v)  # type: ignore[no-any-return]


class ExtractSettings(BaseModel):
    ocr: Literal["auto", "off"] = Field("auto", description="OCR scanned pages when Tesseract is installed")
    ocr_language: str = "eng"
    max_file_bytes: int = Field(104_857_600, ge=1, description="files over this are refused")
    max_unpacked_bytes: int = Field(
        536_870_912,
        ge=1,
        description="zip-based files (DOCX, XLSX, PPTX, ODF, EPUB) whose parts unpack to more are refused",
    )
    max_chars: int = Field(
        20_000_000, ge=1, description="files whose extracted text is longer (characters) are refused"
    )
    timeout_s: float = Field(120.0, gt=0)
    isolate: bool = Field(
        True, description="extract in child processes, so a crash or memory blow-up costs only that file"
    )
    memory_mb: int = Field(
        1536, ge=256, description="address-space limit of each extraction process (with isolate)"
    )
    engine: Literal["auto", "kreuzberg", "vision-llm", "hybrid-diagram"] = Field(
        "auto",
        description="the ingestion service's EXTRACTION_ENGINE: auto reads every file with its text "
        "reader and, when RAGD_VISION__API_BASE_URL is set, routes diagram .docx files to the "
        "router's diagram engine and describes the pictures of PDFs and slides (docs/formats.md#vision-"
        "engines); kreuzberg: the text readers only; vision-llm or hybrid-diagram: every PDF, Office "
        "file and image through that engine (needs the endpoint)",
    )
    router_default: Literal["kreuzberg", "vision-llm"] = Field(
        "kreuzberg",
        description="EXTRACTION_ROUTER_DEFAULT: with engine=auto, the engine of the PDF, Office and "
        "image files the router does not send to the diagram engine (kreuzberg: their text readers)",
    )
    router_diagram_engine: Literal["hybrid-diagram", "vision-llm"] = Field(
        "hybrid-diagram",
        description="EXTRACTION_ROUTER_DIAGRAM_ENGINE: with engine=auto, the engine of a .docx whose "
        "drawing shapes or large body pictures say it is a diagram",
    )
    router_diagram_profile: VisionProfileName = Field(
        "diagram",
        description="EXTRACTION_ROUTER_DIAGRAM_PROFILE: the prompt profile of the diagram route when its "
        "engine is vision-llm (hybrid-diagram picks diagram-topology or figure itself)",
    )
    router_min_textboxes: int = Field(
        20,
        ge=0,
        description="EXTRACTION_ROUTER_MIN_TEXTBOXES: text boxes (or drawing shapes of any kind) a .docx "
        "needs before its drawing-to-body word ratio is weighed",
    )
    router_min_drawing_ratio: float = Field(
        2.0,
        ge=0,
        description="EXTRACTION_ROUTER_DRAWING_RATIO: words in drawings per body word (drawing / (body "
        "+ 1)) from which a .docx is a vector diagram",
    )
    router_min_image_area: float = Field(
        0.05,
        ge=0,
        le=1,
        description="EXTRACTION_ROUTER_MIN_IMAGE_EMU as a share of the page: the largest body picture "
        "of a .docx covers at least this much of its page (less margins) for the raster-figure signal "
        "(the seed's 1.79 square inches is about 3 % of a Letter or A4 page)",
    )
    router_max_words_per_image: int = Field(
        0,
        ge=0,
        description="EXTRACTION_ROUTER_MIN_IMAGE_WORD_RATIO turned round: a .docx with more body words "
        "than this per large picture is prose with an illustration, not a figure; 0: no such guard",
    )
    office_converter: Literal["auto", "libreoffice", "gotenberg", "off"] = Field(
        "auto",
        description="how Office files become PDF pages for the vision engines and page images: "
        "libreoffice (soffice on PATH), gotenberg (gotenberg_url), off; auto: LibreOffice when "
        "installed, else Gotenberg when gotenberg_url is set, else none",
    )
    gotenberg_url: str = Field(
        "",
        description="GOTENBERG_URL: a Gotenberg service that converts Office files to PDF (POST "
        "{url}/forms/libreoffice/convert), e.g. http://gotenberg:3000",
    )
    page_boxes: bool = Field(
        True,
        description="record where each chunk is drawn on its page (meta.boxes): PDF text layers through "
        "PDFium, scans through the OCR's word boxes; about 5-15 ms a text page",
    )
    office_pages: bool = Field(
        False,
        description="give Office files (DOCX, ODT, RTF, DOC, PPTX, ...) pages and word boxes by converting "
        "each to PDF at ingest with office_converter (about a second a file); off: their chunks have no "
        "page (a deck's its slide) and no marked passage (docs/formats.md#page-images)",
    )

    @field_validator("gotenberg_url")
    @classmethod
    def _gotenberg_scheme(cls, v: str) -> str:
        return _http_url(v, "gotenberg_url")


def _http_url(value: str, name: str) -> str:
    """An http(s) URL, or empty (unset); anything else is refused at start-up."""
    value = value.strip()
    if value and not value.startswith(("http://", "https://")):
        raise ValueError(f"{name} must start with http:// or https:// (got {value[:80]!r})")
    return value.rstrip("/")


class VisionSettings(BaseModel):
    """The multimodal model of the vision engines (docs/formats.md#vision-engines); an empty
    api_base_url switches them off and changes nothing else."""

    api_base_url: str = Field(
        "",
        description="the ingestion service's VISION_LLM_API_BASE_URL: an OpenAI-compatible endpoint "
        "that takes images (POST {url}/chat/completions), e.g. http://vllm:8000/v1; empty: no vision "
        "engines, files are read as without it",
    )
    model: str = Field("", description="VISION_LLM_MODEL: the model name sent with every call")
    api_key: SecretStr | None = Field(None, description="VISION_LLM_API_KEY: sent as a bearer token")
    profile: VisionProfileName = Field(
        "general",
        description="VISION_LLM_PROFILE: the vision-llm engine's prompt profile when none is asked for "
        "(general: the page as Markdown; diagram: a Mermaid graph and a summary; ocr: the words as "
        "they stand)",
    )
    dpi: int = Field(150, ge=36, le=600, description="VISION_LLM_DPI: resolution of the page images sent")
    max_pages: int = Field(
        20,
        ge=1,
        le=1000,
        description="VISION_LLM_MAX_PAGES: pages of one file sent to the model; a longer file is read "
        "to this page and carries a warning (extraction_warnings)",
    )
    max_tokens: int = Field(
        4096,
        ge=16,
        description="VISION_LLM_MAX_TOKENS (16384 there, for all pages in one call): the token cap of "
        "the answer about one page or picture; an answer cut at it fails the file (VISION_OUTPUT_TOO_LONG) "
        "rather than being indexed cut",
    )
    language_hint: str = Field(
        "",
        description="VISION_LLM_LANGUAGE_HINT: the documents' language named in the prompts (e.g. "
        "Danish), so the model keeps their words instead of translating; empty: their own language",
    )
    timeout_s: float = Field(
        180.0,
        gt=0,
        description="VISION_LLM_READ_TIMEOUT: seconds one call may take (within the file's "
        "RAGD_EXTRACT__TIMEOUT_S)",
    )
    retries: int = Field(2, ge=0, le=10, description="calls answered 429 or 503 are retried this often")
    calls_per_minute: int = Field(
        0, ge=0, description="calls started per minute by each extraction process; 0: no limit"
    )
    max_images: int = Field(
        20,
        ge=0,
        le=1000,
        description="pictures of one PDF or slide deck described (the first ones over figure_min_area, "
        "in page order); 0: none",
    )
    figure_min_area: float = Field(
        0.05,
        ge=0,
        le=1,
        description="share of its page a picture must cover to be described (smaller ones are icons, "
        "logos, rules)",
    )
    fail_open: bool = Field(
        False,
        description="when the endpoint fails, read a file the router sent to a vision engine with its "
        "text reader instead (with a warning on its chunks) rather than failing it "
        "(VISION_UNAVAILABLE); pictures of a text document always fail open",
    )
    cache_dir: Path | None = Field(
        None, description="where answers are kept by image hash, model and prompt (None: <data_dir>/vision)"
    )

    @field_validator("api_base_url")
    @classmethod
    def _endpoint_scheme(cls, v: str) -> str:
        return _http_url(v, "api_base_url")

    @property
    def enabled(self) -> bool:
        return bool(self.api_base_url)


class RetrievalSettings(BaseModel):
    mode: SearchMode = SearchMode.HYBRID
    k: int = Field(5, ge=1, le=100)
    rrf_k: int = Field(2, ge=1, description="RRF k (2 matches Qdrant's server default)")
    prefetch_multiplier: int = Field(4, ge=1, description="each path fetches max(k*this, prefetch_min)")
    prefetch_min: int = Field(
        100,
        ge=1,
        description="the least candidates each path fetches; deeper lists fuse better (SciFact train "
        "nDCG@10 0.7376 at 40, 0.7405 at 100), each extra candidate costs a little time",
    )
    fusion: FusionMethod = Field(
        FusionMethod.CONVEX,
        description="hybrid: convex (each list's scores over its best, weighted mean; SciFact train "
        "0.7405 nDCG@10) or rrf (weighted reciprocal-rank fusion in the engine; 0.7250)",
    )
    foreign_dense_weight: float = Field(
        0.25, ge=0, le=1, description="dense weight factor when the query's language is not the model's"
    )
    vector_weight: float = Field(
        0.6,
        ge=0,
        le=1,
        description="hybrid: the dense list's share of the fusion, BM25 gets the rest",
    )
    min_score: float = Field(
        0.0,
        ge=0,
        le=1,
        description="POST /search and dataset search drop hits below this relevance (min_score); 0: none",
    )

    @field_validator("mode", mode="before")
    @classmethod
    def _parse_mode(cls, v: str | SearchMode) -> SearchMode:
        return SearchMode.parse(v)  # type: ignore[no-any-return]

    @field_validator("fusion", mode="before")
    @classmethod
    def _parse_fusion(cls, v: str | FusionMethod) -> FusionMethod:
        return FusionMethod.parse(v)  # type: ignore[no-any-return]


class RerankSettings(BaseModel):
    provider: Literal["none", "remote", "local"] = Field(
        "none", description="none; remote: a /v1/rerank endpoint; local: an ONNX cross-encoder folder"
    )
    api: Literal["cohere", "tei"] = Field(
        "cohere", description="remote wire format: cohere (POST /v1/rerank) or tei (POST /rerank)"
    )
    base_url: str | None = Field(None, description="remote reranker base URL")
    api_key: SecretStr | None = Field(None, description="remote reranker API key")
    model: str = Field("", description="remote: model name sent in the request")
    path: Path | None = Field(None, description="local: folder with model.onnx and tokenizer.json")
    multiplier: int = Field(3, ge=1, le=20, description="candidates fetched = k x multiplier, then reranked")
    max_candidates: int = Field(100, ge=1, le=1000, description="upper bound on candidates sent to rerank")
    max_tokens: int = Field(512, ge=16, description="local: query + passage window in model tokens")
    batch_size: int = Field(16, ge=1, le=256)
    threads: int = Field(0, ge=0, description="local: onnxruntime intra-op threads (0: all cores)")
    timeout_s: float = Field(10.0, gt=0)
    retries: int = Field(1, ge=0, le=10)


class LlmSettings(BaseModel):
    base_url: str | None = Field(
        None, description="OpenAI-compatible endpoint (Ollama, vLLM, LiteLLM, OpenAI), e.g. .../v1"
    )
    api_key: SecretStr | None = Field(None, description="upstream API key")
    model: str = Field("", description="model used for query generation and agentic retrieval")
    timeout_s: float = Field(60.0, gt=0)
    retries: int = Field(2, ge=0, le=10)


class QueryGenerationSettings(BaseModel):
    enabled: bool = Field(True, description="generate search queries from the conversation (needs llm)")
    prompt_template: str | None = Field(
        None, description="overrides the built-in prompt; {current_date} and {chat_history} are filled in"
    )
    history_messages: int = Field(4, ge=1, le=50, description="last messages shown to the model")
    max_queries: int = Field(3, ge=1, le=10)


class AgentSettings(BaseModel):
    enabled: bool = Field(
        False,
        description="agentic retrieval for /search and the chat proxy: the LLM writes the queries, grades"
        " previews of the results and rewrites off-topic ones (needs llm)",
    )
    max_iterations: int = Field(3, ge=1, le=10, description="search rounds at most, the first one included")
    timeout_s: float = Field(
        20.0, gt=0, description="wall-clock bound on one agentic search; past it, what was found is returned"
    )
    token_budget: int = Field(
        6000, ge=1, description="LLM tokens (prompt + completion) one agentic search may spend"
    )
    preview_chars: int = Field(
        300, ge=20, le=4000, description="characters of each result the model sees when it grades them"
    )
    max_queries: int = Field(2, ge=1, le=5, description="queries the model may write per round")
    system_prompt: str | None = Field(
        None,
        max_length=8000,
        description="the retrieval agent's AGENT_SYSTEM_PROMPT: replaces the system prompt of the step"
        " that writes the queries ({max_queries} and {current_date} are filled in); unset: the built-in",
    )
    fetch_k: int | None = Field(
        None,
        ge=1,
        le=100,
        description="the retrieval agent's AGENT_FETCH_K (its default 20): results each search round"
        " fetches (at least the k returned, which are the best of all rounds); unset: the request's k",
    )
    preview_k: int | None = Field(
        None,
        ge=1,
        le=100,
        description="the retrieval agent's AGENT_PREVIEW_K (its default 5): results the model sees (and"
        " grades) per round, best first; the others are dropped when it marks any relevant; unset: all",
    )
    history_turns: int = Field(
        6,
        ge=1,
        le=50,
        description="the retrieval agent's AGENT_CONVERSATION_HISTORY_MESSAGES (its default 4): last"
        " messages of the conversation the model sees when it writes the queries",
    )


class ChatSettings(BaseModel):
    enabled: bool = Field(
        True, description="serve POST /v1/chat/completions and GET /v1/models (when llm.base_url is set)"
    )
    models: dict[str, str] = Field(
        default_factory=dict,
        description='JSON map of model aliases to rag/COLLECTION[/MODEL] names, e.g. {"docs": "rag/kb"}',
    )
    default_collection: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9_-]{1,128}$",
        description="retrieval over this collection for every model that is not rag/... or an alias"
        " (ragd proxy sets it to the folder's); unset: other models are passed to the upstream",
    )
    default_top_k: int = Field(5, ge=0, le=50, description="sources retrieved per answer (rag_top_k)")
    min_score: float = Field(
        0.4,
        ge=0,
        le=1,
        description="sources below this relevance are not given to the model (rag_min_score); 0: none",
    )
    near_duplicates: float | None = Field(
        0.95,
        ge=0,
        le=1,
        description="a source whose dense cosine to a better one is at least this is left out; null: keep",
    )
    context_token_budget: int = Field(
        3000, ge=1, description="tokens of source text in the context; sources past it are left out whole"
    )
    tool_token_budget: int = Field(
        6000, ge=1, description="tokens of one tool result (a long document is cut there)"
    )
    diversity: float = Field(
        0.0,
        ge=0,
        le=1,
        description="ragproxy's MMR default: 0 keeps the ranking, higher favours variety among the sources"
        " (a request's rag_diversity overrides it)",
    )
    max_per_file: int | None = Field(
        None,
        ge=1,
        le=50,
        description="at most this many sources of one file or URL (ragproxy's one per URL: 1); unset: no"
        " cap (a request's rag_max_per_file overrides it, 0: no cap)",
    )
    source_max_chars: int | None = Field(
        None,
        ge=1,
        le=1_000_000,
        description="ragproxy's character cap per source: each source's text given to the model is cut"
        " there; unset: no cap (a request's rag_source_max_chars overrides it, 0: no cap)",
    )
    prompt_style: PromptStyle = Field(
        PromptStyle.DOCUMENTS,
        description="how sources are given to the model: 'documents' (ragd's <document> tags) or"
        " 'sources-list' (ragproxy's numbered list: title and URL, then the text)",
    )
    tools_enabled: bool = Field(
        True, description="offer read_full_document and search_documents (rag_enable_tools=false: off)"
    )
    max_tool_iterations: int = Field(3, ge=0, le=10, description="tool rounds before the final answer")
    timeout_s: float = Field(120.0, gt=0, description="per upstream request (and per streamed chunk)")
    retries: int = Field(2, ge=0, le=10, description="upstream retries (connect errors; 429/5xx too for rag)")

    @field_validator("models")
    @classmethod
    def _rag_targets(cls, v: dict[str, str]) -> dict[str, str]:
        for alias, target in v.items():
            if not target.startswith("rag/") or len(target) <= len("rag/"):
                raise ValueError(f"model alias {alias!r} must map to 'rag/<collection>[/<model>]'")
        return v


class S3Settings(BaseModel):
    endpoint_url: str | None = Field(None, description="S3-compatible endpoint (MinIO); unset: AWS")
    region: str = "us-east-1"
    access_key_id: str | None = None
    secret_access_key: SecretStr | None = None
    allowed_buckets: Annotated[tuple[str, ...], NoDecode] = Field(
        (),
        description="comma list; empty: any bucket. The outer bound of every S3 grant: a tenant's S3 source"
        " must also lie inside a bucket/prefix granted to its tenant (docs/knowledge-bases.md#source-grants)",
    )
    addressing_style: Literal["auto", "path", "virtual"] = "path"
    timeout_s: float = Field(60.0, gt=0)

    @field_validator("allowed_buckets", mode="before")
    @classmethod
    def _buckets(cls, v: object) -> object:
        return _comma_list(v)


class ServerSettings(BaseModel):
    host: str = Field("127.0.0.1", description="bind address")
    port: int = Field(8000, ge=0, le=65535)
    api_key: SecretStr | None = Field(
        None, description="bearer key, >= 32 characters; unset: open, allowed on loopback only"
    )
    metrics_enabled: bool = Field(True, description="serve GET /metrics (bearer-protected)")
    ui_enabled: bool = Field(True, description="serve the web UI at /ui (and redirect / there); docs/ui.md")
    apis: Annotated[tuple[Literal["ingestion", "retrieval"], ...], NoDecode] = Field(
        ("ingestion", "retrieval"),
        min_length=1,
        description="comma list of the API halves this process serves: ingestion (/api/v1/ingest, extract,"
        " documents, uploads, sources), retrieval (/search, dataset search, chat, MCP, model endpoints);"
        " the other half's routes answer 404 (docs/deployment.md#split-roles)",
    )
    ui_session_ttl_s: float = Field(
        43_200.0,
        ge=1,
        le=31_536_000,
        description="a web UI sign-in lasts this long (from sign-in, not from its last use); docs/ui.md",
    )
    api_docs_enabled: bool = Field(
        False,
        description="serve FastAPI's /docs and /redoc pages (they load script from cdn.jsdelivr.net, outside"
        " the UI's CSP); /openapi.json is served either way",
    )
    inspection_enabled: bool = Field(False, description="serve GET /api/v1/documents/{id}/chunks")
    debug: bool = Field(False, description="put exception text in ingest error bodies")
    search_timeout_s: float = Field(60.0, gt=0, description="upper bound on one POST /search")
    max_json_bytes: int = Field(
        16_777_216, ge=1024, description="JSON request bodies over this are refused (413), unread"
    )
    max_embed_inputs: int = Field(
        2048,
        ge=1,
        le=100_000,
        description="model endpoints: texts in one /v1/embeddings or /embed request, documents in one"
        " /v1/rerank (413 INPUT_TOO_LARGE past it; OpenAI's limit; rerank also at most 1,000)",
    )
    max_input_chars: int = Field(
        100_000,
        ge=1,
        description="model endpoints: characters in one input (413 past it); a shorter text past the"
        " model's window is cut to it before tokenizing, as the index does",
    )
    max_total_chars: int = Field(
        1_000_000,
        ge=1,
        description="model endpoints: characters in all of one request's inputs (413 past it; about"
        " OpenAI's 300,000 tokens a request)",
    )
    model_slots: int = Field(
        1,
        ge=1,
        le=64,
        description="model endpoints: slices of a request's inputs embedded at once across every key"
        " (each slice one batch); waiting slices take turns key by key, and a search's query never"
        " waits behind them",
    )
    cors_origins: Annotated[tuple[str, ...], NoDecode] = Field(
        (),
        description="comma list of browser origins allowed to call ragd across origins ('*': any); they may"
        " also send state-changing requests (docs/security.md)",
    )
    allowed_hosts: Annotated[tuple[str, ...], NoDecode] = Field(
        (),
        description="comma list of host names a service without an API key answers besides loopback (and its"
        " bind address); '*': any, only behind a proxy that checks Host (docs/service.md)",
    )
    header_timeout_s: float = Field(
        10.0,
        gt=0,
        le=3600,
        description="a request's headers must arrive within this, else the connection is closed",
    )
    body_timeout_s: float = Field(
        30.0,
        gt=0,
        le=3600,
        description="a request body with no new piece for this long is a 408 REQUEST_TIMEOUT",
    )
    max_incomplete_requests: int = Field(
        100,
        ge=1,
        description="connections still sending their headers; one more closes the oldest of them",
    )
    max_connections: int = Field(
        1000, ge=1, description="open connections; beyond this a request is answered 503 (uvicorn's limit)"
    )

    @field_validator("api_key")
    @classmethod
    def _strong_key(cls, v: SecretStr | None) -> SecretStr | None:
        if v is not None and len(v.get_secret_value()) < 32:
            raise ValueError(
                "the API key must be at least 32 characters (generate one: openssl rand -hex 32)"
            )
        return v

    @field_validator("cors_origins", "allowed_hosts", "apis", mode="before")
    @classmethod
    def _origins(cls, v: object) -> object:
        return _comma_list(v)


class LogSettings(BaseModel):
    format: Literal["text", "json"] = Field("text", description="text lines or JSON lines")
    level: str = Field("INFO", description="root level")
    levels: str = Field("", description="per-namespace levels, e.g. 'ragd.api=DEBUG,uvicorn.access=WARNING'")


class CatalogSettings(BaseModel):
    url: str | None = Field(
        None,
        description="SQLAlchemy URL of the metadata database (datasets, files, sources, jobs):"
        " None = SQLite file <data_dir>/ragd.db; PostgreSQL: postgresql+asyncpg://user:pass@host/db",
    )
    files_dir: Path | None = Field(
        None,
        description="where uploaded files are kept for re-indexing (None: <data_dir>/files); replicas"
        " sharing a PostgreSQL catalog need a shared folder here",
    )
    max_upload_files: int = Field(100, ge=1, le=10_000, description="files in one upload request")
    max_archive_bytes: int = Field(
        4 << 30,
        ge=1024,
        description="a dataset archive to import (POST /api/v1/datasets/import): its size, and what its"
        " members unpack to in all (FILE_TOO_LARGE over it)",
    )
    max_archive_members: int = Field(
        1_000_000, ge=2, description="members of a dataset archive to import (ARCHIVE_INVALID over it)"
    )
    folder_roots: Annotated[tuple[Path, ...], NoDecode] = Field(
        (),
        description="comma list of folders that bound every folder grant and tenant folder source (a"
        " tenant's folder must also lie inside a grant of its tenant: docs/knowledge-bases.md#source-grants;"
        " the service key's own sources are not bound); empty: no outer bound, grants alone decide",
    )

    @field_validator("folder_roots", mode="before")
    @classmethod
    def _roots(cls, v: object) -> object:
        return _comma_list(v)


class TenantSettings(BaseModel):
    """What a new tenant is created with (POST /api/v1/tenants; docs/knowledge-bases.md,
    "Standard datasets")."""

    datasets: Annotated[tuple[str, ...], NoDecode] = Field(
        ("knowledge", "products", "support", "marketing"),
        description="the tenant template's default: comma list of the datasets every new tenant is"
        " created with (names; [] for none), until the service key sets a template of its own"
        " (PUT /api/v1/tenants/template, names with their settings)",
    )

    @field_validator("datasets", mode="before")
    @classmethod
    def _names(cls, v: object) -> object:
        return _comma_list(v)

    @field_validator("datasets")
    @classmethod
    def _unique(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for name in v:
            if len(name) > 200 or any(ord(c) < 32 for c in name):
                raise ValueError(f"a dataset name is 1-200 printable characters: {name[:80]!r}")
        if len(set(v)) != len(v):
            raise ValueError("the standard datasets' names must differ")
        return v


class AuditSettings(BaseModel):
    """The audit trail (docs/security.md, "Audit trail"): every administrative action is recorded;
    401s are recorded only as bursts from one client address."""

    failed_auth_burst: int = Field(
        10,
        ge=1,
        description="401s (a wrong, revoked or missing key) from one client address within"
        " failed_auth_window_s that make one auth.failed_burst record",
    )
    failed_auth_window_s: float = Field(
        60.0, gt=0, le=86_400, description="the window of failed_auth_burst; at most one record per window"
    )


class EvaluationSettings(BaseModel):
    """Datasets' evaluation sets and eval runs (docs/knowledge-bases.md, "Evaluation sets")."""

    max_queries: int = Field(
        2000, ge=1, le=100_000, description="labelled queries one dataset's evaluation set may hold"
    )
    max_run_queries: int = Field(
        200,
        ge=1,
        le=10_000,
        description="queries one POST /api/v1/datasets/{id}/eval may search (a baseline searches each "
        "again); a larger set is run in slices (offset/limit), as ragd eval --dataset does",
    )


class MigrationSettings(BaseModel):
    """Dataset migrations to another model or chunking (docs/knowledge-bases.md, "Migrations")."""

    retain_s: float = Field(
        86_400.0,
        ge=0,
        description="how long the version a dataset stopped serving (after a switch or a rollback) is "
        "kept for an instant rollback before its chunks are removed",
    )
    max_regression: float = Field(
        0.02,
        ge=0,
        le=1,
        description="the largest nDCG@10 drop on the dataset's evaluation set (old minus new) a "
        "migration switches with on its own; a larger one waits for a switch with override",
    )
    settle_s: float = Field(
        1.0,
        ge=0,
        le=60,
        description="how long a migration waits after hiding its new version before writing into it "
        "(every replica must read the hidden version first: above 0.5 s, their cache)",
    )


class BackupSettings(BaseModel):
    """Backups taken by a running server (``POST /api/v1/system/backup``, ``ragd backup`` while
    ``ragd serve`` holds the index): docs/operations.md, "Backup and restore"."""

    dir: Path | None = Field(
        None,
        description="where the server writes backups, each in a folder of its own (None: <data_dir>/backups)",
    )
    interval_s: float = Field(
        0.0,
        ge=0,
        description="`ragd serve` takes a backup (a folder scheduled-<UTC time> in dir) every this many"
        " seconds; 0: no scheduled backups",
    )
    keep: int = Field(7, ge=1, le=10_000, description="scheduled backups kept; older ones are deleted")
    pg_bin_dir: Path | None = Field(
        None,
        description="folder of the pg_dump and pg_restore that back up and restore a PostgreSQL catalog"
        " (None: from PATH); their version must be at least the server's, e.g. /usr/lib/postgresql/16/bin",
    )


class WorkerSettings(BaseModel):
    enabled: bool = Field(True, description="run the job worker inside `ragd serve`")
    concurrency: int = Field(2, ge=1, le=64, description="jobs run at the same time by one process")
    lease_s: float = Field(
        30.0, ge=1, description="a job whose worker stops renewing for this long is retried"
    )
    poll_s: float = Field(0.5, gt=0, description="how often an idle worker looks for jobs")
    max_attempts: int = Field(3, ge=1, le=100, description="attempts before a job is failed for good")
    backoff_s: float = Field(5.0, ge=0, description="first retry delay; doubles on every attempt")
    watch: bool = Field(True, description="watch folder sources for changes (one replica is enough)")
    debounce_ms: int = Field(1000, ge=10, description="a burst of folder edits within this makes one sync")
    schedule: bool = Field(
        True,
        description="run sources' scheduled syncs (safe on every replica: each due run is claimed once)",
    )
    schedule_poll_s: float = Field(5.0, gt=0, description="how often the scheduler looks for due sources")
    schedule_jitter: float = Field(
        0.05, ge=0, le=0.5, description="a run fires up to this share of its period after its slot"
    )
    schedule_jitter_max_s: float = Field(300.0, ge=0, description="the jitter's upper bound in seconds")
    schedule_min_interval_s: float = Field(
        60.0, ge=0.1, description="the shortest interval a source schedule may ask for"
    )


class OtelSettings(BaseModel):
    enabled: bool = Field(
        False, description="export a trace span per pipeline stage over OTLP/HTTP (needs ragd[otel])"
    )
    endpoint: str | None = Field(
        None,
        description="OTLP/HTTP traces URL, e.g. http://collector:4318/v1/traces (unset: the "
        "OTEL_EXPORTER_OTLP_* environment, else localhost)",
    )
    service_name: str = Field("ragd", description="the service.name resource attribute")
    sample_ratio: float = Field(1.0, ge=0, le=1, description="share of searches traced")


class CrawlSettings(BaseModel):
    delay_s: float = Field(0.5, ge=0, description="politeness: time between two requests to a site")
    max_pages: int = Field(500, ge=1, description="default page limit of a crawl")
    max_depth: int = Field(3, ge=0, description="default link depth of a crawl")
    user_agent: str = Field("ragd-crawler", description="sent to sites and matched in robots.txt")
    allow_private: bool = Field(
        False,
        description="let tenant keys crawl loopback and private-network addresses (the service key always"
        " may); off by default so a tenant cannot reach the server's own network",
    )
    timeout_s: float = Field(20.0, gt=0)
    chromium_path: str | None = Field(
        None,
        description="the Chromium that renders sources with render: true (needs ragd[render]); unset:"
        " chromium or chromium-browser on PATH",
    )
    render_timeout_s: float = Field(
        30.0, gt=0, le=600, description="a rendered page that has not settled by then fails (RENDER_TIMEOUT)"
    )


class PagesSettings(BaseModel):
    """Page images of paged files (GET /api/v1/datasets/{id}/files/{file}/pages/{n}), the passage
    of a chunk marked on them (docs/knowledge-bases.md#page-images)."""

    dpi: int = Field(110, ge=36, le=600, description="the resolution a page is drawn at unless ?dpi= asks")
    max_dpi: int = Field(200, ge=36, le=600, description="the highest ?dpi= a request may ask for")
    max_pixels: int = Field(
        4_000_000,
        ge=65_536,
        le=40_000_000,
        description="a page image's pixels at most, whatever size the page declares (the DPI is lowered)",
    )
    cache_mb: int = Field(
        256, ge=0, description="disk kept for drawn pages, least recently used dropped first; 0: no cache"
    )
    cache_dir: Path | None = Field(None, description="where drawn pages are kept (None: <data_dir>/pages)")
    public_url: str = Field(
        "",
        description="ragd's address as clients reach it (https://rag.example.org), for the page links of "
        "the chat proxy's url_citation annotations; empty: the address each request came to",
    )

    @field_validator("public_url")
    @classmethod
    def _public_scheme(cls, v: str) -> str:
        return _http_url(v, "pages.public_url")


class LimitsSettings(BaseModel):
    """Every tenant's limits unless the service key sets its own (PUT /api/v1/tenants/{id}/limits);
    0 means no limit.  Rates count requests per key and minute on each replica
    (docs/knowledge-bases.md, "Limits")."""

    search_per_minute: int = Field(
        0, ge=0, description="searches per minute per tenant key (/search, dataset search, MCP search)"
    )
    chat_per_minute: int = Field(0, ge=0, description="chat completions per minute per tenant key")
    models_per_minute: int = Field(
        0,
        ge=0,
        description="model endpoint calls (/v1/embeddings, /embed, /v1/rerank) per minute per tenant key",
    )
    max_chunks: int = Field(0, ge=0, description="chunks a tenant may hold over all its datasets")
    max_bytes: int = Field(
        0, ge=0, description="bytes of indexed files a tenant may hold over all its datasets"
    )
    max_concurrent_jobs: int = Field(
        0, ge=0, description="ingest jobs of one tenant running at once over every worker and replica"
    )


#: a named reranker or dense model (RAGD_RERANKERS, RAGD_EMBEDDERS keys); "default" (and for rerankers
#: "none") have meanings of their own
CONFIGURED_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="RAGD_",
        env_nested_delimiter="__",
        env_file=".env",
        extra="ignore",
        env_ignore_empty=True,
    )

    data_dir: Path = Field(Path(".ragd"), description="embedded index, caches and metadata")
    default_collection: str = Field("default", description="logical collection when none is given")
    ingest_concurrency: int = Field(
        128,
        ge=1,
        le=1024,
        description="files in flight during a folder ingest (their chunks share model batches)",
    )
    extract_concurrency: int = Field(
        2, ge=1, le=64, description="files extracted at the same time (CPU, memory)"
    )
    log: LogSettings = LogSettings()
    server: ServerSettings = ServerSettings()
    store: StoreSettings = StoreSettings()
    embedding: EmbeddingSettings = EmbeddingSettings()
    sparse: SparseSettings = SparseSettings()
    chunking: ChunkSettings = ChunkSettings()
    extract: ExtractSettings = ExtractSettings()
    vision: VisionSettings = VisionSettings()
    retrieval: RetrievalSettings = RetrievalSettings()
    rerank: RerankSettings = RerankSettings()
    rerankers: dict[str, RerankSettings] = Field(
        default_factory=dict,
        description="more rerankers by name (JSON object of rerank settings), chosen per request "
        "(rerank: name) or per dataset; the one of RAGD_RERANK__* is named 'default'",
    )
    embedders: dict[str, EmbeddingSettings] = Field(
        default_factory=dict,
        description="more dense models by name (JSON object of embedding settings) that a dataset may "
        "choose (its vectors go to the named vector text-dense-<name>); the one of RAGD_EMBEDDING__* "
        "is 'default'; fixed when the index is created (a change is INDEX_MISMATCH)",
    )
    llm: LlmSettings = LlmSettings()
    query_generation: QueryGenerationSettings = QueryGenerationSettings()
    agent: AgentSettings = AgentSettings()
    chat: ChatSettings = ChatSettings()
    s3: S3Settings = S3Settings()
    catalog: CatalogSettings = CatalogSettings()
    tenants: TenantSettings = TenantSettings()
    audit: AuditSettings = AuditSettings()
    backup: BackupSettings = BackupSettings()
    evaluation: EvaluationSettings = EvaluationSettings()
    migrations: MigrationSettings = MigrationSettings()
    worker: WorkerSettings = WorkerSettings()
    crawl: CrawlSettings = CrawlSettings()
    otel: OtelSettings = OtelSettings()
    limits: LimitsSettings = LimitsSettings()
    pages: PagesSettings = PagesSettings()

    @field_validator("rerankers")
    @classmethod
    def _reranker_names(cls, v: dict[str, RerankSettings]) -> dict[str, RerankSettings]:
        for name, rr in v.items():
            if name in ("default", "none") or not CONFIGURED_NAME.match(name):
                raise ValueError(f"reranker name {name[:70]!r}: lower-case a-z 0-9 _ -, not default or none")
            if rr.provider == "none":
                raise ValueError(f"reranker {name!r}: give it a provider (remote or local)")
        return v

    @field_validator("embedders")
    @classmethod
    def _embedder_names(cls, v: dict[str, EmbeddingSettings]) -> dict[str, EmbeddingSettings]:
        for name in v:
            if name == "default" or not CONFIGURED_NAME.match(name):
                raise ValueError(f"embedding model name {name[:70]!r}: lower-case a-z 0-9 _ -, not default")
        return v

    @property
    def catalog_url(self) -> str:
        return self.catalog.url or f"sqlite+aiosqlite:///{(self.data_dir / 'ragd.db').resolve()}"

    @property
    def files_dir(self) -> Path:
        return self.catalog.files_dir or self.data_dir / "files"

    @property
    def backup_dir(self) -> Path:
        return self.backup.dir or self.data_dir / "backups"

    @model_validator(mode="after")
    def _vision_engine_has_endpoint(self) -> Settings:
        if self.extract.engine in ("vision-llm", "hybrid-diagram") and not self.vision.enabled:
            raise ValueError(
                f"extract.engine={self.extract.engine!r} reads files with a vision model: "
                "set RAGD_VISION__API_BASE_URL (and RAGD_VISION__MODEL), or use engine auto"
            )
        return self

    @property
    def vision_cache_dir(self) -> Path:
        return self.vision.cache_dir or self.data_dir / "vision"

    @property
    def page_cache_dir(self) -> Path:
        return self.pages.cache_dir or self.data_dir / "pages"

    @property
    def model_cache_dir(self) -> Path:
        return self.embedding.cache_dir or self.data_dir / "models"
