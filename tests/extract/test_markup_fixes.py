"""Repairs of kreuzberg's HTML header and JATS character references (pure functions)."""

from __future__ import annotations

import pytest

from ragd.extract.markup_fixes import (
    compact_tables,
    inline_char_refs,
    strip_html_front_matter,
    word_table_rows,
)


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("---\n\n## title: Hi there\n\n# Head\n\nPara one.\n", "# Head\n\nPara one.\n"),
        ("---\nmeta-description: D\ncanonical: https://x/y\n\n## title: T\n\nx\n", "x\n"),
        ("---\n\n## meta-description: D\n\nx\n\n---\n\ny\n", "x\n\n---\n\ny\n"),
        (
            "# Head\n\n---\n\n## title: kept, not a header\n",
            "# Head\n\n---\n\n## title: kept, not a header\n",
        ),
        ("---\n\nplain paragraph\n", "---\n\nplain paragraph\n"),
    ],
)
def test_only_the_leading_metadata_block_is_removed(markdown: str, expected: str) -> None:
    assert strip_html_front_matter(markdown) == expected


def test_character_references_become_characters_except_xml_specials() -> None:
    xml = "<p>Kr&#x000fc;ppel &#8212; a&#x0003c;b &#38; c&#x3e;d &#34; &#x1F600; &#1;</p>"
    assert inline_char_refs(xml) == "<p>Krüppel — a&#x0003c;b &#38; c>d &#34; 😀 &#1;</p>"


def test_out_of_range_references_are_left_for_the_parser() -> None:
    assert inline_char_refs("&#x110000; &#xD800;") == "&#x110000; &#xD800;"


def test_a_word_table_line_becomes_one_markdown_row_per_table_row() -> None:
    line = "Crate\tWeight\tInspector\t\tCrate 11\t42 kg\tMarguerite Delvaux\t\tCrate 12\t39 kg\tJonas Verbeke"
    assert word_table_rows(f"Memo\n{line}\nafter") == (
        "Memo\n| Crate | Weight | Inspector |\n| --- | --- | --- |\n"
        "| Crate 11 | 42 kg | Marguerite Delvaux |\n| Crate 12 | 39 kg | Jonas Verbeke |\nafter"
    )


def test_empty_cells_and_a_trailing_row_mark_keep_the_columns() -> None:
    assert word_table_rows("a\t\tc\t\td\te\tf\t\t") == "| a |  | c |\n| --- | --- | --- |\n| d | e | f |"


def test_lines_that_are_not_tables_stay_as_they_are() -> None:
    for line in ["Name:\t\tJohn", "x\ty", "one\t\ttwo\t\tthree", "no tabs at all", "a|b\t\t"]:
        assert word_table_rows(line) == line


def test_table_padding_is_taken_out_and_the_cells_kept() -> None:
    padded = (
        "Revenue by year | in a sentence\n"
        "| Year | Revenue       | Net income   |\n"
        "| ---- | ------------- | :----------: |\n"
        "| 2008 |  60,420       | 17,681       |\n"
        "| a \\| b | c |      |"
    )
    assert compact_tables(padded).split("\n") == [
        "Revenue by year | in a sentence",
        "| Year | Revenue | Net income |",
        "| --- | --- | :---: |",
        "| 2008 | 60,420 | 17,681 |",
        "| a \\| b | c |  |",
    ]
    assert compact_tables("no tables here") == "no tables here"
    assert compact_tables(compact_tables(padded)) == compact_tables(padded)
