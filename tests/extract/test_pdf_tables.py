"""Ruled tables in PDFs become Markdown tables (ragd.extract.pdf_tables), read by PDFium from files
drawn the way word processors draw them; anything else stays the text it was."""

from __future__ import annotations

import pytest

from ragd.extract.pdf_rules import MAX_SEGMENTS
from ragd.extract.pdf_tables import PageTable, cell_text, splice, with_tables
from ragd.extract.router import build_extractor
from ragd.settings import ExtractSettings
from ragd.types import Blob, Document
from tests.conftest import shared_path
from tests.extract.table_files import ASKED, HEADER, LEFT, UP, Page, Table, people_pdf, table_pdf

WIDTHS = [110.0, 110.0, 110.0]
MERGED = [
    ["Region", "Q1 | Q2", "Owner"],
    ["North", "Merged across", LEFT],
    ["South", "Tall cell", "Ada"],
    ["East", UP, "Grace\nHopper"],
    ["West", "", "Linus"],
]


def extract(data: bytes, name: str = "tables.pdf") -> Document:
    return build_extractor(ExtractSettings(isolate=False)).extract(Blob(name=name, data=data))


def table_lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.startswith("|")]


def test_a_ruled_table_becomes_a_markdown_table_with_merged_cells_kept_empty() -> None:
    page = Page(
        lines=[(72, 740, "Quarterly owners"), (72, 726, "The table below names each owner.")],
        tables=[Table(72, 700, WIDTHS, MERGED, row_height=22)],
        after=[(72, 560, "Figures are unaudited.")],
    )
    document = extract(table_pdf([page]))
    assert table_lines(document.text) == [
        "| Region | Q1 \\| Q2 | Owner |",
        "| --- | --- | --- |",
        "| North | Merged across |  |",
        "| South | Tall cell | Ada |",
        "| East |  | Grace Hopper |",
        "| West |  | Linus |",
    ]
    before, _, after = document.text.partition("| Region")
    assert before == "Quarterly owners\nThe table below names each owner.\n\n"
    assert after.endswith("| West |  | Linus |\n\nFigures are unaudited.")
    assert document.pages[0].end == len(document.text)


def test_a_table_over_a_page_break_gets_its_header_again_on_the_next_page() -> None:
    document = extract(people_pdf())
    first, second = (document.text[span.start : span.end] for span in document.pages)
    header = "| " + " | ".join(HEADER) + " |"
    assert table_lines(first)[0] == header
    assert table_lines(second)[:3] == [
        header,
        "| --- | --- | --- | --- | --- |",
        "| Person 40 | Procurement | Ghent | B-1040 | 2000 |",
    ]
    assert "| " + " | ".join(ASKED) + " |" in first
    assert second.endswith("|\n\n2"), "the page number under the table stays text"


def test_a_header_the_file_draws_again_is_not_doubled() -> None:
    rows = [["Name", "City"], *([f"n{i}", f"c{i}"] for i in range(3))]
    pages = [
        Page(tables=[Table(72, 200, [100, 100], rows)]),
        Page(tables=[Table(72, 740, [100, 100], [rows[0], ["n9", "c9"]])]),
    ]
    second = extract(table_pdf(pages)).text.split("\n\n")[-1]
    assert table_lines(second) == ["| Name | City |", "| --- | --- |", "| n9 | c9 |"]


def test_a_table_high_on_the_next_page_is_its_own_when_the_last_one_ended_high() -> None:
    rows = [["Name", "City"], ["n1", "c1"]]
    pages = [
        Page(tables=[Table(72, 740, [100, 100], rows)]),
        Page(tables=[Table(72, 740, [100, 100], [["Tool", "Use"], ["saw", "cut"]])]),
    ]
    text = extract(table_pdf(pages)).text
    assert table_lines(text)[3:5] == ["| Tool | Use |", "| --- | --- |"]


def test_columns_without_rules_stay_lines_of_text() -> None:
    rows = [["Item", "Qty"], ["Bolts", "12"], ["Nuts", "40"]]
    page = Page(tables=[Table(72, 700, [150, 150], rows, ruled_columns=False)])
    text = extract(table_pdf([page])).text
    assert table_lines(text) == []
    assert "Bolts 12" in text


def test_a_table_whose_text_is_interleaved_with_other_text_stays_text() -> None:
    rows = [["Name", "City"], ["Ann", "Oslo"], ["Bob", "Rome"]]
    page = Page(tables=[Table(72, 700, [100, 100], rows, aside=(400, 690, "Margin note"))])
    text = extract(table_pdf([page])).text
    assert table_lines(text) == []
    assert "Margin note" in text
    assert "Ann Oslo" in text


def test_a_page_drawing_too_many_segments_is_not_looked_at() -> None:
    rows = [["Name", "City"], ["Ann", "Oslo"]]
    page = Page(tables=[Table(72, 700, [100, 100], rows)])
    data = table_pdf([page])
    noise = b"\n" + b"0 0 m 1 1 l S\n" * (MAX_SEGMENTS // 2 + 1)
    crowded = data.replace(b"0.5 w", b"0.5 w" + noise, 1)
    assert crowded != data
    texts = ["Name City\nAnn Oslo"]
    assert table_lines(with_tables(data, texts)[0]) != []
    # the /Length of the content stream is stale after the edit: PDFium reads to endstream anyway
    assert with_tables(crowded, texts) == texts


def test_with_tables_leaves_texts_it_cannot_read_alone() -> None:
    assert with_tables(b"%PDF-1.4 not really", ["a page"]) == ["a page"]


def test_cell_text_joins_wrapped_lines() -> None:
    assert cell_text("Grace\r\nHopper ") == "Grace Hopper"
    assert cell_text("1b92870d-e3b5-\r\n4e65-8153") == "1b92870d-e3b5-4e65-8153"
    assert cell_text("  \r\n ") == ""


def test_splice_finds_the_run_whatever_the_spacing_and_keeps_the_rest() -> None:
    table = PageTable((("a", "b"), ("1", "2")), "a b\r\n1 2")
    assert (
        splice("Intro line\na   b\n1 2\nOutro", [table])
        == "Intro line\n\n| a | b |\n| --- | --- |\n| 1 | 2 |\n\nOutro"
    )
    assert splice("nothing like it", [table]) == "nothing like it"


@pytest.mark.shared
def test_the_redbook_tables_become_markdown_and_its_figures_do_not() -> None:
    document = extract(shared_path("documents", "docling_redp5110_sampled.pdf").read_bytes())
    lines = table_lines(document.text)
    assert "| Global variable | Type | Description |" in lines
    assert (
        "| CLIENT_HOST | VARCHAR(255) | Host name of the current client as returned by the system |" in lines
    )
    assert "| SET CURRENT DEGREE (SQL statement) | X |  | X |  |  |" in lines
    assert "Indicates that a row permission is created" not in "\n".join(lines), "a figure's boxes"
