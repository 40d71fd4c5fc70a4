"""Hypothesis strategies for Markdown-ish documents, remembering where their tables are.

Documents mix ATX and setext headings, paragraphs of unicode sentences, pipe
tables (header, separator, short ASCII rows), code fences holding lines that
look like headings and rows, ``---`` lines, list items and very long words;
line ends are ``\\n`` or ``\\r\\n``.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

from hypothesis import strategies as st

from ragd.types import Document, PageSpan

FENCED_TITLE = "fenced pseudo heading"
_MARKUP = "#|`~>*+-=_[]!\\"

unicode_words = st.text(
    alphabet=st.characters(categories=("Lu", "Ll", "Lo", "Nd", "Mn", "So", "Po"), exclude_characters=_MARKUP),
    min_size=1,
    max_size=12,
)
ascii_words = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFG0123456789", min_size=1, max_size=8)
words = st.one_of(ascii_words, ascii_words, unicode_words)
spaces = st.sampled_from([" ", " ", " ", " ", "  ", "\t", "\u00a0", "\u3000", "\x0c", "\u2028", "\x85"])
cells = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=6)


@dataclass(frozen=True)
class TableInfo:
    """Where a generated table's header and data rows are (row spans exclude the line end)."""

    header: str
    body_start: int
    end: int
    rows: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class GeneratedDocument:
    document: Document
    tables: tuple[TableInfo, ...]


@st.composite
def sentences(draw: st.DrawFn) -> str:
    parts = draw(st.lists(words, min_size=1, max_size=14))
    text = "".join(word + draw(spaces) for word in parts[:-1]) + parts[-1]
    return text + draw(st.sampled_from([".", "!", "?", "。", "", "…"]))


@st.composite
def paragraph(draw: st.DrawFn) -> list[str]:
    lines = draw(st.lists(st.lists(sentences(), min_size=1, max_size=5), min_size=1, max_size=3))
    return [" ".join(line) for line in lines]


@st.composite
def table(draw: st.DrawFn) -> list[str]:
    columns = draw(st.integers(1, 3))
    header = draw(st.lists(cells, min_size=columns, max_size=columns))
    rows = draw(st.lists(st.lists(cells, min_size=columns, max_size=columns), min_size=0, max_size=25))
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * columns]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


@st.composite
def block(draw: st.DrawFn) -> tuple[str, list[str]]:
    kind = draw(
        st.sampled_from(
            ["heading", "setext", "para", "para", "para", "table", "fence", "rule", "long", "list"]
        )
    )
    title = " ".join(draw(st.lists(words, min_size=0, max_size=4)))
    if kind == "heading":
        return kind, ["#" * draw(st.integers(1, 6)) + (" " + title if title else "")]
    if kind == "setext":
        return kind, [title or "Title", draw(st.sampled_from(["===", "---", "-----"]))]
    if kind == "table":
        return kind, draw(table())
    if kind == "fence":
        return kind, ["```", f"# {FENCED_TITLE}", "| fenced | row |", "```"]
    if kind == "rule":
        return kind, ["---"]
    if kind == "long":
        char = draw(st.sampled_from(["x", "é", "語", "7"]))
        return kind, [char * draw(st.integers(50, 700))]
    if kind == "list":
        return kind, ["- " + s for s in draw(st.lists(sentences(), min_size=1, max_size=4))]
    return kind, draw(paragraph())


@st.composite
def documents(draw: st.DrawFn) -> GeneratedDocument:
    """A document plus its tables' positions; sometimes paged."""
    newline = draw(st.sampled_from(["\n", "\n", "\r\n"]))
    text, tables, previous = draw(st.sampled_from(["", "  \n", "Preamble text. "])), [], ""
    for kind, lines in draw(st.lists(block(), min_size=1, max_size=12)):
        if text:
            # Two tables need a blank line between them, or they are one table.
            least = 2 if kind == previous == "table" else 1
            text += newline * draw(st.sampled_from([least, 2, 2, 3]))
        previous = kind
        if kind == "table":
            tables.append(_table_info(text, lines, newline))
        text += newline.join(lines)
    text += draw(st.sampled_from(["", newline, "  " + newline]))
    return GeneratedDocument(
        Document(text=text, extractor="test", pages=draw(pages(len(text)))), tuple(tables)
    )


def _table_info(prefix: str, lines: list[str], newline: str) -> TableInfo:
    offset, spans = len(prefix), []
    for line in lines:
        spans.append((offset, offset + len(line)))
        offset += len(line) + len(newline)
    rows = tuple(spans[2:])
    return TableInfo(lines[0], rows[0][0] if rows else spans[-1][1], spans[-1][1], rows)


@st.composite
def pages(draw: st.DrawFn, length: int) -> tuple[PageSpan, ...]:
    if length == 0 or draw(st.booleans()):
        return ()
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, length - 1)), max_size=5))))
    edges = [0, *(c for c in cuts if c < length), length]
    return tuple(PageSpan(page, start, end) for page, (start, end) in enumerate(pairwise(edges)))
