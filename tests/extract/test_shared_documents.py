"""Every real document in ../shared/documents through the default extractor.

Each file must give non-empty text or a typed ragd error; only the genuinely
scanned file may fail, and only with OCR_UNAVAILABLE when Tesseract is absent.
Every qa.jsonl answer must be in its file's text after two normalisations: runs
of whitespace become one space, and Markdown backslash escapes are read as
Markdown reads them (``\\!`` is ``!``: kreuzberg's Markdown escapes punctuation).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from ragd.errors import ExtractionError, OcrUnavailable, RagError
from ragd.extract.router import RoutingExtractor, build_extractor
from ragd.settings import ExtractSettings
from ragd.types import Blob, Document
from tests.conftest import shared_path
from tests.extract.conftest import TESSERACT_READY, no_ocr

pytestmark = pytest.mark.shared

SCANNED = frozenset({"docling_ocr_test.pdf"})  # an image-only page (SOURCES.md)
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


@dataclass(frozen=True)
class Outcome:
    name: str
    seconds: float
    document: Document | None = None
    error: RagError | None = None

    def row(self) -> str:
        if self.document is not None:
            return f"{self.name}: {self.document.extractor}, {len(self.document.text)} chars, {self.seconds * 1000:.0f} ms"
        return f"{self.name}: {self.error.code if self.error else '?'} {self.error}"


def _run(extractor: RoutingExtractor, files: list[Path]) -> dict[str, Outcome]:
    outcomes = {}
    for path in files:
        started = time.perf_counter()
        try:
            document = extractor.extract(Blob(name=path.name, path=path))
            outcomes[path.name] = Outcome(path.name, time.perf_counter() - started, document=document)
        except RagError as exc:
            outcomes[path.name] = Outcome(path.name, time.perf_counter() - started, error=exc)
    return outcomes


@pytest.fixture(scope="module")
def documents() -> Path:
    return shared_path("documents")


@pytest.fixture(scope="module")
def corpus(documents: Path) -> dict[str, Outcome]:
    """Every shared document through the default extractor with this machine's OCR."""
    return _run(build_extractor(ExtractSettings()), sorted(documents.iterdir()))


def _text(corpus: dict[str, Outcome], name: str) -> str:
    document = corpus[name].document
    assert document is not None, corpus[name].row()
    return document.text


def _normalise(text: str) -> str:
    return " ".join(_ESCAPE.sub(r"\1", text).split())


def test_every_file_gives_text_or_a_typed_error(corpus: dict[str, Outcome]) -> None:
    report = "\n".join(outcome.row() for outcome in corpus.values())
    failed = {name for name, outcome in corpus.items() if outcome.error is not None}
    assert failed <= SCANNED, report
    for name in failed:
        assert isinstance(corpus[name].error, OcrUnavailable), report
    assert not failed or not TESSERACT_READY, report
    for outcome in corpus.values():
        if outcome.document is not None:
            assert outcome.document.text.strip(), outcome.row()
            assert all(value not in (None, "", []) for value in outcome.document.meta.values())


def test_without_tesseract_only_scans_fail_and_say_how_to_enable_ocr(documents: Path) -> None:
    pdfs = [path for path in sorted(documents.glob("*.pdf")) if path.stat().st_size < 1_000_000]
    outcomes = _run(build_extractor(ExtractSettings(), ocr_check=no_ocr), pdfs)
    failed = {name for name, outcome in outcomes.items() if outcome.error is not None}
    assert failed == SCANNED & set(outcomes), "\n".join(o.row() for o in outcomes.values())
    for name in failed:
        assert isinstance(outcomes[name].error, OcrUnavailable)
        assert "apt-get install tesseract-ocr" in str(outcomes[name].error)


#: ragd's own questions over the shared documents (bench/shared_qa.py asks them with qa.jsonl's)
EXTRA_QA = Path(__file__).resolve().parents[2] / "bench" / "data" / "shared_qa_extra.jsonl"


@pytest.mark.parametrize("questions", ["qa.jsonl", "extra"])
def test_every_qa_answer_is_in_its_file(documents: Path, corpus: dict[str, Outcome], questions: str) -> None:
    path = documents / questions if questions == "qa.jsonl" else EXTRA_QA
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) >= (14 if questions == "qa.jsonl" else 60)
    missing = []
    for line in lines:
        item = json.loads(line)
        outcome = corpus[item["file"]]
        if outcome.document is None:
            assert item["file"] in SCANNED, outcome.row()
            assert not TESSERACT_READY, outcome.row()
            continue
        if _normalise(item["answer_substring"]) not in _normalise(outcome.document.text):
            missing.append(f"{item['file']}: {item['answer_substring']!r}")
    assert not missing


def test_pdf_page_spans_are_sorted_contiguous_and_cover_the_text(corpus: dict[str, Outcome]) -> None:
    pdfs = [o.document for name, o in corpus.items() if name.endswith(".pdf") and o.document is not None]
    assert len(pdfs) >= 9
    for document in pdfs:
        spans = document.pages
        assert spans
        assert spans[0].start == 0
        assert spans[-1].end == len(document.text)
        for before, after in zip(spans, spans[1:], strict=False):
            assert before.end == after.start
            assert before.page < after.page
        assert spans[-1].page < document.meta["page_count"]


