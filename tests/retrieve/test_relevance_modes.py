"""One relevance scale whatever the mode: the real model, the real store, every search mode."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ragd.bootstrap import Services, open_services
from ragd.retrieve.relevance import above
from ragd.retrieve.search import SearchRequest
from ragd.settings import EmbeddingSettings, Settings
from ragd.types import Document, FileRef, SearchMode

PASSAGES = {
    "pump": "The Kestrel pump station lifts river water into the northern reservoir. Its three diesel "
    "pumps run in turns, and the station log records every start and stop.",
    "bread": "Sourdough bread rises slowly because wild yeast and lactic bacteria ferment the dough "
    "overnight; the crust darkens as its sugars caramelise in a hot oven.",
    "glacier": "The Halvorsen glacier retreated 2.3 kilometres between 1950 and 2020, and the ice it "
    "left behind melted into a moraine lake that fishermen now row across.",
    "bahn": "Die Wuppertaler Schwebebahn ist eine Hängebahn, die seit 1901 über der Wupper fährt und "
    "an jedem Werktag rund achtzigtausend Fahrgäste befördert.",
}
MODES = (SearchMode.HYBRID, SearchMode.DENSE, SearchMode.SPARSE)
FLOOR = 0.4  # the chat proxy's default


@pytest.fixture
async def services(tmp_path: Path, model_cache: Path) -> AsyncIterator[Services]:
    settings = Settings(data_dir=tmp_path / "data", embedding=EmbeddingSettings(cache_dir=model_cache))
    async with open_services(settings) as built:
        for name, text in PASSAGES.items():
            ref = FileRef(file_id=name, collection_name="kb", name=f"{name}.txt", source=f"{name}.txt")
            await built.ingestor.ingest_document(Document(text=text, extractor="text"), ref)
        yield built


async def _top(services: Services, query: str, mode: SearchMode) -> tuple[str, float]:
    hits = await services.retriever.search(SearchRequest(query, ("kb",), k=3, mode=mode))
    return (str(hits[0].meta.get("file_id")), hits[0].relevance) if hits else ("", 0.0)


async def test_an_exact_keyword_match_is_relevant_in_every_mode(services: Services) -> None:
    """Sparse mode scored its exact match 0.0006 against 0.99 in hybrid: a floor meant nothing there."""
    for mode, (query, name) in itertools.product(
        MODES,
        (
            ("Halvorsen glacier retreat", "glacier"),
            ("Kestrel pump station diesel pumps", "pump"),
            ("How does sourdough bread rise?", "bread"),
        ),
    ):
        found, value = await _top(services, query, mode)
        assert found == name, (mode, query)
        assert value >= FLOOR, (mode, query, value)


async def test_the_floor_drops_an_off_topic_query_in_every_mode(services: Services) -> None:
    """Off-topic: no hit passes 0.4 in any mode.  A question sharing one rare word with a passage
    ("river") is told apart only where there is a cosine: BM25 alone cannot (docs/scoring.md: sparse
    searches silence fewer off-topic questions)."""
    asked = [(mode, "What is the capital of France?") for mode in MODES]
    asked += [(mode, "Who painted the Mona Lisa?") for mode in MODES]
    asked += [
        (mode, "Which river is the longest in Africa?") for mode in (SearchMode.HYBRID, SearchMode.DENSE)
    ]
    for mode, query in asked:
        hits = await services.retriever.search(SearchRequest(query, ("kb",), k=3, mode=mode))
        assert above(hits, FLOOR) == [], (mode, query, [(h.meta.get("file_id"), h.relevance) for h in hits])


async def test_a_query_the_dense_model_does_not_know_keeps_its_bm25_relevance(services: Services) -> None:
    """German against an English model: hybrid judges by BM25 alone, on the same scale (was ~0)."""
    found, value = await _top(
        services, "Wie viele Fahrgäste befördert die Wuppertaler Schwebebahn?", SearchMode.HYBRID
    )
    assert (found, value >= FLOOR) == ("bahn", True), value
