"""Markdown layout parsing: headings, fences, tables, sections."""

from __future__ import annotations

from ragd.chunk.structure import parse_layout


def titles(text: str) -> list[tuple[int, str]]:
    return [(h.level, h.title) for h in parse_layout(text).headings]


def test_atx_headings_with_levels_and_closing_hashes() -> None:
    text = "# One\n## Two ##\n###### Six\n####### seven\n#hashtag\n    # indented code\n   ### Three\n#\n"
    assert titles(text) == [(1, "One"), (2, "Two"), (6, "Six"), (3, "Three"), (1, "")]


def test_setext_headings_need_a_one_line_paragraph() -> None:
    text = "Title\n===\n\nSub\n---\n\nline one\nline two\n---\n\n---\n- item\n---\n"
    assert titles(text) == [(1, "Title"), (2, "Sub")]


def test_fences_hide_headings_and_tables() -> None:
    text = (
        "```\n# no\n| a | b |\n|---|---|\n```\n"
        "~~~~\n# no\n```\n# still no\n~~~~\n"
        "# yes\n````\n# no (unclosed)\n"
    )
    layout = parse_layout(text)
    assert [h.title for h in layout.headings] == ["yes"]
    assert layout.tables == ()


def test_inline_triple_backticks_do_not_open_a_fence() -> None:
    assert titles("```code``` in a line\n# Still a heading\n") == [(1, "Still a heading")]


def test_table_with_header_separator_and_rows() -> None:
    text = "intro\n| h1 | h2 |\n|:--|--:|\n| a | b |\r\n| c | d |\nafter\n"
    (table,) = parse_layout(text).tables
    assert table.header == "| h1 | h2 |"
    assert text[table.start :].startswith("| h1 |")
    assert text[table.body_start :].startswith("| a | b |")
    assert [text[r : r + 5] for r in table.row_starts] == ["| a |", "| c |"]
    assert text[table.end :] == "after\n"
    layout = parse_layout(text)
    assert layout.header_row_at(table.row_starts[1] + 2) == "| h1 | h2 |"
    assert layout.header_row_at(table.start + 2) is None
    assert layout.header_row_at(table.end) is None


def test_table_without_separator_has_no_header() -> None:
    text = "| a | b |\n| c | d |\n"
    (table,) = parse_layout(text).tables
    assert table.header is None
    assert table.row_starts == (0, 10)


def test_sections_follow_heading_levels() -> None:
    text = "pre\n# A\na\n### C\nc\n## B\nb\n# D\n"
    sections = parse_layout(text).sections(len(text))
    assert [(text[s.start : s.end], s.path, s.parents) for s in sections] == [
        ("pre\n", (), ()),
        ("# A\na\n", ("A",), ()),
        ("### C\nc\n", ("A", "C"), ("A",)),
        ("## B\nb\n", ("A", "B"), ("A",)),
        ("# D\n", ("D",), ()),
    ]


def test_tables_within_a_span() -> None:
    text = "| a |\n|---|\n| 1 |\n\ntext\n\n| b |\n|---|\n| 2 |\n"
    layout = parse_layout(text)
    first, second = layout.tables
    assert layout.tables_within(0, len(text)) == [first, second]
    assert layout.tables_within(first.end, len(text)) == [second]
    assert layout.tables_within(1, len(text)) == [second]
