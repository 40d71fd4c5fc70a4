"""Every language at ingest and at query time, through the real services: no 500, and BM25 finds each.

One file per language (the sentences of tests/embed/test_bm25_languages.py) is ingested through
``ragd``'s own pipeline into the embedded store; each language's first sentence, asked in sparse and
in hybrid mode, must find its file first, and so must one word of it in every script that is
tokenised by script.  Text with no words at all is indexed and searched without an error.  The shared
English Wikipedia page, whose list of 154 languages made the whole ingest fail with
``SPARSE_EMBEDDING_FAILED`` before, is indexed, and its Tamil, Armenian, Georgian and Chinese
language names are found by the sparse side (its dense side is a scripted TEI server: fast).
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
from tests.embed.test_bm25_languages import SENTENCES, WORDS
from tests.embed_remote.fakes import tei_handler
from tests.support.scripted_http import ScriptedServer


@pytest.fixture
async def services(tmp_path: Path, model_cache: Path) -> AsyncIterator[Services]:
    settings = Settings(data_dir=tmp_path, embedding={"cache_dir": model_cache}, extract={"isolate": False})
    async with open_services(settings) as opened:
        yield opened


async def _ingest(services: Services, name: str, text: str, collection: str) -> IngestStatus:
    ref = FileRef(file_id=name, collection_name=collection, name=f"{name}.txt", source=name)
    outcome = await services.ingestor.ingest(Blob(name=f"{name}.txt", data=text.encode()), ref)
    return outcome.status


async def _first(services: Services, query: str, collection: str, mode: SearchMode) -> list[str]:
    hits = await services.retriever.search(SearchRequest(query, (collection,), k=3, mode=mode))
    return [hit.meta["file_id"] for hit in hits]


async def test_each_language_is_indexed_and_found_by_its_own_words(services: Services) -> None:
    for language, (first, second) in SENTENCES.items():
        assert await _ingest(services, language, f"{first}\n\n{second}\n", "langs") is IngestStatus.INDEXED
    missed = []
    for language, (query, _) in SENTENCES.items():
        for mode in (SearchMode.SPARSE, SearchMode.HYBRID):
            found = await _first(services, query, "langs", mode)
            if found[:1] != [language]:
                missed.append((language, mode.value, found))
    for language, word in WORDS.items():
        found = await _first(services, word, "langs", SearchMode.SPARSE)
        if found[:1] != [language]:
            missed.append((language, word, found))
    assert not missed


async def test_text_without_words_is_indexed_and_searched_without_an_error(services: Services) -> None:
    assert await _ingest(services, "emoji", "🚢🚢🚢 !!! ??? …\n", "signs") is IngestStatus.INDEXED
    assert await _ingest(services, "words", "Ships and fresh bread.\n", "signs") is IngestStatus.INDEXED
    assert await _first(services, "🚢 !!!", "signs", SearchMode.SPARSE) == []  # no words: no keyword hits
    assert "emoji" in await _first(services, "🚢 !!!", "signs", SearchMode.HYBRID)
    assert await _first(services, "bread", "signs", SearchMode.SPARSE) == ["words"]


#: Names in the page's list of languages, in scripts that failed its ingest or Qdrant has no language for.
NAMES = ("தமிழ்", "Հայերեն", "ქართული", "中文", "日本語", "ไทย", "हिन्दी")


@pytest.fixture
async def scripted_dense_services(tmp_path: Path, scripted_server: ScriptedServer) -> AsyncIterator[Services]:
    scripted_server.on("POST", "/embed", tei_handler(8))
    embedding = {"provider": "tei", "base_url": scripted_server.url, "max_tokens": 256, "batch_size": 32}
    settings = Settings(data_dir=tmp_path, embedding=embedding, extract={"isolate": False})
    async with open_services(settings) as opened:
        yield opened


@pytest.fixture
def wikipedia_page() -> Path:
    return shared_path("documents", "markitdown_test_wikipedia.html")


@pytest.mark.shared
async def test_the_wikipedia_page_with_154_languages_is_indexed(
    wikipedia_page: Path, scripted_dense_services: Services
) -> None:
    services, path = scripted_dense_services, wikipedia_page
    ref = FileRef(file_id="wiki", collection_name="wiki", name=path.name, source=str(path))
    outcome = await services.ingestor.ingest(Blob(name=path.name, path=path), ref)
    assert outcome.status is IngestStatus.INDEXED
    for query, expected in [("founders Bill Gates", "Bill Gates"), *((name, name) for name in NAMES)]:
        hits = await services.retriever.search(SearchRequest(query, ("wiki",), k=3, mode=SearchMode.SPARSE))
        assert hits, query
        assert expected in hits[0].content, query
