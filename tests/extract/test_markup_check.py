"""Text that is mostly markup is refused (EXTRACTION_UNUSABLE); readable text and source code pass."""

from __future__ import annotations

import base64
import json
import random

import pytest

from ragd.errors import ExtractionUnusable
from ragd.extract.markup_check import MAX_MARKUP_SHARE, check_readable, markup_share
from ragd.extract.router import RoutingExtractor
from ragd.types import Blob

PROSE = (
    "The quartermaster logged seventeen crates of saffron at the Ostend warehouse. "
    "Each crate was weighed twice, and the second weighing was entered in the red ledger. "
) * 20

# An RTF table as word processors write it: font and colour tables, a style sheet, one row per \row.
RTF_TABLE = (
    r"{\rtf1\ansi\ansicpg1252\deff0\deflang1033{\fonttbl{\f0\froman\fprq2\fcharset0 Liberation Serif;}"
    r"{\f1\fswiss\fprq2\fcharset0 Liberation Sans;}}{\colortbl;\red0\green0\blue0;\red128\green128\blue128;}"
    r"{\stylesheet{\s0\snext0\widctlpar\hyphpar0\aspalpha\ltrpar\cf0\kerning1\dbch\af5\langfe2052"
    r"\dbch\af6\afs24\alang1081\loch\f0\fs24\lang1033 Normal;}}"
    r"\pard\plain \s0\widctlpar\hyphpar0\aspalpha\ltrpar\cf0\kerning1\dbch\af5\langfe2052\dbch\af6\afs24"
    r"\alang1081\loch\f0\fs24\lang1033{\b Error codes}\par "
    + "".join(
        r"\trowd\trql\trleft0\ltrrow\trpaddft3\trpaddt0\trpaddfl3\trpaddl0\trpaddfb3\trpaddb0\trpaddfr3"
        r"\trpaddr0\clbrdrt\brdrs\brdrw10\brdrcf1\clbrdrl\brdrs\brdrw10\brdrcf1\cellx4819\clbrdrt\brdrs"
        r"\brdrw10\brdrcf1\clbrdrl\brdrs\brdrw10\brdrcf1\clbrdrr\brdrs\brdrw10\brdrcf1\cellx9638"
        rf"\pard\plain \intbl\qr\f0\sa0\li0\fi0 {code}\cell\pard\plain \intbl\ql\f0\sa0 {meaning}\cell\row"
        for code, meaning in [("83", "disk full"), ("84", "bad sector"), ("85", "seek error")] * 4
    )
    + r"\pard\par}"
)
HTML_PAGE = (
    '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Report</title>'
    '<link rel="stylesheet" href="/static/site.css"><script src="/static/app.js"></script></head>'
    '<body><div class="container"><div class="row"><div class="col-md-6"><span class="label">'
    "Revenue</span></div></div></div>"
    + '<div class="row"><div class="col"><a href="/x" class="btn btn-primary">Go</a></div></div>' * 30
    + "</body></html>"
)
PDF_STREAM = (
    "%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n"
    + "3 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>\nendobj\n" * 5
    + "4 0 obj\n<< /Length 44 >>\nstream\n"
    + "BT /F1 12 Tf 72 712 Td (A) Tj ET\n0 0 612 792 re f\n1 0 0 1 72 700 cm\n0.5 0.5 0.5 rg\n" * 20
    + "endstream\nendobj\nxref\n0 5\ntrailer\n<< /Root 1 0 R >>\n"
)
BASE64_MAIL = "Subject: scan\n\nSee attached.\n\n" + "\n".join(
    base64.b64encode(random.Random(7).randbytes(4096)).decode()[i : i + 76] for i in range(0, 5400, 76)
)


@pytest.mark.parametrize(
    ("text", "what"),
    [(RTF_TABLE, "RTF"), (HTML_PAGE, "HTML"), (PDF_STREAM, "PDF operators"), (BASE64_MAIL, "base64")],
)
def test_raw_markup_measures_as_markup_and_is_refused(text: str, what: str) -> None:
    assert markup_share(text) >= 0.7, what
    with pytest.raises(ExtractionUnusable) as caught:
        check_readable(text, "upload.txt")
    assert caught.value.code == "EXTRACTION_UNUSABLE"
    assert caught.value.http_status == 422
    assert "markup" in str(caught.value)
    assert caught.value.hint


