"""A question about one cell of a long table finds that table's row, in every format with tables.

The staff directory of tests/extract/table_files.py (60 rows, the asked one in the middle: past
the table's second chunk) is ingested as DOCX, XLSX, HTML and PDF through ragd's own pipeline,
with the real embedder, into the embedded store; the question names the person and asks for a
column's value.  The top hit must be the chunk holding that whole row, with the table's header
row in what was embedded (the chunk's text or its breadcrumb), so the answer's column is named.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from ragd.bootstrap import Services, open_services
from ragd.retrieve.search import SearchRequest
from ragd.settings import Settings
from ragd.types import Blob, FileRef, IngestStatus
from tests.extract.table_files import (
    ANSWER,
    ASKED,
    HEADER,
    QUESTION,
    people_docx,
    people_html,
    people_pdf,
    people_xlsx,
)

HEADER_ROW = "| " + " | ".join(HEADER) + " |"
ASKED_ROW = "| " + " | ".join(ASKED) + " |"
pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]  # the model loads: ~3 s
FILES = {
    "staff.docx": people_docx,
    "staff.xlsx": people_xlsx,
    "staff.html": people_html,
    "staff.pdf": people_pdf,
}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def indexed(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> AsyncIterator[Services]:
    """The four files, one collection each (their chunks would otherwise compete for the top)."""
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("tables"),
        embedding={"cache_dir": model_cache},
        extract={"isolate": False},
    )
    async with open_services(settings) as services:
        for name, build in FILES.items():
            ref = FileRef(file_id=name, collection_name=name.replace(".", "-"), name=name, source=name)
            outcome = await services.ingestor.ingest(Blob(name=name, data=build()), ref)
            assert outcome.status is IngestStatus.INDEXED, (name, outcome)
        yield services


@pytest.mark.parametrize("name", FILES)
async def test_a_question_about_a_cell_finds_its_row_under_the_header(indexed: Services, name: str) -> None:
    hits = await indexed.retriever.search(SearchRequest(QUESTION, (name.replace(".", "-"),), k=3))
    top = hits[0]
    assert ASKED_ROW in top.content, [hit.content[:80] for hit in hits]
    assert ANSWER in top.content
    headers = list(top.meta.get("headers") or [])
    assert HEADER_ROW in top.content or headers[-1:] == [HEADER_ROW], (top.content[:120], headers)
    assert top.meta["split_id"] >= 2, "the row lies past the table's second chunk"
