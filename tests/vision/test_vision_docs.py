"""The vision tests' documents are real files: LibreOffice opens them and draws what they hold.

The diagram .docx's labels are text boxes LibreOffice lays out on the page (its PDF's text holds
every one, and no label is drawn twice from Word's VML fallback); the slides draw their pictures.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ragd.extract.pdf_pages import open_pdf
from tests.support.vision_docs import diagram_docx, picture_pptx, raster_docx

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice (soffice) is not installed"),
]


def _page_texts(pdf: bytes) -> list[str]:
    with open_pdf(pdf) as document:
        texts = []
        for index in range(len(document)):
            page = document[index]
            textpage = page.get_textpage()
            texts.append(textpage.get_text_range())
            textpage.close()
            page.close()
        return texts


def test_libreoffice_draws_the_diagram_the_figure_and_the_slides(tmp_path: Path) -> None:
    diagram, raster, slides = diagram_docx(), raster_docx(), picture_pptx()
    for name, data in (
        ("diagram.docx", diagram.data),
        ("raster.docx", raster.data),
        ("slides.pptx", slides.data),
    ):
        (tmp_path / name).write_bytes(data)
    subprocess.run(
        [
            "soffice",
            "--headless",
            f"-env:UserInstallation={(tmp_path / 'profile').as_uri()}",
            "--convert-to",
            "pdf",
            "--outdir",
            str(tmp_path / "out"),
            *(str(tmp_path / name) for name in ("diagram.docx", "raster.docx", "slides.pptx")),
        ],
        check=True,
        capture_output=True,
        timeout=180,
    )
    (text,) = _page_texts((tmp_path / "out" / "diagram.pdf").read_bytes())
    words = text.split()
    for label in diagram.labels:
        assert label in " ".join(words)
    assert words.count("parcel") == 3  # Pack, Weigh and Ship parcel: each box drawn once
    (text,) = _page_texts((tmp_path / "out" / "raster.pdf").read_bytes())
    assert raster.paragraphs[0] in text
    assert not any(label in text for label in raster.picture.labels)  # its labels are pixels only
    pages = _page_texts((tmp_path / "out" / "slides.pdf").read_bytes())
    assert len(pages) == 3
    assert slides.title in pages[0]
