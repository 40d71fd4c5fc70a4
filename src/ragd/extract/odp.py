"""OpenDocument presentations (ODP), read with the standard library.

kreuzberg 4.10.4 has no ODP reader, so this one reads the package's ``content.xml``
(zip + ElementTree; a part over ``_MAX_PART_BYTES`` uncompressed is refused, so a
zip bomb costs nothing).  Output matches the PPTX path: one page span per slide,
the slide's title as a ``##`` heading, each paragraph on its own line, list items
as ``- `` lines, tables as Markdown rows (a row's cells on one line), and the
slide's speaker notes after its text, labelled as for PPTX.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from xml.etree import ElementTree

from ragd.errors import EncryptedDocument, ExtractionError
from ragd.extract.documents import make_document
from ragd.extract.paged_text import join_pages
from ragd.extract.pptx_notes import with_notes
from ragd.types import Blob, Document

_MAX_PART_BYTES = 64 * 1024 * 1024
_DRAW = "{urn:oasis:names:tc:opendocument:xmlns:drawing:1.0}"
_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
_PRES = "{urn:oasis:names:tc:opendocument:xmlns:presentation:1.0}"
_MIME = "application/vnd.oasis.opendocument.presentation"
#: Placeholders that repeat on every slide or notes page: not the slide's content.
_FURNITURE = frozenset({"page-number", "footer", "header", "date-time", "page"})
_BREAKS = frozenset({f"{_TEXT}s", f"{_TEXT}tab", f"{_TEXT}line-break"})
#: Fields whose text is a placeholder (``<number>``) outside the presentation program.
_FIELDS = frozenset({f"{_TEXT}page-number", f"{_TEXT}page-count", f"{_PRES}date-time", f"{_PRES}footer"})


class OdpExtractor:
    """Implements :class:`ragd.extract.base.Extractor` for ``.odp`` files."""

    name = "odp"

    def extract(self, blob: Blob) -> Document:
        root = _content(blob)
        slides, notes = [], []
        for page in root.iter(f"{_DRAW}page"):
            slides.append("\n\n".join(_blocks(page)))
            found = page.find(f"{_PRES}notes")
            notes.append(" ".join(_notes(found)) if found is not None else "")
        text, spans = join_pages(with_notes(slides, notes))
        return make_document(
            text,
            extractor=self.name,
            source=blob.name,
            mime_type=_MIME,
            pages=spans,
            meta={"page_count": len(slides)},
        )


def _content(blob: Blob) -> ElementTree.Element:
    try:
        with zipfile.ZipFile(io.BytesIO(blob.read())) as package:
            names = set(package.namelist())
            if "META-INF/manifest.xml" in names and b"encryption-data" in _part(
                package, "META-INF/manifest.xml"
            ):
                raise EncryptedDocument(
                    f"{blob.name!r} is password-protected",
                    hint="remove the password (save an unprotected copy) and ingest it again",
                )
            return ElementTree.fromstring(_part(package, "content.xml"))
    except (zipfile.BadZipFile, KeyError, ElementTree.ParseError, ValueError, OSError) as exc:
        raise ExtractionError(
            f"could not read {blob.name!r} as ODP: {str(exc)[:200]}",
            hint="the file may be corrupt or truncated: open it in its application and save it again",
        ) from exc


def _part(package: zipfile.ZipFile, name: str) -> bytes:
    if package.getinfo(name).file_size > _MAX_PART_BYTES:
        raise ValueError(f"{name} unpacks to more than {_MAX_PART_BYTES:,} bytes")
    with package.open(name) as part:
        data = part.read(_MAX_PART_BYTES + 1)
    if len(data) > _MAX_PART_BYTES:
        raise ValueError(f"{name} unpacks to more than {_MAX_PART_BYTES:,} bytes")
    return data


def _blocks(page: ElementTree.Element) -> Iterator[str]:
    """The slide's shapes in order (groups followed, notes skipped): the title, then text and tables."""
    for child in page:
        if child.tag == f"{_DRAW}g":
            yield from _blocks(child)
        elif child.tag == f"{_DRAW}frame":
            yield from _frame(child)
        elif child.tag != f"{_PRES}notes":  # custom shapes, rectangles, connectors with text
            body = "\n".join(_lines(child))
            if body:
                yield body


def _frame(frame: ElementTree.Element) -> Iterator[str]:
    kind = frame.get(f"{_PRES}class", "")
    if kind in _FURNITURE:
        return
    if kind == "title":
        title = " ".join(_lines(frame))
        if title:
            yield f"## {title}"
        return
    for child in frame:
        if child.tag == f"{_TABLE}table":
            yield "\n".join(_table_rows(child))
        elif child.tag == f"{_DRAW}text-box":
            body = "\n".join(_lines(child))
            if body:
                yield body


def _notes(notes: ElementTree.Element) -> Iterator[str]:
    for frame in notes.iter(f"{_DRAW}frame"):
        if frame.get(f"{_PRES}class", "") not in _FURNITURE:
            yield from _lines(frame)


def _lines(element: ElementTree.Element, bullet: bool = False) -> Iterator[str]:
    """One line per paragraph or heading, in document order; list items get a ``- `` bullet."""
    for child in element:
        if child.tag in (f"{_TEXT}p", f"{_TEXT}h"):
            line = _text(child)
            if line:
                yield f"- {line}" if bullet else line
        elif child.tag == f"{_TEXT}list-item":
            yield from _lines(child, bullet=True)
        else:
            yield from _lines(child, bullet)


def _table_rows(table: ElementTree.Element) -> Iterator[str]:
    for index, row in enumerate(table.iter(f"{_TABLE}table-row")):
        cells = [" ".join(_lines(cell)).replace("|", "\\|") for cell in row.iter(f"{_TABLE}table-cell")]
        yield "| " + " | ".join(cells) + " |"
        if index == 0:
            yield "| " + " | ".join(["---"] * len(cells)) + " |"


def _text(paragraph: ElementTree.Element) -> str:
    """A paragraph's text (spaces, tabs and line breaks as spaces, fields left out), white space collapsed."""
    return " ".join("".join(_inline(paragraph)).split())


def _inline(element: ElementTree.Element) -> Iterator[str]:
    yield element.text or ""
    for child in element:
        if child.tag in _BREAKS:
            yield " "
        elif child.tag not in _FIELDS:
            yield from _inline(child)
        yield child.tail or ""
