"""Hostile files, generated on the spot: what a careless user or an attacker uploads.

Each :class:`Case` names a file, builds its bytes, and says which outcomes are acceptable: indexed
(HTTP 200 with chunks) or refused with one of the listed codes.  ``tests/test_hostile_inputs.py``
asserts the outcomes on the small sizes; ``bench/hostile_inputs.py`` runs the full sizes against a
live ``ragd serve`` and reports seconds and peak memory per case.
"""

from __future__ import annotations

import io
import random
import string
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from tests.extract.builders import build_docx, build_epub, build_pdf, build_xlsx
from tests.support.vision_docs import docx_package, pdf_bytes, pdf_stream

MB = 1024 * 1024
_WORDS = [
    "saffron",
    "crate",
    "ostend",
    "ledger",
    "harbour",
    "weigh",
    "quarter",
    "master",
    "invoice",
    "cargo",
    "vessel",
    "tariff",
]


@dataclass(frozen=True)
class Case:
    name: str
    filename: str
    build: Callable[[float], bytes]  # scale: 1.0 is the benchmark's size, tests use less
    #: acceptable outcomes: "indexed", or an error code the ingestion API reports in ``reason``/``code``
    outcomes: frozenset[str]
    note: str = ""


def _no_whitespace(scale: float) -> bytes:
    rnd = random.Random(1)
    return "".join(rnd.choice(_WORDS) for _ in range(int(750_000 * scale))).encode()


def _one_line(scale: float) -> bytes:
    rnd = random.Random(2)
    return " ".join(rnd.choice(_WORDS) for _ in range(int(700_000 * scale))).encode()


def _cjk(scale: float) -> bytes:
    rnd = random.Random(3)
    return "".join(rnd.choice("東京大阪貨物港湾税関書類倉庫") for _ in range(int(500_000 * scale))).encode()


def _docx_bomb(scale: float) -> bytes:
    return build_docx([("p", "A" * int(95 * MB * scale))])  # ~1000:1: one text run


def _xlsx_bomb(scale: float) -> bytes:
    row = ["cargo " * 400] * 20  # 20 columns (the builder names columns A to T)
    return build_xlsx({"S": [row] * int(3_000 * scale)})


