"""Every language at ingest and at query time, through the real services: no 500, and BM25 finds each.

One file per language (the sentences of tests/embed/test_bm25_languages.py) is ingested through
``ragd``'s own pipeline; each language's first sentence, asked in sparse mode, must find its file
first.  The shared Wikipedia page in Tamil script, which failed the whole ingest with
``SPARSE_EMBEDDING_FAILED`` before, is indexed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ragd.bootstrap import Services, open_services
from ragd.retrieve.search import SearchRequest
from ragd.settings import Settings
from ragd.types import Blob, FileRef, IngestStatus, SearchMode
from tests.conftest import shared_path
from tests.embed.test_bm25_languages import SENTENCES


@pytest.fixture
async def services(tmp_path: Path, model_cache: Path) -> AsyncIterator[Services]:
    settings = Settings(data_dir=tmp_path, embedding={"cache_dir": model_cache}, extract={"isolate": False})
    async with open_services(settings) as opened:
        yield opened


async def test_each_language_is_indexed_and_found_by_its_own_words(services: Services) -> None:
    for language, (first, second) in SENTENCES.items():
        ref = FileRef(file_id=language, collection_name="langs", name=f"{language}.txt", source=language)
        blob = Blob(name=f"{language}.txt", data=f"{first}\n\n{second}\n".encode())
        outcome = await services.ingestor.ingest(blob, ref)
        assert outcome.status is IngestStatus.INDEXED, language
    missed = []
    for language, (query, _) in SENTENCES.items():
        for mode in (SearchMode.SPARSE, SearchMode.HYBRID):
            hits = await services.retriever.search(SearchRequest(query, ("langs",), k=3, mode=mode))
            if not hits or hits[0].meta["file_id"] != language:
                missed.append((language, mode.value, [h.meta["file_id"] for h in hits]))
    assert not missed


@pytest.mark.shared
async def test_the_tamil_wikipedia_page_is_indexed(services: Services) -> None:
    path = shared_path("documents") / "markitdown_test_wikipedia.html"
    ref = FileRef(file_id="wiki", collection_name="wiki", name=path.name, source=str(path))
    outcome = await services.ingestor.ingest(Blob(name=path.name, path=path), ref)
    assert outcome.status is IngestStatus.INDEXED
    hits = await services.retriever.search(SearchRequest("Microsoft founded Bill Gates", ("wiki",), k=3))
    assert hits
