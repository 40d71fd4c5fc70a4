"""What the knowledge-base use-cases work with, built once by the composition root."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path

from ragd.catalog.base import Catalog
from ragd.chunk.base import Chunker
from ragd.embed.spaces import DenseSpaces
from ragd.ingest.pipeline import Ingestor
from ragd.kb.limits_book import LimitsBook
from ragd.kb_types import ChunkingSpec, SourceSpec
from ragd.retrieve.pipeline import Searcher
from ragd.sources.base import SourceReader
from ragd.store.base import VectorStore


@dataclass(frozen=True, slots=True)
class KbContext:
    catalog: Catalog
    store: VectorStore
    ingestor: Ingestor
    #: a dataset's chunker (its own strategy and sizes, clamped to the window of its dense model:
    #: None for the default, else a RAGD_EMBEDDERS name)
    chunker_for: Callable[[ChunkingSpec, str | None], Chunker]
    #: opens the reader of a source (folder, website, S3 prefix) for one sync or fetch; raises
    #: InvalidRequest for a bad config
    reader_for: Callable[[SourceSpec], AbstractAsyncContextManager[SourceReader]]
    #: uploaded files, kept for re-indexing: <files_dir>/<dataset id>/<file id>
    files_dir: Path
    max_upload_bytes: int
    max_attempts: int = 3
    #: the configured rerankers' names (a dataset's default must be one of them, or "none")
    reranker_names: tuple[str, ...] = ()
    #: the configured dense models' names ("default", then RAGD_EMBEDDERS): a dataset's choice
    embedding_names: tuple[str, ...] = ("default",)
    #: the limits of every tenant: the settings' defaults, overrides cached briefly, rate buckets
    limits: LimitsBook = field(default_factory=LimitsBook)
    #: the wall clock (epoch seconds) source schedules are set and fired on; the composition root
    #: passes it (real time unless a test passes a clock it advances)
    clock: Callable[[], float] = time.time
    #: the tenant template's default (RAGD_TENANTS__DATASETS): names of every new tenant's datasets
    standard_datasets: tuple[str, ...] = ()

    #: the dense models and the versions of migrating collections searches read (None: a context
    #: without named models, e.g. a test's; migrations then only chunk again)
    spaces: DenseSpaces | None = None
    #: migrations: how long a version a dataset stopped serving is kept, the nDCG@10 drop a
    #: switch accepts without override, and the wait after hiding a new version before writing it
    migration_retain_s: float = 86_400.0
    migration_max_regression: float = 0.02
    migration_settle_s: float = 1.0
    #: the one search pipeline (a migration runs the dataset's evaluation set through it on both
    #: versions before it switches); None: no evaluation
    searcher: Searcher | None = None
    #: labelled queries one evaluation runs at most (RAGD_EVALUATION__MAX_RUN_QUERIES)
    max_eval_queries: int = 200

    def upload_path(self, dataset_id: str, file_id: str) -> Path:
        return self.files_dir / dataset_id / file_id
