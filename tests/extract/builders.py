"""Tiny, exact writers of the files the extraction tests need (PDF, DOCX, XLSX), stdlib only.

Real office libraries are not installed here, so these write the minimal valid
package/objects by hand.  ``build_pdf`` can also encrypt with the PDF Standard
security handler (RC4, 40-bit, revision 2): the algorithms of the PDF spec §7.6.3.

The committed fixture ``fixtures/scanned_2p.pdf`` (two image-only pages, one
phrase each) was made by :func:`make_scanned_fixture`, which renders a text PDF
with kreuzberg: ``python -m tests.extract.builders``.
"""

from __future__ import annotations

import hashlib
import io
import struct
import zipfile
import zlib
from pathlib import Path
from xml.sax.saxutils import escape

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SCANNED_PHRASES = ("The zebra crossing is on page one.", "Quantum marmalade lives on page two.")
_PAD = bytes.fromhex("28BF4E5E4E758A4164004E56FFFA01082E2E00B6D0683E802F0CA9FE6453697A")
_PERMISSIONS = -44


def rc4(key: bytes, data: bytes) -> bytes:
    state = list(range(256))
    j = 0
    for i in range(256):
        j = (j + state[i] + key[i % len(key)]) % 256
        state[i], state[j] = state[j], state[i]
    out = bytearray()
    i = j = 0
    for byte in data:
        i = (i + 1) % 256
        j = (j + state[i]) % 256
        state[i], state[j] = state[j], state[i]
        out.append(byte ^ state[(state[i] + state[j]) % 256])
    return bytes(out)


def _pdf_string(text: str) -> bytes:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("latin-1")


def _text_stream(text: str) -> bytes:
    shown = b" ".join(b"(" + _pdf_string(line) + b") Tj T*" for line in text.split("\n"))
    return b"BT /F1 12 Tf 72 720 Td 14 TL " + shown + b" ET"


def write_pdf(objects: list[bytes], trailer_extra: str = "", *, version: str = "1.4") -> bytes:
    """A PDF from its numbered objects (1: the catalog), with a cross-reference table."""
    out = bytearray(f"%PDF-{version}\n".encode() + b"%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R{trailer_extra} >>\n".encode()
    out += f"startxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def _stream(data: bytes, extra: str = "") -> bytes:
    return f"<< /Length {len(data)}{extra} >>\nstream\n".encode() + data + b"\nendstream"


def build_pdf(pages: list[str], user_password: str | None = None) -> bytes:
    """A text PDF, one string per page (``\\n`` starts a new line), optionally encrypted."""
    count = len(pages)
    font = 3 + 2 * count
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(count))
    file_id = hashlib.md5(repr(pages).encode()).digest()
    key = _rc4_key(user_password, file_id) if user_password is not None else None
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {count} >>".encode(),
    ]
    for index, text in enumerate(pages):
        content = 4 + 2 * index
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {content} 0 R"
            f" /Resources << /Font << /F1 {font} 0 R >> >> >>".encode()
        )
        data = _text_stream(text)
        if key is not None:
            object_key = hashlib.md5(key + content.to_bytes(3, "little") + b"\x00\x00").digest()[:10]
            data = rc4(object_key, data)
        objects.append(_stream(data))
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    trailer = f" /ID [<{file_id.hex()}> <{file_id.hex()}>]"
    if user_password is not None and key is not None:
        objects.append(_encrypt_dict(user_password, key))
        trailer += f" /Encrypt {len(objects)} 0 R"
    return write_pdf(objects, trailer)


def _rc4_key(user_password: str, file_id: bytes) -> bytes:
    padded = (user_password.encode("latin-1") + _PAD)[:32]
    owner = _owner_entry(padded)
    return hashlib.md5(padded + owner + _PERMISSIONS.to_bytes(4, "little", signed=True) + file_id).digest()[
        :5
    ]


def _owner_entry(padded_user: bytes) -> bytes:
    return rc4(hashlib.md5((b"owner" + _PAD)[:32]).digest()[:5], padded_user)


def _encrypt_dict(user_password: str, key: bytes) -> bytes:
    owner = _owner_entry((user_password.encode("latin-1") + _PAD)[:32])
    user = rc4(key, _PAD)
    return (
        f"<< /Filter /Standard /V 1 /R 2 /Length 40 /P {_PERMISSIONS} /O <{owner.hex()}> /U <{user.hex()}> >>"
    ).encode()


