"""The vision benchmark's corpus (bench/vision_docs): the writer makes files their readers open, the
same bytes every time, and every question's answer sits in a picture, not in the file's own text.

The text reader (kreuzberg) reads each Office file and text PDF; PDFium opens every PDF (a text
layer and a placed picture, or a scan with no text at all); every package part parses and every
picture decodes; LibreOffice, which the vision engines use to turn Office files into pages,
converts them (skipped without ``soffice``).
"""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import pypdfium2
import pypdfium2.raw as pdfium_c
import pytest
from bench.vision_docs import KINDS, SPECS, question_lines, write_corpus
from PIL import Image

from ragd.extract.kreuzberg_extractor import KreuzbergExtractor
from ragd.settings import ExtractSettings
from ragd.types import Blob

COMMITTED = Path(__file__).resolve().parents[2] / "bench" / "vision_docs" / "questions.jsonl"
PICTURE_ONLY = ("raster-docx", "pdf-figure", "pptx-picture")  # the answers are pixels only
_RELATIONSHIP = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("vision-corpus")
    write_corpus(folder)
    return folder


def test_the_corpus_has_every_kind_and_its_questions(corpus: Path) -> None:
    assert len(SPECS) >= 12
    assert {spec.kind for spec in SPECS} == set(KINDS)
    assert len({spec.name for spec in SPECS}) == len(SPECS)
    for spec in SPECS:
        assert 2 <= len(spec.questions) <= 4, spec.name
    written = (corpus / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    assert written == question_lines() == COMMITTED.read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in written]
    assert {row["file"] for row in rows} == {spec.name for spec in SPECS}
    assert all(row["answer_substring"] and row["question"].endswith("?") for row in rows)


def test_the_writer_is_deterministic(corpus: Path) -> None:
    for spec in SPECS:
        assert spec.build() == (corpus / spec.name).read_bytes(), spec.name


@pytest.mark.parametrize(
    "spec", [s for s in SPECS if s.name.endswith((".docx", ".pptx"))], ids=lambda s: s.name
)
def test_office_packages_are_well_formed(corpus: Path, spec) -> None:
    with zipfile.ZipFile(corpus / spec.name) as package:
        assert package.testzip() is None
        names = set(package.namelist())
        for name in names:
            data = package.read(name)
            if name.endswith((".xml", ".rels")):
                root = ElementTree.fromstring(data)
                if name.endswith(".rels"):
                    base = name.replace("_rels/", "").removesuffix(".rels").rsplit("/", 1)[0]
                    for rel in root.iter(_RELATIONSHIP):
                        target = rel.get("Target", "")
                        folder = "" if name == "_rels/.rels" else base + "/"
                        resolved = _resolve(folder + target)
                        assert resolved in names, (name, target)
            elif name.endswith(".png"):
                with Image.open(io.BytesIO(data)) as image:
                    image.load()
                    assert min(image.size) >= 300


def _resolve(path: str) -> str:
    parts: list[str] = []
    for part in path.split("/"):
        if part == "..":
            parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return "/".join(parts)


@pytest.mark.parametrize("spec", [s for s in SPECS if s.kind != "scanned-pdf"], ids=lambda s: s.name)
def test_the_text_reader_reads_it_and_finds_no_answer_in_a_picture(corpus: Path, spec) -> None:
    document = KreuzbergExtractor(ExtractSettings()).extract(
        Blob(name=spec.name, data=(corpus / spec.name).read_bytes())
    )
    text = _flat(document.text)
    assert len(text.split()) >= 8
    for question in spec.questions:
        if spec.kind in PICTURE_ONLY:
            assert question.answer not in text, (spec.name, question.answer)
        else:  # vector-docx: a shape's label is text of the package, in a text box
            assert question.answer in text, (spec.name, question.answer)
    if spec.kind == "vector-docx":
        body = zipfile.ZipFile(corpus / spec.name).read("word/document.xml").decode()
        boxes = " ".join(re.findall(r"<w:txbxContent>(.*?)</w:txbxContent>", body))
        labels = _flat(" ".join(re.findall(r"<w:t[^>]*>([^<]*)</w:t>", boxes)))
        assert all(question.answer in labels for question in spec.questions)


@pytest.mark.parametrize("spec", [s for s in SPECS if s.name.endswith(".pdf")], ids=lambda s: s.name)
def test_pdfium_opens_every_pdf(corpus: Path, spec) -> None:
    pdf = pypdfium2.PdfDocument((corpus / spec.name).read_bytes())
    try:
        assert len(pdf) >= 1
        for page in pdf:
            images = list(page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE]))
            chars = page.get_textpage().count_chars()
            assert len(images) >= 1
            if spec.kind == "scanned-pdf":  # one picture filling the page, no text layer
                assert chars == 0
                assert len(images) == 1
                assert images[0].get_bounds() == pytest.approx((0, 0, *page.get_size()), abs=1)
            else:
                assert chars > 100
    finally:
        pdf.close()


@pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice (soffice) is not installed")
def test_libreoffice_turns_the_office_files_into_pages(corpus: Path, tmp_path: Path) -> None:
    office = [corpus / spec.name for spec in SPECS if spec.name.endswith((".docx", ".pptx"))]
    profile = (tmp_path / "profile").as_uri()  # its own profile: other soffice runs may be going on
    subprocess.run(
        ["soffice", f"-env:UserInstallation={profile}", "--headless", "--convert-to", "pdf",
         "--outdir", str(tmp_path), *map(str, office)],
        check=True, capture_output=True, timeout=180,
    )  # fmt: skip
    kinds = {spec.name: spec.kind for spec in SPECS}
    for path in office:
        pdf = pypdfium2.PdfDocument(tmp_path / f"{path.stem}.pdf")
        try:
            if path.suffix == ".pptx":
                slides = [
                    n
                    for n in zipfile.ZipFile(path).namelist()
                    if re.fullmatch(r"ppt/slides/slide\d+\.xml", n)
                ]
                assert len(pdf) == len(slides)
            elif kinds[path.name] == "vector-docx":  # the text, then a page holding the drawing alone
                assert len(pdf) == 2
            else:
                assert len(pdf) == 1
            last = pdf[len(pdf) - 1].render(scale=0.5).to_pil().convert("L")
            drawn = last.point(lambda value: 255 if value < 200 else 0).histogram()[255]  # ink
            assert drawn > 0.01 * last.width * last.height, path.name
        finally:
            pdf.close()
