"""CSV and TSV as one Markdown table, with Python's csv module.

Output shape (shared with spreadsheets read by kreuzberg), so the chunker can
keep rows whole and repeat the header::

    ## <sheet name: the file's stem>

    | header 1 | header 2 |
    | --- | --- |
    | row 1 cell | row 1 cell |

The first row is the header; one table row per line (newlines inside a cell
become spaces, ``|`` is escaped); short rows are padded; blank rows dropped.
The delimiter of a ``.csv`` is sniffed among ``, ; TAB |``; ``.tsv`` is TAB.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from pathlib import PurePath

from ragd.errors import ExtractionError
from ragd.extract.documents import make_document
from ragd.extract.mime import FileKind, file_type_for_mime, file_type_for_name
from ragd.extract.text_decoding import decode_text
from ragd.types import Blob, Document

_SNIFF_DELIMITERS = ",;\t|"
_SNIFF_SAMPLE = 64 * 1024


class CsvExtractor:
    """Delimited text files to a Markdown table."""

    name = "csv"

    def extract(self, blob: Blob) -> Document:
        decoded = decode_text(blob.read())
        found = file_type_for_mime(blob.mime_type) or file_type_for_name(blob.name)
        tsv = found is not None and found.kind is FileKind.TSV
        try:
            rows = read_rows(decoded.text, delimiter="\t" if tsv else None)
        except csv.Error as exc:
            raise ExtractionError(
                f"{blob.name!r} is not valid {'TSV' if tsv else 'CSV'}: {exc}",
                hint="check the quoting in the file, or re-export it",
            ) from exc
        text = f"## {PurePath(blob.name).stem}\n\n{markdown_table(rows)}" if rows else ""
        return make_document(
            text,
            extractor=self.name,
            source=blob.name,
            mime_type=found.mime if found else "text/csv",
            meta={"encoding": decoded.encoding if decoded.encoding != "utf-8" else None},
        )


def read_rows(text: str, delimiter: str | None = None) -> list[list[str]]:
    """The non-blank rows of delimited ``text``; the delimiter is sniffed when not given."""
    if delimiter is None:
        delimiter = sniff_delimiter(text[:_SNIFF_SAMPLE])
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    return [row for row in reader if any(cell.strip() for cell in row)]


def sniff_delimiter(sample: str) -> str:
    """The delimiter csv.Sniffer finds among ``, ; TAB |``; a comma when it finds none."""
    try:
        return csv.Sniffer().sniff(sample, delimiters=_SNIFF_DELIMITERS).delimiter
    except csv.Error:
        return ","


def markdown_table(rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured Markdown table: first row as header, one line per row."""
    width = max(len(row) for row in rows)
    lines = [_line(rows[0], width), "| " + " | ".join(["---"] * width) + " |"]
    lines.extend(_line(row, width) for row in rows[1:])
    return "\n".join(lines) + "\n"


def _line(row: Iterable[str], width: int) -> str:
    cells = [_cell(value) for value in row]
    cells.extend([""] * (width - len(cells)))
    return "| " + " | ".join(cells) + " |"


def _cell(value: str) -> str:
    return " ".join(value.split()).replace("|", "\\|")