def _declared_bomb(scale: float) -> bytes:
    """A DOCX whose parts unpack to 1 GiB at full scale (refused from the zip directory alone)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr("[Content_Types].xml", "<Types/>")
        with package.open("word/document.xml", "w", force_zip64=True) as part:
            for _ in range(int(1024 * scale) + 1):
                part.write(b" " * MB)  # streamed: never the whole part in memory
    return buffer.getvalue()


def _declared(part: str, first: tuple[str, str]) -> Callable[[float], bytes]:
    """A package of another kind (its first member ``first``) with one part of 1 GiB at full scale."""

    def build(scale: float) -> bytes:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as package:
            package.writestr(zipfile.ZipInfo(first[0]), first[1], compress_type=zipfile.ZIP_STORED)
            with package.open(part, "w", force_zip64=True) as body:
                for _ in range(int(1024 * scale) + 1):
                    body.write(b" " * MB)
        return buffer.getvalue()

    return build


def _deep_epub(scale: float) -> bytes:
    depth = int(20_000 * scale)
    return build_epub([f"{'<div>' * depth}<p>deep saffron ledger</p>{'</div>' * depth}"])


def _deep_html(scale: float) -> bytes:
    depth = int(20_000 * scale)
    return f"<html><body>{'<div>' * depth}<p>deep saffron ledger</p>{'</div>' * depth}</body></html>".encode()


def _junk(scale: float) -> bytes:
    return random.Random(4).randbytes(int(2 * MB * scale))


def _truncated_pdf(scale: float) -> bytes:
    full = build_pdf([f"Page {i} " + "word " * 200 for i in range(max(2, int(50 * scale)))])
    return full[: len(full) // 2]


def _encrypted_pdf(scale: float) -> bytes:
    del scale
    return build_pdf(["secret cargo manifest"], user_password="hunter2")


def _markup(scale: float) -> bytes:
    shapes = "".join(f'<rect x="{i}" y="{i}" width="3" height="4"/>' for i in range(int(20_000 * scale)))
    return f'<svg xmlns="http://www.w3.org/2000/svg">{shapes}</svg>'.encode()


def _long_line_code(scale: float) -> bytes:
    rnd = random.Random(5)
    return (
        "var x = '" + "".join(rnd.choice(string.ascii_letters) for _ in range(int(2 * MB * scale))) + "';"
    ).encode()


def _tiny_images_pdf(scale: float) -> bytes:
    """A page of 10,000 images of 8 x 8 pixels, each drawn 4 pt wide, under a line of text."""
    count = int(10_000 * scale)
    draws = "".join(
        f"q 4 0 0 4 {56 + 5 * (i % 100)} {40 + 5 * (i // 100 % 130)} cm /I Do Q " for i in range(count)
    )
    image = pdf_stream(
        zlib.compress(bytes(range(192))),
        " /Type /XObject /Subtype /Image /Width 8 /Height 8 /ColorSpace /DeviceRGB /BitsPerComponent 8"
        " /Filter /FlateDecode",
    )
    content = f"BT /F1 12 Tf 56 760 Td (A page of tiny saffron ledger images) Tj ET {draws}".encode()
    return _one_page_pdf(612, 792, content, image)


def _huge_page_pdf(scale: float) -> bytes:
    """A page declaring 30,000 x 30,000 pt, covered by an image declaring 30,000 x 30,000 pixels
    (2.7 GB decoded; its stream holds 3 KB: the rest is missing)."""
    del scale
    image = pdf_stream(
        zlib.compress(bytes(3000)),
        " /Type /XObject /Subtype /Image /Width 30000 /Height 30000 /ColorSpace /DeviceRGB"
        " /BitsPerComponent 8 /Filter /FlateDecode",
    )
    content = (
        b"q 30000 0 0 30000 0 0 cm /I Do Q BT /F1 400 Tf 1000 28000 Td (A huge saffron ledger page) Tj ET"
    )
    return _one_page_pdf(30_000, 30_000, content, image)


def _one_page_pdf(width: int, height: int, content: bytes, image: bytes) -> bytes:
    return pdf_bytes(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {width} {height}] /Contents 4 0 R"
            " /Resources << /Font << /F1 5 0 R >> /XObject << /I 6 0 R >> >> >>".encode(),
            pdf_stream(content),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            image,
        ]
    )


_SHAPE = (
    b'<w:r><w:drawing><wp:inline><wp:extent cx="914400" cy="457200"/><wp:docPr id="1" name="s"/>'
    b'<a:graphic><a:graphicData uri="http://schemas.microsoft.com/office/word/2010/wordprocessingShape">'
    b"<wps:wsp><wps:spPr/><wps:txbx><w:txbxContent><w:p><w:r><w:t>box</w:t></w:r></w:p></w:txbxContent>"
    b"</wps:txbx><wps:bodyPr/></wps:wsp></a:graphicData></a:graphic></wp:inline></w:drawing></w:r>"
)


def _million_shapes_docx(scale: float) -> bytes:
    """A .docx of a million text boxes (377 MB of XML at full scale, ~4 MB zipped), written as a
    stream: neither the XML nor its parts are ever whole in memory."""
    title = "<w:p><w:r><w:t>A drawing of a million saffron ledger boxes</w:t></w:r></w:p>"
    shell = docx_package(f"{title}<w:p>SHAPES</w:p>")
    with zipfile.ZipFile(io.BytesIO(shell)) as template:
        head, tail = template.read("word/document.xml").split(b"SHAPES")
        others = {name: template.read(name) for name in template.namelist() if name != "word/document.xml"}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as package:
        for name, body in others.items():
            package.writestr(name, body)
        with package.open("word/document.xml", "w", force_zip64=True) as part:
            part.write(head)
            left = int(1_000_000 * scale)
            while left > 0:
                batch = min(left, 10_000)
                part.write(_SHAPE * batch)
                left -= batch
            part.write(tail)
    return buffer.getvalue()


BOUNDED = frozenset({"indexed", "FILE_TOO_LARGE", "EXTRACTION_CRASHED"})

CASES: tuple[Case, ...] = (
    Case("no whitespace", "run_together.txt", _no_whitespace, frozenset({"indexed"}), "words without spaces"),
    Case("one line", "one_line.txt", _one_line, frozenset({"indexed"}), "prose without a newline"),
    Case("CJK without spaces", "tokyo.txt", _cjk, frozenset({"indexed"})),
    Case("minified code", "bundle.js", _long_line_code, frozenset({"indexed"}), "one 2 MB string literal"),
    Case(
        "DOCX zip bomb", "bomb.docx", _docx_bomb, frozenset({"FILE_TOO_LARGE"}), "95 MiB of text in ~100 KB"
    ),
    Case("declared bomb", "declared.docx", _declared_bomb, frozenset({"FILE_TOO_LARGE"}), "1 GiB unpacked"),
    Case(
        "XLSX bomb", "cells.xlsx", _xlsx_bomb, frozenset({"indexed", "FILE_TOO_LARGE", "EXTRACTION_CRASHED"})
    ),
    Case(
        "PPTX bomb",
        "declared.pptx",
        _declared("ppt/slides/slide1.xml", ("[Content_Types].xml", "<Types/>")),
        frozenset({"FILE_TOO_LARGE"}),
        "1 GiB unpacked",
    ),
    Case(
        "ODT bomb",
        "declared.odt",
        _declared("content.xml", ("mimetype", "application/vnd.oasis.opendocument.text")),
        frozenset({"FILE_TOO_LARGE"}),
        "1 GiB unpacked",
    ),
    Case(
        "EPUB bomb",
        "declared.epub",
        _declared("OEBPS/chapter0.xhtml", ("mimetype", "application/epub+zip")),
        frozenset({"FILE_TOO_LARGE"}),
        "1 GiB unpacked",
    ),
    Case("deep HTML", "deep.html", _deep_html, frozenset({"indexed"}), "20,000 nested divs"),
    Case("deep EPUB", "deep.epub", _deep_epub, frozenset({"indexed"}), "a chapter of 20,000 nested divs"),
    Case("binary junk", "junk.bin", _junk, frozenset({"UNSUPPORTED_TYPE"})),
    Case("junk named .txt", "junk.txt", _junk, frozenset({"EXTRACTION_FAILED"})),
    Case("truncated PDF", "truncated.pdf", _truncated_pdf, frozenset({"EXTRACTION_FAILED"})),
    Case("encrypted PDF", "locked.pdf", _encrypted_pdf, frozenset({"ENCRYPTED_DOCUMENT"})),
    Case("markup as text", "drawing.txt", _markup, frozenset({"EXTRACTION_UNUSABLE"})),
    Case("tiny images PDF", "tiny_images.pdf", _tiny_images_pdf, BOUNDED, "10,000 images of 8 x 8 px"),
    Case("huge page PDF", "huge_page.pdf", _huge_page_pdf, BOUNDED, "30,000 x 30,000 pt, a 2.7 GB image"),
    Case(
        "million shapes DOCX",
        "shapes.docx",
        _million_shapes_docx,
        BOUNDED | {"EXTRACTION_FAILED"},  # kreuzberg refuses a part over 100 MiB unpacked (full scale)
        "a million text boxes",
    ),
)