def test_prose_with_some_markup_passes() -> None:
    quoted = PROSE + "An example tag: <b>bold</b>, an entity &amp; and a path /Users/me. " + PROSE
    assert markup_share(PROSE) == 0.0
    assert markup_share(quoted) < 0.05
    check_readable(quoted, "notes.txt")


def test_the_threshold_is_at_half_the_text() -> None:
    markup = "<div class='x'></div>" * 10  # every character is markup
    words = "plain words without any markup at all " * 10
    assert markup_share(markup + words) < MAX_MARKUP_SHARE
    assert markup_share(markup * 3 + words) >= MAX_MARKUP_SHARE


def test_short_and_blank_texts_are_not_judged() -> None:
    assert markup_share("   \n ") == 0.0
    check_readable("<b>hi</b>", "tiny.txt")  # too short to call


def test_a_huge_text_is_judged_on_a_bounded_sample() -> None:
    assert markup_share(PROSE * 3000) == 0.0  # ~ 11 MB: sampled windows, not the whole
    assert markup_share(RTF_TABLE * 200) >= 0.7


def test_a_text_file_holding_rtf_is_read_as_rtf_not_indexed_as_markup(extractor: RoutingExtractor) -> None:
    for name, mime in [("codes.txt", "text/plain"), ("codes.doc", None), ("upload", "text/plain")]:
        document = extractor.extract(Blob(name=name, data=RTF_TABLE.encode(), mime_type=mime))
        assert document.extractor == "kreuzberg", name
        assert document.mime_type == "application/rtf"
        assert "\\" not in document.text
        assert "cellx" not in document.text
        assert "| 83 | disk full |" in document.text  # a table row's cells stay together on one line


def test_a_txt_file_holding_an_html_page_is_read_as_html(extractor: RoutingExtractor) -> None:
    page = "<!DOCTYPE html><html><body><h1>Saffron</h1><p>Seventeen crates arrived.</p></body></html>"
    document = extractor.extract(Blob(name="saved.txt", data=page.encode()))
    assert document.mime_type == "text/html"
    assert "Seventeen crates arrived." in document.text
    assert "<p>" not in document.text


def test_a_prose_file_that_is_mostly_markup_fails_with_a_code(extractor: RoutingExtractor) -> None:
    svg = '<svg xmlns="http://www.w3.org/2000/svg">' + '<rect x="1" y="2" width="3" height="4"/>' * 200
    with pytest.raises(ExtractionUnusable):
        extractor.extract(Blob(name="drawing.txt", data=svg.encode()))
    body = PDF_STREAM.split("\n", 1)[1]  # a PDF's objects without the %PDF- header: no PDF, but markup
    with pytest.raises(ExtractionUnusable):
        extractor.extract(Blob(name="readme.rst", data=body.encode()))


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("page.md", HTML_PAGE),  # Markdown may embed HTML
        ("layout.svelte", HTML_PAGE),
        ("component.vue", HTML_PAGE),
        ("main.rs", "fn main() { let x = {}; }\n" * 50),
        ("data.json", json.dumps({"items": [{"id": i, "tags": ["<a>", "{b}"]} for i in range(200)]})),
    ],
)
def test_source_code_and_data_are_indexed_as_they_are(
    extractor: RoutingExtractor, name: str, text: str
) -> None:
    document = extractor.extract(Blob(name=name, data=text.encode()))
    assert document.text.strip() == text.strip()


def test_long_runs_of_letters_are_words_not_base64() -> None:
    assert markup_share("ACGT" * 5000) == 0.0  # a DNA sequence
    assert markup_share("thequickbrownfoxjumpsoverthelazydog" * 500) == 0.0  # text without spaces
    assert markup_share("0123456789abcdef" * 500) >= 0.99  # a hex dump (an RTF picture)
