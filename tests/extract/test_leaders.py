"""A table of contents' dot leaders: collapsed to one mark, so contents pages don't crowd out passages."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from ragd.bootstrap import open_services
from ragd.extract.paged_text import LEADER, clean_page_text, collapse_leaders
from ragd.retrieve.search import SearchRequest
from ragd.settings import ChunkSettings, EmbeddingSettings, Settings
from ragd.types import Blob, FileRef
from tests.extract.builders import build_pdf

# the contents page of the shared IBM Redbook (docling_redp5110_sampled.pdf) as PDFium gives it
REDBOOK_TOC = """Contents
Notices . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . vii
Trademarks . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . viii
Authors. . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . xi
Chapter 1. Securing and protecting IBM DB2 data . . . . . . . . . . . . . . . . . . . . . . . 1
1.1 Security fundamentals. . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . 2
1.3.1 Row and column access control . . . . . . . . . . . . . . . . . . . . . . . . . . . . . 8"""


def test_a_redbook_contents_page_keeps_its_titles_and_page_numbers() -> None:
    assert clean_page_text(REDBOOK_TOC) == (
        "Contents\n"
        "Notices … vii\n"
        "Trademarks … viii\n"
        "Authors … xi\n"
        "Chapter 1. Securing and protecting IBM DB2 data … 1\n"
        "1.1 Security fundamentals … 2\n"
        "1.3.1 Row and column access control … 8"
    )


def test_other_leader_shapes_collapse_too() -> None:
    assert collapse_leaders("2.4 Results..............................17") == "2.4 Results … 17"
    assert collapse_leaders("Index ·········· 203") == "Index … 203"
    assert collapse_leaders("Appendix \u2026\u2026\u2026\u2026 88") == "Appendix … 88"
    assert collapse_leaders(". . . . . . . . 12") == "… 12", "a leader wrapped onto its own line"


def test_prose_ellipses_numbers_and_indentation_are_kept() -> None:
    for line in (
        "He paused... and then, after a while.... went on.",
        "Version 1.2.3.4 of the 10.0.0.1 router",
        "    indented code line",
        "他说……好",  # a Chinese ellipsis is two ellipsis characters
        "",
    ):
        assert collapse_leaders(line) == line


@given(st.text(st.characters(codec="utf-8", exclude_characters=".\u00b7\u2026")))
def test_text_without_leaders_is_untouched(line: str) -> None:
    assert collapse_leaders(line) == line


@given(st.lists(st.text("abcdefghij 0123456789", min_size=1, max_size=12), min_size=1, max_size=6))
def test_no_word_is_lost(words: list[str]) -> None:
    line = " . . . . . . . . ".join(words)
    assert collapse_leaders(line).split() == " … ".join(words).split()
    assert LEADER in collapse_leaders(line) or len(words) == 1


TOC_ENTRIES = [
    "Notices",
    "Trademarks",
    "Preface",
    "Authors",
    "Chapter 1. Securing and protecting data",
    "1.1 Security fundamentals",
    "1.2 Current state of IT security",
    "1.3 Row and column access control",
    "1.3.1 Column masks",
    "1.3.2 Row permissions",
    "1.4 Encryption at rest",
    "1.5 Encryption in transit",
    "Chapter 2. Roles and separation of duties",
    "2.1 Function usage identifiers",
    "2.2 The security officer",
    "2.3 Database administrators",
    "2.4 Group profiles",
    "Chapter 3. Auditing",
    "3.1 Journals and receivers",
    "3.2 Reporting",
    "Chapter 4. Migration",
    "4.1 Planning",
    "4.2 Testing",
    "Appendix A. Sample scripts",
    "Related publications",
    "Index",
]
PASSAGES = [
    "Column masks replace the value of a column with a masked value for users who may not see it. "
    "A mask is a CASE expression over the session user and the column, applied when a query reads the table.",
    "Auditing records who read or changed a table. The journal keeps an entry for each access, "
    "and the audit journal receivers are saved to tape every week by the operations team.",
    "The security officer holds the special authorities that manage user profiles; separation of "
    "duties keeps the database administrator from reading the data that he administers.",
]


async def test_a_contents_page_does_not_outrank_the_passage_it_points_to(
    tmp_path: Path, model_cache: Path
) -> None:
    toc = "Contents\n" + "\n".join(
        f"{title} {'. ' * (60 - len(title) // 2)}{page}" for page, title in enumerate(TOC_ENTRIES, 1)
    )
    pdf = build_pdf([toc, *PASSAGES])
    """Chunks of 128 tokens (a 400-token chunk at this scale): before, a contents chunk held one or two
    titles among a hundred dots, and its few words made it the best BM25 match for a title."""
    settings = Settings(
        data_dir=tmp_path / "data",
        embedding=EmbeddingSettings(cache_dir=model_cache),
        chunking=ChunkSettings(token_size=128, token_overlap=16),
    )
    async with open_services(settings) as services:
        ref = FileRef(file_id="guide", collection_name="kb", name="guide.pdf", source="guide.pdf")
        await services.ingestor.ingest(Blob(name="guide.pdf", data=pdf), ref)
        for query, passage in (
            ("column masks", PASSAGES[0]),
            ("auditing", PASSAGES[1]),
            ("the security officer", PASSAGES[2]),
        ):
            hits = await services.retriever.search(SearchRequest(query, ("kb",), k=3))
            assert passage[:40] in hits[0].content, (query, [h.content[:60] for h in hits])
