"""File-type detection: extension, declared MIME type, magic bytes."""

from __future__ import annotations

import pytest

from ragd.errors import EncryptedDocument, UnsupportedType
from ragd.extract.mime import FileKind, detect, file_type_for_mime, supported_kinds
from tests.extract.builders import build_docx, build_pdf, build_xlsx

OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


@pytest.mark.parametrize(
    ("name", "data", "kind"),
    [
        ("notes.md", b"# Title\n", FileKind.TEXT),
        ("main.py", b"print('x')\n", FileKind.TEXT),
        ("Makefile", b"all:\n\techo hi\n", FileKind.TEXT),
        ("table.csv", b"a,b\n1,2\n", FileKind.CSV),
        ("table.tsv", b"a\tb\n", FileKind.TSV),
        ("page.html", b"<p>x</p>", FileKind.HTML),
        ("paper.nxml", b"<article/>", FileKind.JATS),
        ("mail.eml", b"Subject: x\n\nbody", FileKind.EML),
        ("nb.ipynb", b"{}", FileKind.IPYNB),
        ("scan.PNG", PNG, FileKind.IMAGE),
        ("report.pdf", build_pdf(["x"]), FileKind.PDF),
        ("report.docx", build_docx([("p", "x")]), FileKind.DOCX),
        ("sheet.xlsx", build_xlsx({"S": [["a"]]}), FileKind.XLSX),
    ],
)
def test_known_extensions(name: str, data: bytes, kind: FileKind) -> None:
    assert detect(name, None, data).kind is kind


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (build_pdf(["x"]), FileKind.PDF),
        (PNG, FileKind.IMAGE),
        (b"\xff\xd8\xff\xe0" + b"\x00" * 16, FileKind.IMAGE),
        (build_docx([("p", "x")]), FileKind.DOCX),
        (build_xlsx({"S": [["a"]]}), FileKind.XLSX),
        (b"<!DOCTYPE html><html><body>x</body></html>", FileKind.HTML),
        (b"just some words\nin lines\n", FileKind.TEXT),
    ],
)
def test_files_without_a_useful_name_are_sniffed(data: bytes, kind: FileKind) -> None:
    assert detect("upload", None, data).kind is kind


def test_bytes_that_prove_another_binary_format_beat_the_extension() -> None:
    assert detect("really-a-docx.pdf", None, build_docx([("p", "x")])).kind is FileKind.DOCX


def test_a_corrupt_file_keeps_the_type_its_name_says() -> None:
    assert detect("broken.pdf", None, b"\x00garbage\x01\x02").kind is FileKind.PDF


def test_declared_mime_type_decides_for_nameless_text() -> None:
    assert detect("upload", "text/csv; charset=utf-8", b"a,b\n1,2\n").kind is FileKind.CSV
    assert file_type_for_mime("text/x-python") is not None


def test_xml_that_is_jats_is_read_as_jats() -> None:
    jats = b'<?xml version="1.0"?>\n<!DOCTYPE article PUBLIC "-//NLM//DTD JATS (Z39.96) v1.2//EN" "x.dtd">\n<article/>'
    assert detect("paper.xml", None, jats).kind is FileKind.JATS
    assert detect("data.xml", None, b"<catalog><book/></catalog>").kind is FileKind.XML


def test_unknown_binary_is_unsupported_with_the_list_of_kinds() -> None:
    with pytest.raises(UnsupportedType) as caught:
        detect("blob.bin", "application/octet-stream", bytes(range(256)) * 4)
    assert "PDF" in str(caught.value)
    assert supported_kinds() in str(caught.value)


def test_password_protected_office_file_is_encrypted_not_corrupt() -> None:
    data = OLE + b"\x00" * 64 + "EncryptedPackage".encode("utf-16-le") + b"\x00" * 64
    with pytest.raises(EncryptedDocument):
        detect("secret.docx", None, data)


def test_legacy_excel_without_a_name_is_recognised() -> None:
    data = OLE + b"\x00" * 64 + "Workbook".encode("utf-16-le") + b"\x00" * 64
    assert detect("upload", None, data).kind is FileKind.XLS