def build_image_pdf(images: list[tuple[int, int, int, bytes]]) -> bytes:
    """An image-only PDF: per page (width, height, colours 1|3, zlib data with PNG row filters)."""
    objects: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>", b""]
    kids = []
    for width, height, colours, data in images:
        page = len(objects) + 1
        kids.append(f"{page} 0 R")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {page + 1} 0 R"
            f" /Resources << /XObject << /Im1 {page + 2} 0 R >> >> >>".encode()
        )
        objects.append(_stream(b"q 612 0 0 792 0 0 cm /Im1 Do Q"))
        space = "/DeviceRGB" if colours == 3 else "/DeviceGray"
        parms = f"<< /Predictor 15 /Colors {colours} /BitsPerComponent 8 /Columns {width} >>"
        image = (
            f" /Type /XObject /Subtype /Image /Width {width} /Height {height} /ColorSpace {space}"
            f" /BitsPerComponent 8 /Filter /FlateDecode /DecodeParms {parms}"
        )
        objects.append(_stream(data, image))
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>".encode()
    return write_pdf(objects)


def blank_image(width: int = 200, height: int = 260, grey: int = 235) -> tuple[int, int, int, bytes]:
    """A featureless grey scan page (no text to find)."""
    rows = b"".join(b"\x00" + bytes([grey]) * width for _ in range(height))
    return width, height, 1, zlib.compress(rows)


