"""Tables of DOCX, XLSX, HTML and PDF reach the document as Markdown tables, and reach chunks as
whole rows under their header row, for every chunking strategy that can meet them."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ragd.chunk.factory import build_chunker
from ragd.extract.router import build_extractor
from ragd.settings import ChunkSettings, ExtractSettings
from ragd.types import Blob, Chunk, ChunkStrategy, Document
from tests.chunk.chunk_support import MiniLmCounter, minilm_counter
from tests.extract.table_files import (
    ASKED,
    HEADER,
    awkward_docx,
    awkward_html,
    awkward_xlsx,
    people,
    people_docx,
    people_html,
    people_pdf,
    people_xlsx,
)

LONG_TABLES: dict[str, Callable[[], bytes]] = {
    "staff.docx": people_docx,
    "staff.xlsx": people_xlsx,
    "staff.html": people_html,
    "staff.pdf": people_pdf,
}
HEADER_ROW = "| " + " | ".join(HEADER) + " |"
ASKED_ROW = "| " + " | ".join(ASKED) + " |"


def extract(name: str, data: bytes) -> Document:
    return build_extractor(ExtractSettings(isolate=False)).extract(Blob(name=name, data=data))


def table_lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.startswith("|")]


AWKWARD_HEAD = ["| Name | Pipe\\|col | Notes |", "| --- | --- | --- |", "| a | x \\| y | line one line two |"]


def test_a_word_table_escapes_pipes_joins_paragraphs_and_keeps_merged_and_empty_cells() -> None:
    """Word's merged cells repeat their text in every cell they cover (each row reads whole)."""
    text = extract("awkward.docx", awkward_docx()).text
    assert table_lines(text) == [
        *AWKWARD_HEAD,
        "| merged across | merged across | z |",
        "|  | tall |  |",
        "| b | tall | c |",
    ]
    assert text.startswith("Before\n\n| Name")
    assert text.endswith("|\n\nAfter")


def test_a_sheet_is_a_table_under_its_name_with_empty_cells_kept() -> None:
    text = extract("awkward.xlsx", awkward_xlsx()).text
    assert text.startswith("## Awkward\n\n")
    assert table_lines(text) == [*AWKWARD_HEAD, "|  |  | c |", "| b |  |  |"]


def test_an_html_table_has_its_th_row_as_header_and_spanned_cells_empty() -> None:
    text = extract("awkward.html", awkward_html()).text
    assert table_lines(text) == [
        *AWKWARD_HEAD,
        "| merged across |  | z |",
        "| tall |  | c |",
        "|  | q | p1 p2 |",
        "| first row | is the header |",
        "| --- | --- |",
        "| v1 | v2 |",
    ]


@pytest.mark.parametrize("name", LONG_TABLES)
def test_a_long_table_is_one_markdown_table_in_every_format(name: str) -> None:
    document = extract(name, LONG_TABLES[name]())
    lines = table_lines(document.text)
    body = [line for line in lines if line not in (HEADER_ROW, "| --- | --- | --- | --- | --- |")]
    assert len(body) == len(people()) - 1, "one line per row"
    assert lines[0] == HEADER_ROW
    assert ASKED_ROW in lines


STRATEGIES = (ChunkStrategy.TOKEN, ChunkStrategy.MARKDOWN, ChunkStrategy.SENTENCE, ChunkStrategy.RECURSIVE)


def chunk(document: Document, strategy: ChunkStrategy, counter: MiniLmCounter) -> list[Chunk]:
    settings = ChunkSettings(strategy=strategy, char_size=600, char_overlap=100)
    return build_chunker(settings, counter=counter, max_tokens=256, document_prefix="").chunk(document)


@pytest.fixture(scope="module")
def minilm() -> MiniLmCounter:
    return minilm_counter()


@pytest.fixture(scope="module")
def long_documents() -> dict[str, Document]:
    return {name: extract(name, build()) for name, build in LONG_TABLES.items()}


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("name", LONG_TABLES)
def test_every_chunk_with_rows_holds_whole_rows_under_the_header(
    long_documents: dict[str, Document], minilm: MiniLmCounter, name: str, strategy: ChunkStrategy
) -> None:
    """The header row is in the chunk's text or ends its breadcrumb (``headers``: embedded with
    the text, not part of ``text``, so ``start``/``end`` stay the rows' own offsets)."""
    document = long_documents[name]
    chunks = chunk(document, strategy, minilm)
    rows = [c for c in chunks if any(line.startswith("| Person") for line in c.text.split("\n"))]
    assert len(rows) >= 4, "the table spans several chunks"
    for piece in rows:
        assert piece.text == document.text[piece.start : piece.end]
        assert HEADER_ROW in piece.text or piece.headers[-1:] == (HEADER_ROW,), piece.text[:80]
        assert HEADER_ROW in piece.embedding_text()
        for line in piece.text.split("\n"):
            assert not line.startswith("|") or line.endswith("|"), f"a row cut inside: {line!r}"
        assert piece.text.lstrip().startswith(("|", "#", "Staff", "The staff")), "chunks start at a row"
    holding = [c for c in chunks if ASKED_ROW in c.text]
    assert holding, "the asked row is whole in a chunk"
    assert chunks.index(holding[0]) >= 2, "the asked row lies past the table's second chunk"
