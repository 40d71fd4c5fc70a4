"""The format matrix of docs/formats.md, proven on real files.

Every row of the matrix is one extension ragd accepts.  For each format there is a
real file (``fixtures/formats``, made with the applications named in its
SOURCES.md, or one of ../shared/documents) whose known sentences must be in the
extracted text, read by the extractor the matrix names, with no markup left in it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ragd.extract.markup_check import markup_share
from ragd.extract.mime import FileKind, file_type_for_name
from ragd.extract.router import RoutingExtractor
from ragd.types import Blob
from tests.conftest import shared_path
from tests.extract.conftest import TESSERACT_READY

FIXTURES = Path(__file__).parent / "fixtures" / "formats"
MATRIX = Path(__file__).resolve().parents[2] / "docs" / "formats.md"
EXPECTED: dict[str, dict[str, object]] = json.loads((FIXTURES / "expected.json").read_text(encoding="utf-8"))
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
#: Real documents are far below the refusal threshold (0.5); a format's output must be clean text.
CLEAN = 0.1

#: The shared documents that prove the rows the fixtures do not: file -> sentences in its text.
SHARED: dict[str, list[str]] = {
    "markitdown_test.pdf": ["Large language models (LLMs) are becoming a crucial building block"],
    "markitdown_test.docx": ["AutoGen: Enabling Next-Gen LLM Applications via Multi-Agent Conversation"],
    "docling_powerpoint_sample.pptx": ["Speaker notes:"],
    "unstructured_vodafone.xlsx": ["| Average foreign exchange rates | Nine quarters to 30 June 2023 |"],
    "markitdown_test.xls": ["Alpha"],
    "docling_text_document_01.odt": ["is simply dummy text of the printing and typesetting industry"],
    "haystack_paul_graham_superlinear.html": ["superlinear returns for performance"],
    "docling_elife-56337.nxml": ["Krüppel"],
    "unstructured_winter-sports.epub": ["Winter Sports in Switzerland"],
    "unstructured_family-day.eml": ["Family Day"],
    "docling_csv-comma.csv": ["| Index | Customer Id |"],
    "docling_wiki.md": ["IBM"],
    "markitdown_test_notebook.ipynb": ["Test Notebook"],
    "unstructured_norwich-city.txt": ["Norwich City"],
    "markitdown_test_mskanji.csv": ["三木英子"],
}


def _normalise(text: str) -> str:
    return " ".join(_ESCAPE.sub(r"\1", text).split())


def _checks(name: str) -> list[str]:
    entry = EXPECTED[name]
    checks = entry.get("checks") or [{"text": entry["sentence"]}]
    assert isinstance(checks, list)
    return [str(check["text"]) for check in checks]


def _matrix_extractors() -> dict[str, str]:
    """Extension -> extractor name, from the matrix's table (``| .ext | ... | extractor | ...``)."""
    rows: dict[str, str] = {}
    for line in MATRIX.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0].startswith("`."):
            for suffix in re.findall(r"`(\.[\w.]+)`", cells[0]):
                rows[suffix] = cells[2].strip("`")
    return rows


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_real_file_of_each_format_gives_its_sentences_and_no_markup(
    extractor: RoutingExtractor, name: str
) -> None:
    path = FIXTURES / name
    found = file_type_for_name(name)
    if found is not None and found.kind is FileKind.IMAGE and not TESSERACT_READY:
        pytest.skip("OCR needs Tesseract (apt-get install tesseract-ocr tesseract-ocr-eng)")
    document = extractor.extract(Blob(name=name, path=path))
    text = _normalise(document.text)
    for sentence in _checks(name):
        assert _normalise(sentence) in text, f"{name}: {sentence!r} not in {document.text[:2000]!r}"
    assert markup_share(document.text) < CLEAN, document.text[:2000]
    assert document.extractor == _matrix_extractors()[Path(name).suffix.lower()]


@pytest.mark.shared
@pytest.mark.parametrize("name", sorted(SHARED))
def test_the_shared_documents_prove_the_other_rows(extractor: RoutingExtractor, name: str) -> None:
    document = extractor.extract(Blob(name=name, path=shared_path("documents") / name))
    for sentence in SHARED[name]:
        assert _normalise(sentence) in _normalise(document.text), f"{name}: {sentence!r}"
    assert markup_share(document.text) < CLEAN
    assert document.extractor == _matrix_extractors()[Path(name).suffix.lower()]


def test_the_matrix_has_a_row_for_every_extension_ragd_accepts() -> None:
    from ragd.extract.mime import accepted_suffixes

    rows = _matrix_extractors()
    assert set(accepted_suffixes()) <= set(rows), sorted(set(accepted_suffixes()) - set(rows))
    assert set(rows) <= set(accepted_suffixes()), sorted(set(rows) - set(accepted_suffixes()))


def test_every_row_is_proven_on_a_real_file() -> None:
    proven = {Path(name).suffix.lower() for name in [*EXPECTED, *SHARED]}
    kinds = {file_type_for_name(f"x{suffix}").kind for suffix in proven}  # type: ignore[union-attr]
    unproven = {kind for kind in FileKind if kind not in kinds}
    assert not unproven, f"no real file proves {sorted(k.value for k in unproven)}"