def build_png(width: int = 64, height: int = 48, grey: int = 235) -> bytes:
    """A featureless 8-bit greyscale PNG."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = b"".join(b"\x00" + bytes([grey]) * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def png_image(png: bytes) -> tuple[int, int, int, bytes]:
    """A non-interlaced 8-bit grey/RGB PNG as :func:`build_image_pdf` input (IDAT kept as is)."""
    position, idat, header = 8, b"", (0, 0, 8, 0)
    while position < len(png):
        length, kind = struct.unpack(">I4s", png[position : position + 8])
        chunk = png[position + 8 : position + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBB", chunk[:10])
        elif kind == b"IDAT":
            idat += chunk
        position += 12 + length
    width, height, _, colour_type = header
    return width, height, {0: 1, 2: 3}[colour_type], idat


def _zip(parts: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, body in parts.items():
            archive.writestr(name, body)
    return buffer.getvalue()


_CT = "http://schemas.openxmlformats.org/package/2006/content-types"
_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
_OFFICE = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_OOXML = "application/vnd.openxmlformats-officedocument"


def _content_types(overrides: dict[str, str]) -> str:
    items = "".join(f'<Override PartName="{part}" ContentType="{kind}"/>' for part, kind in overrides.items())
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><Types xmlns="{_CT}">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        f'<Default Extension="xml" ContentType="application/xml"/>{items}</Types>'
    )


def _relationships(targets: list[tuple[str, str]]) -> str:
    items = "".join(
        f'<Relationship Id="rId{i}" Type="{_OFFICE}/{kind}" Target="{target}"/>'
        for i, (kind, target) in enumerate(targets, start=1)
    )
    return f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{_RELS}">{items}</Relationships>'


def build_docx(blocks: list[tuple[str, object]]) -> bytes:
    """A DOCX from ("h1".."h3", text), ("p", text) and ("table", rows) blocks."""
    w = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    body = []
    for kind, value in blocks:
        if kind == "table":
            rows = "".join(
                "<w:tr>"
                + "".join(f"<w:tc><w:p><w:r><w:t>{escape(c)}</w:t></w:r></w:p></w:tc>" for c in row)
                + "</w:tr>"
                for row in value  # type: ignore[attr-defined]
            )
            body.append(f"<w:tbl>{rows}</w:tbl>")
            continue
        style = f'<w:pPr><w:pStyle w:val="Heading{kind[1]}"/></w:pPr>' if kind.startswith("h") else ""
        body.append(f'<w:p>{style}<w:r><w:t xml:space="preserve">{escape(str(value))}</w:t></w:r></w:p>')
    styles = "".join(
        f'<w:style w:type="paragraph" w:styleId="Heading{i}"><w:name w:val="heading {i}"/></w:style>'
        for i in range(1, 4)
    )
    return _zip(
        {
            "[Content_Types].xml": _content_types(
                {
                    "/word/document.xml": f"{_OOXML}.wordprocessingml.document.main+xml",
                    "/word/styles.xml": f"{_OOXML}.wordprocessingml.styles+xml",
                }
            ),
            "_rels/.rels": _relationships([("officeDocument", "word/document.xml")]),
            "word/_rels/document.xml.rels": _relationships([("styles", "styles.xml")]),
            "word/document.xml": f'<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="{w}">'
            f"<w:body>{''.join(body)}</w:body></w:document>",
            "word/styles.xml": f'<?xml version="1.0" encoding="UTF-8"?><w:styles xmlns:w="{w}">{styles}</w:styles>',
        }
    )


def build_xlsx(sheets: dict[str, list[list[object]]]) -> bytes:
    """An XLSX with inline strings and numbers, one entry per sheet (empty sheets allowed)."""
    main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    names = list(sheets)
    parts = {
        "[Content_Types].xml": _content_types(
            {"/xl/workbook.xml": f"{_OOXML}.spreadsheetml.sheet.main+xml"}
            | {
                f"/xl/worksheets/sheet{i}.xml": f"{_OOXML}.spreadsheetml.worksheet+xml"
                for i in range(1, len(names) + 1)
            }
        ),
        "_rels/.rels": _relationships([("officeDocument", "xl/workbook.xml")]),
        "xl/_rels/workbook.xml.rels": _relationships(
            [("worksheet", f"worksheets/sheet{i}.xml") for i in range(1, len(names) + 1)]
        ),
        "xl/workbook.xml": f'<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="{main}" xmlns:r="{_OFFICE}">'
        "<sheets>"
        + "".join(f'<sheet name="{escape(n)}" sheetId="{i}" r:id="rId{i}"/>' for i, n in enumerate(names, 1))
        + "</sheets></workbook>",
    }
    for index, name in enumerate(names, start=1):
        rows = "".join(
            f'<row r="{r}">' + "".join(_cell(f"{chr(65 + c)}{r}", v) for c, v in enumerate(row)) + "</row>"
            for r, row in enumerate(sheets[name], start=1)
        )
        parts[f"xl/worksheets/sheet{index}.xml"] = (
            f'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{main}"><sheetData>{rows}</sheetData></worksheet>'
        )
    return _zip(parts)


def _cell(ref: str, value: object) -> str:
    if isinstance(value, (int, float)):
        return f'<c r="{ref}"><v>{value}</v></c>'
    return f'<c r="{ref}" t="inlineStr"><is><t xml:space="preserve">{escape(str(value))}</t></is></c>'


def make_scanned_fixture(dpi: int = 100) -> Path:
    """Write fixtures/scanned_2p.pdf: :data:`SCANNED_PHRASES` rendered to images, one per page."""
    import tempfile

    import kreuzberg

    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "text.pdf"
        source.write_bytes(build_pdf(list(SCANNED_PHRASES)))
        pngs = [kreuzberg.render_pdf_page(source, page, dpi=dpi) for page in range(len(SCANNED_PHRASES))]
    target = FIXTURES / "scanned_2p.pdf"
    target.write_bytes(build_image_pdf([png_image(png) for png in pngs]))
    return target


if __name__ == "__main__":
    print(make_scanned_fixture())


def build_epub(chapters: list[str], title: str = "A built book") -> bytes:
    """A minimal EPUB 3: ``mimetype`` first and stored, the container, the package, one XHTML
    chapter per body (the bodies are XHTML fragments)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(
            zipfile.ZipInfo("mimetype"), "application/epub+zip", compress_type=zipfile.ZIP_STORED
        )
        archive.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0" '
            'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
            '<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
            "</rootfiles></container>",
        )
        items = "".join(
            f'<item id="c{i}" href="chapter{i}.xhtml" media-type="application/xhtml+xml"/>'
            for i in range(len(chapters))
        )
        spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
        archive.writestr(
            "OEBPS/content.opf",
            '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" '
            'unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
            f'<dc:identifier id="id">built</dc:identifier><dc:title>{title}</dc:title>'
            f"<dc:language>en</dc:language></metadata><manifest>{items}</manifest>"
            f"<spine>{spine}</spine></package>",
        )
        for i, body in enumerate(chapters):
            archive.writestr(
                f"OEBPS/chapter{i}.xhtml",
                '<?xml version="1.0" encoding="utf-8"?><!DOCTYPE html>'
                f'<html xmlns="http://www.w3.org/1999/xhtml"><head><title>Chapter {i}</title></head>'
                f"<body>{body}</body></html>",
            )
    return buffer.getvalue()
