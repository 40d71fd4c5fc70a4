"""The Python readers: plain text/Markdown/code as-is, CSV/TSV as Markdown tables."""

from __future__ import annotations

import pytest

from ragd.errors import EmptyDocument, ExtractionError
from ragd.extract.tabular import CsvExtractor, markdown_table, read_rows
from ragd.extract.text_extractor import TextExtractor
from ragd.types import Blob

MARKDOWN = "# Title\n\nSome *text* with `code`.\n\n| a | b |\n| --- | --- |\n| 1 | 2 |\n"


def test_markdown_and_code_are_kept_as_they_are() -> None:
    code = "def f(x):\n    return x  # keep indentation\n"
    assert TextExtractor().extract(Blob(name="a.md", data=MARKDOWN.encode())).text == MARKDOWN
    document = TextExtractor().extract(Blob(name="f.py", data=code.encode()))
    assert document.text == code
    assert document.extractor == "text"


def test_line_endings_become_newlines_and_legacy_encoding_is_decoded() -> None:
    document = TextExtractor().extract(Blob(name="a.txt", data="Café\r\nnaïve\rfin".encode("cp1252")))
    assert document.text == "Café\nnaïve\nfin"
    assert document.meta == {"encoding": "cp1252"}


def test_whitespace_only_text_is_empty() -> None:
    with pytest.raises(EmptyDocument):
        TextExtractor().extract(Blob(name="blank.txt", data=b" \n\t\r\n "))


def test_binary_bytes_under_a_text_name_are_refused() -> None:
    with pytest.raises(ExtractionError, match="binary"):
        TextExtractor().extract(Blob(name="x.txt", data=bytes(range(256)) * 8))


def _csv(name: str, text: str, encoding: str = "utf-8") -> str:
    return CsvExtractor().extract(Blob(name=name, data=text.encode(encoding))).text


def test_csv_becomes_one_section_with_header_first_and_one_row_per_line() -> None:
    text = _csv("people.csv", 'name,city,note\nAnn,"Oslo, NO","two\nlines"\nBob,Lima,"a|b"\n')
    assert text == (
        "## people\n\n"
        "| name | city | note |\n"
        "| --- | --- | --- |\n"
        "| Ann | Oslo, NO | two lines |\n"
        "| Bob | Lima | a\\|b |\n"
    )


def test_csv_delimiter_is_sniffed() -> None:
    text = _csv("semi.csv", "a;b;c\n1;2;3\n4;5;6\n")
    assert "| a | b | c |" in text
    assert "| 4 | 5 | 6 |" in text


def test_tsv_is_split_on_tabs_only() -> None:
    text = _csv("t.tsv", "name\tremark\nAnn\tyes, no\n")
    assert "| Ann | yes, no |" in text


def test_ragged_rows_are_padded_and_blank_rows_dropped() -> None:
    rows = read_rows("a,b,c\n\n1\n,,\n2,3\n")
    assert rows == [["a", "b", "c"], ["1"], ["2", "3"]]
    assert markdown_table(rows).splitlines()[2:] == ["| 1 |  |  |", "| 2 | 3 |  |"]


def test_shift_jis_csv_is_decoded() -> None:
    text = _csv("kanji.csv", "名前,年齢\r\n三木英子,25\r\n", encoding="cp932")
    assert "| 三木英子 | 25 |" in text


def test_csv_without_rows_is_empty() -> None:
    with pytest.raises(EmptyDocument):
        _csv("empty.csv", ",,\n\n")


def test_broken_csv_quoting_is_an_extraction_error() -> None:
    huge_field = '"' + "x" * 200_000 + '"\n'
    with pytest.raises(ExtractionError, match="not valid CSV"):
        _csv("big.csv", "a\n" + huge_field)
