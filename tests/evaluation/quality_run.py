"""Index a BEIR dataset through the real pipeline and score search modes (the quality gates' run)."""

from __future__ import annotations

from pathlib import Path

from ragd.bootstrap import open_services
from ragd.evaluation.beir import Dataset
from ragd.evaluation.runner import ModeResult, evaluate_mode, index_dataset
from ragd.settings import EmbeddingSettings, RetrievalSettings, Settings
from ragd.types import SearchMode


async def run_eval(
    dataset: Dataset,
    data_dir: Path,
    cache: Path,
    modes: tuple[SearchMode, ...] = tuple(SearchMode),
    retrieval: RetrievalSettings | None = None,
) -> dict[SearchMode, ModeResult]:
    """Index ``dataset`` in ``data_dir`` (already indexed documents are skipped) and score ``modes``."""
    settings = Settings(
        data_dir=data_dir,
        embedding=EmbeddingSettings(cache_dir=cache),
        retrieval=retrieval or RetrievalSettings(),
    )
    async with open_services(settings) as services:
        indexed = await index_dataset(services.ingestor, dataset)
        assert indexed.documents + indexed.empty == len(dataset.corpus)
        await services.store.optimize()
        return {m: await evaluate_mode(services.pipeline, dataset, m) for m in modes}
