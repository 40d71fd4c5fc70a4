"""What the knowledge-base use-cases work with, built once by the composition root."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path

from ragd.catalog.base import Catalog
from ragd.chunk.base import Chunker
from ragd.ingest.pipeline import Ingestor
from ragd.kb.limits_book import LimitsBook
from ragd.kb_types import ChunkingSpec, SourceSpec
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

    def upload_path(self, dataset_id: str, file_id: str) -> Path:
        return self.files_dir / dataset_id / file_id