def test_other_ole_files_are_unsupported() -> None:
    with pytest.raises(UnsupportedType):
        detect("old.doc", None, OLE + b"\x00" * 128)


def _ole(*streams: str) -> bytes:
    """An OLE2 header and directory entries naming ``streams`` (what detection reads)."""
    return OLE + b"\x00" * 64 + b"".join(s.encode("utf-16-le") + b"\x00" * 32 for s in streams)


def _odf(mimetype: str) -> bytes:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("mimetype", mimetype)
        archive.writestr("content.xml", "<office:document-content/>")
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("name", "data", "kind"),
    [
        ("memo.doc", _ole("Root Entry", "WordDocument", "1Table"), FileKind.DOC),
        ("upload", _ole("Root Entry", "WordDocument"), FileKind.DOC),
        ("deck.ppt", _ole("Root Entry", "PowerPoint Document"), FileKind.PPT),
        ("upload", _ole("Root Entry", "PowerPoint Document"), FileKind.PPT),
        ("mail.msg", _ole("Root Entry", "__substg1.0_0037001F"), FileKind.MSG),
        # an Outlook message with a Word file attached: still the message
        ("upload", _ole("Root Entry", "__substg1.0_0037001F", "WordDocument"), FileKind.MSG),
        # a Word file named .xls that embeds a workbook: the name's kind wins when its stream is there
        ("odd.xls", _ole("Root Entry", "WordDocument", "Workbook"), FileKind.XLS),
        ("budget.ods", _odf("application/vnd.oasis.opendocument.spreadsheet"), FileKind.ODS),
        ("upload", _odf("application/vnd.oasis.opendocument.spreadsheet"), FileKind.ODS),
        ("upload", _odf("application/vnd.oasis.opendocument.presentation"), FileKind.ODP),
        ("deck.odp", _odf("application/vnd.oasis.opendocument.presentation"), FileKind.ODP),
        ("letter.rtf", b"{\\rtf1\\ansi hello}", FileKind.RTF),
    ],
)
def test_legacy_office_opendocument_and_rtf(name: str, data: bytes, kind: FileKind) -> None:
    assert detect(name, None, data).kind is kind


@pytest.mark.parametrize("name", ["codes.txt", "codes.md", "codes.doc", "codes.docx", "codes", "codes.html"])
def test_rtf_is_rtf_whatever_the_file_is_called(name: str) -> None:
    found = detect(name, "text/plain", b"{\\rtf1\\ansi\\deff0 {\\fonttbl}\\pard hello\\par}")
    assert (found.kind, found.mime) == (FileKind.RTF, "application/rtf")


def test_declared_rtf_mime_types() -> None:
    assert file_type_for_mime("text/rtf") is not None
    assert detect("upload", "application/rtf", b"{\\rtf1 x}").kind is FileKind.RTF


def test_html_content_wins_only_over_prose_names() -> None:
    page = b"<!DOCTYPE html><html><body><p>x</p></body></html>"
    assert detect("saved.txt", None, page).kind is FileKind.HTML
    assert detect("saved", None, page).kind is FileKind.HTML
    assert detect("snippet.md", None, page).kind is FileKind.TEXT  # Markdown may hold HTML
    assert detect("page.vue", None, page).kind is FileKind.TEXT  # source code stays source


def test_markup_is_expected_only_where_text_is_source() -> None:
    from ragd.extract.mime import markup_expected

    assert markup_expected("main.py", FileKind.TEXT)
    assert markup_expected("notes.md", FileKind.TEXT)
    assert markup_expected("data.json", FileKind.TEXT)
    assert markup_expected("Makefile", FileKind.TEXT)
    assert markup_expected("table.csv", FileKind.CSV)
    assert not markup_expected("notes.txt", FileKind.TEXT)
    assert not markup_expected("guide.rst", FileKind.TEXT)
    assert not markup_expected("plan.org", FileKind.TEXT)
    assert not markup_expected("README", FileKind.TEXT)
    assert not markup_expected("page.html", FileKind.HTML)
    assert not markup_expected("codes.rtf", FileKind.RTF)