@pytest.mark.parametrize(
    ("name", "phrase", "page"),
    [
        ("unstructured_multi-column-2p.pdf", "9%-19%", 0),
        ("haystack_react_paper.pdf", "SYNERGIZING REASONING AND ACTING", 0),
        ("r2r_uber_2021.pdf", "SECURITIES AND EXCHANGE COMMISSION", 0),
        ("docling_powerpoint_sample.pptx", "Final notes on the third slide.", 2),
        ("docling_powerpoint_sample.pptx", "Second slide title", 1),
    ],
)
def test_known_phrases_map_to_their_page(
    corpus: dict[str, Outcome], name: str, phrase: str, page: int
) -> None:
    document = corpus[name].document
    assert document is not None, corpus[name].row()
    assert document.page_at(document.text.index(phrase)) == page


def test_docx_headings_are_markdown_headings_and_tables_rows(corpus: dict[str, Outcome]) -> None:
    lines = _text(corpus, "docling_word_sample.docx").splitlines()
    assert "# Swimming in the lake" in lines
    assert "## Let’s eat" in lines
    assert "| Berries | Blueberry, Strawberry, Cranberry | 150 |" in lines
    assert any(line.startswith("#") for line in _text(corpus, "markitdown_test.docx").splitlines())


def test_spreadsheets_are_sheet_sections_with_header_rows(corpus: dict[str, Outcome]) -> None:
    xls = _text(corpus, "markitdown_test.xls")
    assert xls.startswith(
        "## Sheet1\n\n| Alpha | Beta | Gamma | Delta |\n| --- | --- | --- | --- |\n| 89 | 82 |"
    )
    assert "\n## 09060124-b5e7-4717-9d07-3c046eb\n\n| ColA | ColB | ColC | ColD |\n| --- |" in xls
    xlsx = _text(corpus, "docling_xlsx_01.xlsx")
    assert [line for line in xlsx.splitlines() if line.startswith("## ")] == [
        "## Sheet1",
        "## Sheet2",
        "## Sheet3",
        "## Sheet4",
    ]
    assert _text(corpus, "unstructured_vodafone.xlsx").startswith("## Index\n\n| Financial performance |")


def test_csv_files_are_one_table_with_the_header_first(corpus: dict[str, Outcome]) -> None:
    lines = _text(corpus, "docling_csv-comma.csv").splitlines()
    assert lines[0] == "## docling_csv-comma"
    assert lines[2].startswith("| Index | Customer Id | First Name |")
    assert lines[3].startswith("| --- |")
    assert lines[5] == (
        "| 2 | 1Ef7b82A4CAAD10 | Preston | Lozano, Dr | Vega-Gentry | East Jimmychester | Djibouti | 5153435776"
        " | 686-620-1820x944 | vmata@colon.com | 2021-04-23 | http://www.hobbs.com/ |"
    )
    assert "| 三木英子 | 25 | 大阪 |" in _text(corpus, "markitdown_test_mskanji.csv")


def test_text_files_are_kept_and_mojibake_repaired(documents: Path, corpus: dict[str, Outcome]) -> None:
    assert _text(corpus, "docling_wiki.md") == (documents / "docling_wiki.md").read_text(encoding="utf-8")
    norwich = _text(corpus, "unstructured_norwich-city.txt")
    assert "1986–1990 Watford 63 (9)" in norwich
    assert "â\x80" not in norwich


def test_html_has_no_metadata_header_and_keeps_its_title(corpus: dict[str, Outcome]) -> None:
    for name in ("haystack_paul_graham_superlinear.html", "markitdown_test_wikipedia.html"):
        document = corpus[name].document
        assert document is not None
        assert not document.text.startswith("---")
        assert "## title:" not in document.text[:2000]
        assert document.meta["title"]


def test_metadata_is_small_and_useful(corpus: dict[str, Outcome]) -> None:
    epub = corpus["unstructured_winter-sports.epub"].document
    assert epub is not None
    assert epub.meta["title"] == "Winter Sports in Switzerland"
    assert epub.meta["authors"] == ["E. F. Benson"]
    assert epub.meta["languages"] == ["en"]
    uber = corpus["r2r_uber_2021.pdf"].document
    assert uber is not None
    assert uber.meta["page_count"] == 307
    notebook = corpus["markitdown_test_notebook.ipynb"].document
    assert notebook is not None
    assert "languages" not in notebook.meta


def test_a_long_extraction_is_cut_off_at_the_time_limit(documents: Path) -> None:
    extractor = build_extractor(ExtractSettings(timeout_s=0.5), ocr_check=no_ocr)
    started = time.monotonic()
    with pytest.raises(ExtractionError, match="timed out"):
        extractor.extract(Blob(name="uber.pdf", path=documents / "r2r_uber_2021.pdf"))
    assert time.monotonic() - started < 3.0
